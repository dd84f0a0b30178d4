//! The zones during the run, as `lab real` sampled them (`buddyinfo.samples`: buddyinfo
//! every 100 ms) and as the simulation had them at the same moments of the trace. The
//! before and after snapshots show only the ends of a run, where the pressure is gone; these
//! show the zone an allocation met under pressure: its free pages, its free pageblocks (what
//! a huge page needs) and its small free blocks.

use pageblock_core::show::{pagetypeinfo_counts, PagetypeinfoMode};
use pageblock_core::NodeShared;
use pageblock_formats::buddyinfo::free_blocks_of;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::samples::{BuddyInfoSamples, PageTypeInfoSamples, SampledFile, Samples};
use serde::Serialize;

/// The simulation's zones at one sample: (zone name, `nr_free` per order) each.
type Zones = Vec<(&'static str, Vec<u64>)>;

/// What the simulation had at each of the trace's sample times, taken as the replay passes
/// them.
#[derive(Clone, Debug, Default)]
pub struct Timeline<T> {
    /// Sample times, µs of trace time, ascending.
    times_us: Vec<u64>,
    /// The next sample to take (`None` before the trace's first record).
    next: Option<usize>,
    /// `(index of the sample, what the simulation had)`, in time order.
    taken: Vec<(usize, T)>,
}

impl<T> Timeline<T> {
    fn new<F: SampledFile>(real: Option<&Samples<F>>) -> Timeline<T> {
        let times_us = real
            .map_or_else(Vec::new, |r| r.samples.iter().map(|s| (s.time_s * 1e6).round() as u64).collect());
        Timeline { times_us, next: None, taken: Vec::new() }
    }

    /// The trace reached `now_us`: take every sample due by then (those `take` has).
    /// Samples from before the trace's first record are left out (the run had not begun).
    #[inline]
    fn catch_up(&mut self, now_us: u64, take: impl Fn() -> Option<T>) {
        let next = self.next.get_or_insert_with(|| self.times_us.partition_point(|&t| t < now_us));
        while let Some(&t) = self.times_us.get(*next) {
            if t > now_us {
                return;
            }
            if let Some(v) = take() {
                self.taken.push((*next, v));
            }
            *next += 1;
        }
    }
}

/// The simulation's zones at the times `lab real` sampled the kernel's: free blocks per
/// order (beside `buddyinfo.samples`) and its pagetypeinfo (beside `pagetypeinfo.samples`).
#[derive(Clone, Debug, Default)]
pub struct SimSamples {
    buddy: Timeline<Zones>,
    types: Timeline<PageTypeInfo>,
}

impl SimSamples {
    /// The simulation's pagetypeinfo at the samples taken: `(index of the real sample, copy)`.
    pub fn types(&self) -> &[(usize, PageTypeInfo)] {
        &self.types.taken
    }

    /// Samples to take at the times of the real ones (none without them).
    pub fn new(buddy: Option<&BuddyInfoSamples>, types: Option<&PageTypeInfoSamples>) -> SimSamples {
        SimSamples { buddy: Timeline::new(buddy), types: Timeline::new(types) }
    }

    /// The trace reached `now_us`: take every sample due by then.
    #[inline]
    pub fn catch_up(&mut self, now_us: u64, node: &NodeShared) {
        self.buddy.catch_up(now_us, || {
            Some(
                node.zones()
                    .iter()
                    .map(|z| {
                        let c = z.config();
                        (c.zone_type.name(), z.free_areas().nr_free_per_order(c.max_order))
                    })
                    .collect(),
            )
        });
        // From the per-migratetype counts; a free-area layout without them has none.
        self.types.catch_up(now_us, || pagetypeinfo_counts(node, PagetypeinfoMode::CountsCapped));
    }
}

/// Percentiles of a quantity over the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Mean.
    pub mean: f64,
}

impl Percentiles {
    pub(super) fn of(mut v: Vec<f64>) -> Percentiles {
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Percentiles { p10: at(0.1), p50: at(0.5), p90: at(0.9), mean: v.iter().sum::<f64>() / v.len() as f64 }
    }
}

/// One side's view of a zone over the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ZoneView {
    /// Free pages.
    pub free_pages: Percentiles,
    /// Free memory in blocks of the pageblock order or more, in pageblocks.
    pub free_pageblocks: Percentiles,
    /// Share of samples with no free block of the pageblock order or more.
    pub no_free_pageblock: f64,
    /// Free blocks of orders 0 to 3.
    pub small_blocks: Percentiles,
}

impl ZoneView {
    fn of(rows: &[&[u64]], pageblock_order: u32) -> ZoneView {
        let blocks = |r: &[u64]| free_blocks_of(r, pageblock_order);
        let small = |r: &[u64]| r.iter().take(4).fold(0u64, |a, &n| a.saturating_add(n));
        let none = rows.iter().filter(|r| blocks(r) == 0).count();
        ZoneView {
            free_pages: Percentiles::of(rows.iter().map(|r| free_blocks_of(r, 0) as f64).collect()),
            free_pageblocks: Percentiles::of(rows.iter().map(|r| blocks(r) as f64).collect()),
            no_free_pageblock: none as f64 / rows.len().max(1) as f64,
            small_blocks: Percentiles::of(rows.iter().map(|r| small(r) as f64).collect()),
        }
    }
}

/// A zone in both: the kernel's samples and the simulation's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ZoneComparison {
    /// The zone's name.
    pub zone: String,
    /// The sampled kernel.
    pub real: ZoneView,
    /// The simulation at the same moments.
    pub simulated: ZoneView,
}

/// The comparison over the samples taken in the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ZoneSamples {
    /// Samples inside the trace (both sides have each of them).
    pub samples: usize,
    /// Per zone in both, in the simulation's zone order.
    pub zones: Vec<ZoneComparison>,
}

/// Sets `sim`'s samples beside `real`'s (node 0's zones; others are not simulated).
pub fn compare(real: &BuddyInfoSamples, sim: &SimSamples, pageblock_order: u32) -> ZoneSamples {
    let sim = &sim.buddy;
    let mut names: Vec<&'static str> = Vec::new();
    if let Some((_, zones)) = sim.taken.first() {
        names = zones.iter().map(|(n, _)| *n).collect();
    }
    let zones = names
        .into_iter()
        .filter_map(|name| {
            let mut real_rows = Vec::new();
            let mut sim_rows = Vec::new();
            for (i, zones) in &sim.taken {
                let r = real.samples.get(*i).and_then(|s| s.file.zone(0, name));
                let s = zones.iter().find(|(n, _)| *n == name);
                if let (Some(r), Some((_, s))) = (r, s) {
                    real_rows.push(r.nr_free.as_slice());
                    sim_rows.push(s.as_slice());
                }
            }
            (!real_rows.is_empty()).then(|| ZoneComparison {
                zone: name.to_owned(),
                real: ZoneView::of(&real_rows, pageblock_order),
                simulated: ZoneView::of(&sim_rows, pageblock_order),
            })
        })
        .collect();
    ZoneSamples { samples: sim.taken.len(), zones }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_count_pages_pageblocks_and_small_blocks() {
        let a: &[u64] = &[1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1];
        let b: &[u64] = &[4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let v = ZoneView::of(&[a, b, b], 9);
        assert_eq!(v.free_pageblocks.p90, 3.0, "an order-10 block is two pageblocks");
        assert_eq!(v.free_pageblocks.p50, 0.0);
        assert!((v.no_free_pageblock - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(v.free_pages.p90, (1 + 2 + 512 + 1024) as f64);
        assert_eq!(v.small_blocks.mean, (2.0 + 4.0 + 4.0) / 3.0);
        assert_eq!(Percentiles::of(Vec::new()), Percentiles::default());
    }

    /// Regression: a sampled row is read from a file, and its counts and number of orders
    /// can be anything; the sums overflowed (a panic where overflow is checked).
    #[test]
    fn any_row_a_file_holds_is_counted_without_overflow() {
        let wide: Vec<u64> = vec![u64::MAX; 80];
        let v = ZoneView::of(&[&wide], 9);
        assert_eq!(v.free_pages.p50, u64::MAX as f64);
        assert_eq!(v.free_pageblocks.p50, u64::MAX as f64);
        assert_eq!(v.small_blocks.p50, u64::MAX as f64);
    }
}
