//! The zones' migratetypes during the run, as `lab real` sampled them
//! (`pagetypeinfo.samples`: pagetypeinfo every second) and as the simulation had them at the
//! same moments of the trace. What `defrag_mode` costs turns on one quantity buddyinfo
//! cannot show: free memory a movable request could only steal (free pages of Unmovable and
//! Reclaimable pageblocks, below the pageblock order), which `ALLOC_NOFRAGMENT` leaves
//! alone until it comes back together as whole pageblocks or is allocated by its own type.

use pageblock_formats::pagetypeinfo::{PageTypeInfo, PageTypeInfoNode};
use pageblock_formats::samples::PageTypeInfoSamples;
use serde::Serialize;

use super::zone_samples::Percentiles;
#[cfg(doc)]
use super::zone_samples::SimSamples;

/// One side's view of a zone's migratetypes over the samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TypeView {
    /// Free pages a movable request could only steal.
    pub steal_only_pages: Percentiles,
    /// Unmovable and Reclaimable pageblocks.
    pub foreign_pageblocks: Percentiles,
    /// Steal-only pages at each sample, in time order.
    pub steal_only_series: Vec<u64>,
}

impl TypeView {
    /// Steal-only pages at the first and the last sample, `first -> last` (`-` with none).
    pub fn first_to_last(&self) -> String {
        match (self.steal_only_series.first(), self.steal_only_series.last()) {
            (Some(a), Some(b)) => format!("{a} -> {b}"),
            _ => "-".to_owned(),
        }
    }

    fn of(zone: &str, copies: &[&PageTypeInfoNode]) -> TypeView {
        let steal: Vec<u64> = copies.iter().map(|n| n.zone_steal_only_pages(0, zone)).collect();
        let foreign = |n: &PageTypeInfoNode| {
            (n.zone_blocks(0, zone, "Unmovable") + n.zone_blocks(0, zone, "Reclaimable")) as f64
        };
        TypeView {
            steal_only_pages: Percentiles::of(steal.iter().map(|&p| p as f64).collect()),
            foreign_pageblocks: Percentiles::of(copies.iter().map(|n| foreign(n)).collect()),
            steal_only_series: steal,
        }
    }
}

/// A zone's migratetypes in both: the kernel's samples and the simulation's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeComparison {
    /// The zone's name.
    pub zone: String,
    /// The sampled kernel.
    pub real: TypeView,
    /// The simulation at the same moments.
    pub simulated: TypeView,
}

/// The comparison over the pagetypeinfo samples taken in the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TypeSamples {
    /// Samples inside the trace (both sides have each of them).
    pub samples: usize,
    /// Seconds from the first of them to each, in time order.
    pub times_s: Vec<f64>,
    /// Per zone in both, in the simulation's zone order.
    pub zones: Vec<TypeComparison>,
}

/// Node 0 of a copy (the only node simulated).
fn node0(p: &PageTypeInfo) -> Option<&PageTypeInfoNode> {
    p.nodes.iter().find(|n| n.free.first().is_some_and(|r| r.node == 0))
}

/// Sets the simulation's pagetypeinfo (`sim`: `(index of the real sample, copy)`, as
/// [`SimSamples::types`] has it) beside `real`'s at the samples both have.
pub fn compare(real: &PageTypeInfoSamples, sim: &[(usize, PageTypeInfo)]) -> TypeSamples {
    let pairs: Vec<(f64, &PageTypeInfoNode, &PageTypeInfoNode)> = sim
        .iter()
        .filter_map(|(i, s)| {
            let r = real.samples.get(*i)?;
            Some((r.time_s, node0(&r.file)?, node0(s)?))
        })
        .collect();
    let Some(&(t0, _, first)) = pairs.first() else {
        return TypeSamples::default();
    };
    let zones = first
        .blocks
        .rows
        .iter()
        .filter(|row| pairs.iter().all(|(_, r, _)| r.blocks.rows.iter().any(|z| z.zone == row.zone)))
        .map(|row| {
            let (reals, sims): (Vec<_>, Vec<_>) = pairs.iter().map(|&(_, r, s)| (r, s)).unzip();
            TypeComparison {
                zone: row.zone.clone(),
                real: TypeView::of(&row.zone, &reals),
                simulated: TypeView::of(&row.zone, &sims),
            }
        })
        .collect();
    TypeSamples { samples: pairs.len(), times_s: pairs.iter().map(|(t, _, _)| t - t0).collect(), zones }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_formats::pagetypeinfo::ZoneCounts;
    use pageblock_formats::samples::Sample;

    /// A node with one zone, `unmovable` free blocks of order 3 on the Unmovable list and
    /// two free pageblocks on the Movable one; `foreign` Unmovable pageblocks of 8.
    fn copy(zone: &str, unmovable: u64, foreign: u64) -> PageTypeInfo {
        let z = ZoneCounts {
            node: 0,
            zone: zone.into(),
            free: vec![vec![0, 0, 0, unmovable, 0, 0, 0, 0, 0, 0], vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 2]],
            blocks: vec![foreign, 8 - foreign],
        };
        let node = PageTypeInfoNode::from_counts(9, 10, &["Unmovable", "Movable"], &[z], true);
        PageTypeInfo { nodes: vec![node] }
    }

    #[test]
    fn steal_only_memory_is_set_beside_the_kernels_at_the_same_samples() {
        let real = PageTypeInfoSamples {
            samples: [(10.0, 100, 3), (11.0, 50, 2), (12.0, 10, 1)]
                .into_iter()
                .map(|(time_s, n, f)| Sample { time_s, file: copy("DMA32", n, f) })
                .collect(),
        };
        // The simulation took samples 1 and 2 (the trace began after sample 0).
        let sim = vec![(1, copy("DMA32", 80, 4)), (2, copy("DMA32", 70, 4))];
        let c = compare(&real, &sim);
        assert_eq!((c.samples, c.times_s.clone()), (2, vec![0.0, 1.0]));
        let z = &c.zones[0];
        assert_eq!(z.zone, "DMA32");
        assert_eq!(z.real.steal_only_series, vec![50 * 8, 10 * 8], "order-3 blocks are 8 pages");
        assert_eq!(z.simulated.steal_only_series, vec![80 * 8, 70 * 8]);
        assert_eq!((z.real.foreign_pageblocks.p90, z.simulated.foreign_pageblocks.p50), (2.0, 4.0));
        // A zone the kernel's copies lack is not compared; nothing in common is nothing.
        assert!(compare(&real, &[(1, copy("Normal", 1, 1))]).zones.is_empty());
        assert_eq!(compare(&real, &[(7, copy("DMA32", 1, 1))]), TypeSamples::default());
    }
}
