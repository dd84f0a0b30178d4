//! Huge-page availability over a replay, sampled from counters (no lock, O(zones) per
//! sample), and the unusable index at the end:
//!
//! * **free pageblocks**: free pages in blocks of pageblock order or more, in pageblocks
//!   (`NR_FREE_PAGES_BLOCKS >> pageblock_order`, every zone);
//! * **huge share**: those pages as a share of all free pages — free 2 MiB blocks per
//!   512 free pages, the figure LLFree reports;
//! * **unusable index** at pageblock order (`/sys/kernel/debug/extfrag/unusable_index`, over
//!   the node's free lists): the share of free memory in blocks too small for a huge page,
//!   a fraction (0..1) as debugfs prints it.

use pageblock_core::{NodeShared, ZoneStat};
use serde::Serialize;

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Trace records replayed before it.
    pub records: u64,
    /// Simulated time since the first record, µs.
    pub time_us: u64,
    /// Free pageblocks.
    pub free_pageblocks: u64,
    /// Free pages in whole free pageblocks / free pages.
    pub huge_share: f64,
}

/// The samples of a replay, in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The samples.
    pub samples: Vec<Sample>,
}

/// The samples as JSON columns: one array per quantity, sample by sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Columns {
    /// Trace records replayed before each sample.
    pub records: Vec<u64>,
    /// Simulated seconds since the first record.
    pub seconds: Vec<f64>,
    /// Whole free pageblocks.
    pub free_pageblocks: Vec<u64>,
    /// Free pages in whole free pageblocks / free pages (0..1).
    pub huge_share: Vec<f64>,
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
    /// Sample `node` after `records` records, at simulated time `time_us`.
    pub fn sample(&mut self, node: &NodeShared, records: u64, time_us: u64) {
        let blocks = free_pages_in_blocks(node);
        let free = node.nr_free_pages();
        self.samples.push(Sample {
            records,
            time_us,
            free_pageblocks: blocks >> node.pageblock_order(),
            huge_share: if free == 0 { 0.0 } else { blocks as f64 / free as f64 },
        });
    }

    /// The samples as columns.
    pub fn columns(&self) -> Columns {
        let s = &self.samples;
        Columns {
            records: s.iter().map(|s| s.records).collect(),
            seconds: s.iter().map(|s| s.time_us as f64 / 1e6).collect(),
            free_pageblocks: s.iter().map(|s| s.free_pageblocks).collect(),
            huge_share: s.iter().map(|s| s.huge_share).collect(),
        }
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

/// Free pages in whole free pageblocks, every zone (`NR_FREE_PAGES_BLOCKS`).
fn free_pages_in_blocks(node: &NodeShared) -> u64 {
    node.zones().iter().map(|z| z.counters().zone_stat(ZoneStat::NrFreePagesBlocks)).sum()
}

/// Whole free pageblocks on the node.
pub fn free_pageblocks(node: &NodeShared) -> u64 {
    free_pages_in_blocks(node) >> node.pageblock_order()
}

/// The unusable free index of `node`'s free lists at pageblock order, as a fraction (0..1;
/// debugfs prints `0.193`).
pub fn unusable_index(node: &NodeShared) -> f64 {
    let mut per_order = vec![0u64; node.max_order() as usize + 1];
    for z in node.zones() {
        for (o, n) in per_order.iter_mut().enumerate() {
            *n += z.free_areas().nr_free(o as u32);
        }
    }
    f64::from(pageblock_formats::extfrag::unusable_free_index(&per_order, node.pageblock_order())) / 1000.0
}
