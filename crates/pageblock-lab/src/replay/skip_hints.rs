//! The compaction skip hints (`PB_compact_skip`) a replay starts from, read from the
//! traced kernel's first compaction runs.
//!
//! A pageblock's hint is set when a compaction scanner finds nothing to take from it, and
//! stays set until a flush (after a direct run met the scanners, when kswapd sleeps) or a
//! restart after the longest deferral. So a kernel that has compacted before the trace began
//! starts it with most hints set, and its first runs pass those blocks without looking. A
//! simulation that boots with every hint clear rescans them: on C11's `defrag_mode` run 1
//! kcompactd scanned 5.5x the kernel's pages on the kernel's number of runs.
//!
//! The trace shows where each run's migrate scanner was (`mm_compaction_begin` and `_end`)
//! and each block it looked into (`mm_compaction_isolate_migratepages`). Over a zone's first
//! runs, from the first block a run looked into (before it, the scanner may have jumped
//! there by its free-list search) to where it ended, the blocks it passed without looking had
//! their hint set, or held a block-sized allocation, which compaction never scans either.
//! A replay sets each block's hint at that share, drawn per seed; a zone whose first runs
//! passed fewer than [`MIN_PASSED_BLOCKS`] keeps its hints clear, as before.

use std::collections::{BTreeMap, HashMap};

use pageblock_core::types::PAGEBLOCK_ORDER;
use pageblock_core::Node;
use pageblock_formats::compaction::CompactionEventKind;
use pageblock_trace::{RecordKind, TraceRecord};

use crate::prng::Prng;

/// Blocks a zone's first runs must have passed for their share to stand.
pub const MIN_PASSED_BLOCKS: u64 = 64;

/// Runs kept from the trace's start: enough for every zone's first ones.
const MAX_RUNS: usize = 256;

/// One traced run of the migrate scanner. Blocks are the traced machine's pageblocks
/// (`pfn >> PAGEBLOCK_ORDER`, x86-64's 2 MiB); a zone of the simulated machine is found by pfn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    /// Its pfn at the start.
    begin_pfn: u64,
    /// The lowest block it looked into, if any.
    first_looked_block: Option<u64>,
    /// Its pfn at the end.
    end_pfn: u64,
    /// Distinct blocks it looked into.
    looked: u64,
}

/// A run in progress: its start, and the blocks it looked into.
#[derive(Clone, Debug, Default)]
struct Open {
    begin_pfn: u64,
    blocks: Vec<u64>,
}

/// The trace's first compaction runs, as far as they show the hints.
#[derive(Clone, Debug, Default)]
pub struct SkipHints {
    open: HashMap<u32, Open>,
    runs: Vec<Run>,
}

/// For one zone: blocks its first runs passed, and of them passed without looking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneHints {
    /// Blocks passed.
    pub passed: u64,
    /// Of them, passed without looking.
    pub unlooked: u64,
}

impl SkipHints {
    /// Read one record of task `pid`.
    pub fn observe(&mut self, rec: &TraceRecord, pid: u32) {
        let RecordKind::Compaction(kind) = rec.kind else {
            return;
        };
        match kind {
            CompactionEventKind::Begin if self.runs.len() < MAX_RUNS => {
                self.open.insert(pid, Open { begin_pfn: rec.pfn, blocks: Vec::new() });
            }
            CompactionEventKind::IsolateMigratepages => {
                if let Some(o) = self.open.get_mut(&pid) {
                    o.blocks.push(rec.pfn >> PAGEBLOCK_ORDER);
                }
            }
            CompactionEventKind::End => {
                if let Some(mut o) = self.open.remove(&pid) {
                    o.blocks.sort_unstable();
                    o.blocks.dedup();
                    self.runs.push(Run {
                        begin_pfn: o.begin_pfn,
                        first_looked_block: o.blocks.first().copied(),
                        end_pfn: rec.pfn,
                        looked: o.blocks.len() as u64,
                    });
                }
            }
            _ => {}
        }
    }

    /// Per zone of `node` (by index), what its first runs showed: runs taken in trace order
    /// until they passed [`MIN_PASSED_BLOCKS`]; `None` for a zone they passed fewer.
    pub fn zones(&self, node: &Node) -> Vec<Option<ZoneHints>> {
        let shared = node.shared();
        let mut by_zone: BTreeMap<usize, ZoneHints> = BTreeMap::new();
        for r in &self.runs {
            let Some(z) = shared.zone_of(r.begin_pfn) else {
                continue;
            };
            let h = by_zone.entry(z).or_insert(ZoneHints { passed: 0, unlooked: 0 });
            if h.passed >= MIN_PASSED_BLOCKS {
                continue;
            }
            let from = r.first_looked_block.unwrap_or(r.begin_pfn >> PAGEBLOCK_ORDER);
            let passed = (r.end_pfn >> PAGEBLOCK_ORDER).saturating_sub(from).max(r.looked);
            h.passed += passed;
            h.unlooked += passed - r.looked.min(passed);
        }
        (0..shared.zones().len())
            .map(|z| by_zone.get(&z).copied().filter(|h| h.passed >= MIN_PASSED_BLOCKS))
            .collect()
    }

    /// Set the hints of `node`'s pageblocks for seed `seed`: in each zone with evidence, each
    /// block at the share its first runs passed without looking.
    pub fn apply(&self, node: &Node, seed: u64) {
        // A stream of its own, so that the other draws stay as they were.
        let mut rng = Prng::new(seed ^ 0x736b_6970_5f68_696e);
        for (z, h) in self.zones(node).into_iter().enumerate() {
            let Some(h) = h else {
                continue;
            };
            let blocks = node.shared().zone(z).pageblocks();
            for b in 0..blocks.len() {
                if rng.below(h.passed) < h.unlooked {
                    blocks.set_skip(b, true);
                }
            }
        }
    }

    /// What a replay starts from, as the report says it.
    pub fn source(&self, node: &Node) -> String {
        let parts: Vec<String> = self
            .zones(node)
            .into_iter()
            .enumerate()
            .filter_map(|(z, h)| {
                let h = h?;
                let name = node.shared().zone(z).config().zone_type.name();
                Some(format!(
                    "{name} {:.1}% ({} of {} blocks its first runs passed without looking)",
                    100.0 * h.unlooked as f64 / h.passed as f64,
                    h.unlooked,
                    h.passed
                ))
            })
            .collect();
        if parts.is_empty() {
            "clear (no zone's first traced runs passed enough blocks to tell)".into()
        } else {
            format!("{}; other zones clear", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::{NodeConfig, Policy, ZoneConfig, ZoneType};
    use pageblock_trace::Task;

    fn rec(kind: CompactionEventKind, pfn: u64) -> TraceRecord {
        TraceRecord { time_us: 0, pfn, cpu: 0, task: Task::Other, kind: RecordKind::Compaction(kind) }
    }

    fn node() -> Node {
        let zones = vec![
            ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Dma32, 0x1000, 0xff000) },
            ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Normal, 0x100000, 0x40000) },
        ];
        Node::new(NodeConfig { zones }, Policy::default()).unwrap()
    }

    /// A run of task `pid` from `begin` to `end`, looking into the blocks at `looked`.
    fn run(h: &mut SkipHints, pid: u32, begin: u64, looked: &[u64], end: u64) {
        h.observe(&rec(CompactionEventKind::Begin, begin), pid);
        for &p in looked {
            h.observe(&rec(CompactionEventKind::IsolateMigratepages, p), pid);
        }
        h.observe(&rec(CompactionEventKind::End, end), pid);
    }

    #[test]
    fn the_blocks_a_run_passed_without_looking_count_from_the_first_it_looked_into() {
        let mut h = SkipHints::default();
        // A run whose search jumped to 0x20000 and went on to 0x40000 (256 blocks), looking
        // into 16 of them (one twice), interleaved with another task's run in ZONE_NORMAL
        // that passed too few blocks to tell.
        h.observe(&rec(CompactionEventKind::Begin, 0x1000), 7);
        run(&mut h, 8, 0x100000, &[0x100000], 0x102000);
        for k in 0..16 {
            h.observe(&rec(CompactionEventKind::IsolateMigratepages, 0x20000 + k * 0x2000), 7);
        }
        h.observe(&rec(CompactionEventKind::IsolateMigratepages, 0x20000), 7);
        h.observe(&rec(CompactionEventKind::End, 0x40000), 7);
        let n = node();
        assert_eq!(h.zones(&n), vec![Some(ZoneHints { passed: 256, unlooked: 240 }), None]);
        assert!(h.source(&n).starts_with("DMA32 93.8% (240 of 256"), "{}", h.source(&n));
        // Later runs in a zone that already told are not counted.
        run(&mut h, 7, 0x1000, &[], 0xff000);
        assert_eq!(h.zones(&n)[0], Some(ZoneHints { passed: 256, unlooked: 240 }));
    }

    #[test]
    fn a_seed_sets_the_hints_at_that_share_and_the_same_way_every_time() {
        let mut h = SkipHints::default();
        run(&mut h, 1, 0x1000, &[0x1000], 0x1000 + 100 * 512);
        let hinted = |seed| {
            let n = node();
            h.apply(&n, seed);
            let b = n.shared().zone(0).pageblocks();
            ((0..b.len()).filter(|&i| b.skip(i)).collect::<Vec<_>>(), n.shared().zone(1).pageblocks().len())
        };
        let (a, _) = hinted(1);
        assert_eq!(a, hinted(1).0, "reproducible");
        assert_ne!(a, hinted(2).0);
        let total = node().shared().zone(0).pageblocks().len();
        let share = a.len() as f64 / total as f64;
        assert!((0.96..=1.0).contains(&share), "99 of 100 passed unlooked: {share}");
        let n = node();
        h.apply(&n, 1);
        let normal = n.shared().zone(1).pageblocks();
        assert!((0..normal.len()).all(|i| !normal.skip(i)), "no evidence: clear");
        assert!(SkipHints::default().source(&n).starts_with("clear"));
    }
}
