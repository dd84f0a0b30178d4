//! Huge-page availability over a replay, sampled from counters (no lock, O(zones × orders)
//! per sample):
//!
//! * **free pageblocks**: free pages in blocks of pageblock order or more, in pageblocks
//!   (`NR_FREE_PAGES_BLOCKS >> pageblock_order`, every zone);
//! * **huge share**: those pages as a share of all free pages — free 2 MiB blocks per
//!   512 free pages, the figure LLFree reports;
//! * **unusable index** at pageblock order (`/sys/kernel/debug/extfrag/unusable_index`, over
//!   the node's free lists): the share of free memory in blocks too small for a huge page,
//!   in thousandths.

use pageblock_core::{NodeShared, ZoneStat};
use serde::Serialize;

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Trace time since its first event, in microseconds.
    pub time_us: u64,
    /// Free pageblocks.
    pub free_pageblocks: u64,
    /// Free pages.
    pub free_pages: u64,
    /// Free pages in whole free pageblocks / free pages.
    pub huge_share: f64,
    /// Unusable free index at pageblock order, in thousandths.
    pub unusable_index: i32,
}

/// The samples of a replay, in time order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Series {
    /// The samples.
    pub samples: Vec<Sample>,
}

/// Mean, minimum and last value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Mean over the samples.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// At the end.
    pub end: f64,
}

impl Series {
    /// Sample `node` at `time_us`.
    pub fn sample(&mut self, time_us: u64, node: &NodeShared) {
        let pbo = node.pageblock_order();
        let blocks: u64 =
            node.zones().iter().map(|z| z.counters().zone_stat(ZoneStat::NrFreePagesBlocks)).sum();
        let free = node.nr_free_pages();
        let mut per_order = vec![0u64; node.max_order() as usize + 1];
        for z in node.zones() {
            for (o, n) in per_order.iter_mut().enumerate() {
                *n += z.free_areas().nr_free(o as u32);
            }
        }
        self.samples.push(Sample {
            time_us,
            free_pageblocks: blocks >> pbo,
            free_pages: free,
            huge_share: if free == 0 { 0.0 } else { blocks as f64 / free as f64 },
            unusable_index: pageblock_formats::extfrag::unusable_free_index(&per_order, pbo),
        });
    }

    /// Summary of `f` over the samples.
    pub fn summary(&self, f: impl Fn(&Sample) -> f64) -> Summary {
        let v: Vec<f64> = self.samples.iter().map(f).collect();
        if v.is_empty() {
            return Summary::default();
        }
        Summary {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            end: v[v.len() - 1],
        }
    }
}
