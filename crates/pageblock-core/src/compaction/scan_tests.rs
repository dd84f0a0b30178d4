//! The scanners' geometry on small constructed zones: what each scanner visits, counts and
//! chooses (6.18's `isolate_migratepages_block`, `isolate_freepages`, the free-list
//! searches, `__reset_isolation_suitable`, `compact_lock_irqsave`).

use super::compact_zone::{compact_zone, CompactControl};
use super::{CompactResult, MigrateFail, MigrateMode, Mover};
use std::cell::RefMut;

use crate::migratetype::MigrateType;
use crate::node::NodeShared;
use crate::pcp::PerCpuPages;
use crate::zone::Zone;
use crate::{Gfp, Node, NodeLocks, Pfn, Policy, Sysctl, ZoneConfig};

/// Moves anything.
struct Anywhere;

impl Mover for Anywhere {
    fn migrate(&self, _from: Pfn, _to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        Ok(())
    }
}

/// A zone of `blocks` 512-page pageblocks (at least 8: a smaller zone does not group by
/// mobility), every page allocated order-0 movable, with a mover. Returns the node and the
/// zone's first pfn.
fn full_zone(blocks: u64) -> (Node, u64) {
    assert!(blocks >= 8);
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(blocks * 512 * 4096) };
    let mut node =
        Node::single_zone(zone, Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 0).unwrap()).unwrap();
    node.set_mover(Box::new(Anywhere));
    let nowait = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
    node.fill(nowait);
    assert_eq!(node.zone(0).nr_free_pages(), 0, "the fill takes every page");
    let start = node.zone(0).start_pfn();
    (node, start)
}

/// Free order-0 pages `pfns` and let them merge.
fn free(node: &Node, pfns: impl IntoIterator<Item = u64>) {
    for p in pfns {
        node.free_pages(0, Pfn(p), 0).unwrap();
    }
    node.drain_all_pages();
}

/// A run of `order` over the zone of `node`, scanners at the zone's ends.
fn run(node: &Node, order: u32, mode: MigrateMode, direct: bool) -> CompactControl {
    let mut cc = CompactControl::new(0, 0, Some(order), mode);
    cc.direct = direct;
    cc.migrate_pfn = node.zone(0).start_pfn();
    cc.free_pfn = node.zone(0).last_pageblock_pfn();
    cc
}

/// C9a: async direct compaction gives up on an order-aligned chunk at the first page that
/// cannot move; the pages it passes over are not scanned (`low_pfn = next_skip_pfn - 1`).
#[test]
fn skip_on_failure_counts_only_the_pages_looked_at() {
    let (node, start) = full_zone(8);
    let block = start + 512;
    node.shared().set_pinned(Pfn(block + 10), 0, true).unwrap();
    let mut cc = run(&node, 9, MigrateMode::Async, true);
    cc.migrate_pfn = block;
    cc.isolate_migratepages(&node);
    assert!(cc.migratepages.is_empty(), "the chunk cannot become free: nothing stays isolated");
    assert_eq!(cc.total_migrate_scanned, 11, "pages 0..=10 of the block, not all 512");
    assert_eq!(cc.migrate_pfn, block + 512);
}

/// C10: async free scanning looks at every 32nd pfn of a block (16 of 512); a block that
/// yielded pages makes the next one scanned pfn by pfn, and each block without any doubles
/// the stride again. Sync runs start at stride 1.
#[test]
fn the_async_free_scanner_strides_and_adapts() {
    let (node, start) = full_zone(16);
    // Block 0 free as a whole (not a target; it keeps the zone above its watermark), and
    // one free page at offset 64 of block 5: below the upper half of the range, where the
    // free-list search does not take it.
    free(&node, (start..start + 512).chain([start + 5 * 512 + 64]));
    let mut cc = run(&node, 9, MigrateMode::Async, true);
    cc.nr_migratepages = 2;
    cc.isolate_freepages(&node);
    assert_eq!(cc.freepages[0], vec![start + 5 * 512 + 64]);
    // The free-list search read one entry and sent the scanner to the middle of the range
    // (block 7). Blocks 7, 6 and 5 at stride 32; then block 4 at stride 1, 3 at 2, 2 at 4
    // and 1 at 8 (block 0 is the migrate scanner's).
    assert_eq!(cc.total_free_scanned, 1 + 16 * 3 + 512 + 256 + 128 + 64);
    (0..16).for_each(|b| node.zone(0).shared().pageblocks().set_skip(b, false));
    let mut sync = run(&node, 9, MigrateMode::SyncLight, false);
    sync.nr_migratepages = 1;
    sync.free_pfn = start + 3 * 512;
    sync.isolate_freepages(&node);
    assert_eq!(sync.total_free_scanned, 512 + 256 + 128, "sync: from stride 1, doubling");
}

/// C10: with free pages in the upper quarter of the range, the free scanner takes one
/// straight off the MOVABLE free list instead of walking down to it.
#[test]
fn the_free_scanner_takes_a_free_page_off_the_lists() {
    let (node, start) = full_zone(16);
    // Block 13 (of 0..16) lies in the top quarter of the range; the page sits at its end,
    // so a walk from the top would scan blocks 15 and 14 and most of 13 first. (Block 0,
    // free as a whole, keeps the zone above its watermark.)
    let target = start + 13 * 512 + 500;
    free(&node, (start..start + 512).chain([target]));
    let mut cc = run(&node, 9, MigrateMode::SyncLight, false);
    cc.nr_migratepages = 1;
    cc.isolate_freepages(&node);
    assert_eq!(cc.freepages[0], vec![target]);
    assert_eq!(cc.total_free_scanned, 1, "one free-list entry read");
}

/// C7: kcompactd at a costly order starts its migrate scanner at a pageblock that already
/// holds a free block of order `PAGE_ALLOC_COSTLY_ORDER..order` in the lower half of the
/// range, not at the full blocks below it.
#[test]
fn the_migrate_scanner_jumps_to_a_block_with_free_pages() {
    let (node, start) = full_zone(16);
    let half_empty = start + 5 * 512;
    free(&node, (0..16).map(|i| half_empty + 64 + i));
    assert_eq!(node.zone(0).shared().free_areas().nr_free(4), 1, "one order-4 free block");
    let mut cc = run(&node, 9, MigrateMode::SyncLight, false);
    cc.isolate_migratepages(&node);
    let first = cc.migratepages.first().map(|&(pfn, _)| pfn);
    assert_eq!(first, Some(half_empty), "isolation starts in the half-empty block");
    // Direct compaction for an unmovable request scans linearly.
    let mut unmovable = run(&node, 9, MigrateMode::SyncLight, true);
    unmovable.migratetype = MigrateType::Unmovable;
    unmovable.isolate_migratepages(&node);
    assert_eq!(unmovable.migratepages.first().map(|&(pfn, _)| pfn), Some(start));
}

/// C2: the skip hints are cleared only where a sample shows a migration source (an
/// allocated movable page) or target (a free page in a Movable block), and only after a
/// direct run met the scanners (`compact_blockskip_flush`).
#[test]
fn skip_hints_reset_only_where_a_sample_finds_work() {
    let (node, start) = full_zone(8);
    // Block 1: all pinned (nothing to migrate). Block 6: a free page on a sample.
    for p in start + 512..start + 1024 {
        node.shared().set_pinned(Pfn(p), 0, true).unwrap();
    }
    free(&node, [start + 6 * 512 + 8 * 5]);
    let shared = std::sync::Arc::clone(node.zone(0).shared());
    let blocks = shared.pageblocks();
    let mut z = node.lock_zone(0);
    let all = |on: bool| (0..8).for_each(|b| blocks.set_skip(b, on));
    all(true);
    z.reset_isolation_suitable();
    assert!((0..8).all(|b| blocks.skip(b)), "no direct run met the scanners: hints stay");
    z.compact.blockskip_flush = true;
    z.reset_isolation_suitable();
    let kept: Vec<usize> = (0..8).filter(|&b| blocks.skip(b)).collect();
    // Block 7, searched as a target only, holds no free page; block 1 holds nothing to move.
    assert_eq!(kept, vec![1, 7]);
    let c = &z.compact;
    let block6_end = start + 7 * 512 - 1;
    assert_eq!((c.init_migrate_pfn, c.cached_migrate_pfn), (start, [start; 2]));
    assert_eq!((c.init_free_pfn, c.cached_free_pfn), (block6_end, block6_end));
    assert!(!c.blockskip_flush);
}

/// Refuses every move (the pages are busy).
struct Nowhere;

impl Mover for Nowhere {
    fn migrate(&self, _from: Pfn, _to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        Err(MigrateFail::Busy)
    }
}

/// A driver of `node` on which another thread always holds the zone lock when a trylock
/// comes.
struct Busy<'a>(&'a Node);

impl NodeLocks for Busy<'_> {
    type ZoneGuard<'a>
        = RefMut<'a, Zone>
    where
        Self: 'a;
    type PcpGuard<'a>
        = RefMut<'a, PerCpuPages>
    where
        Self: 'a;

    fn node(&self) -> &NodeShared {
        self.0.node()
    }

    fn lock_zone(&self, zone: usize) -> RefMut<'_, Zone> {
        self.0.lock_zone(zone)
    }

    fn trylock_zone(&self, _zone: usize) -> Option<RefMut<'_, Zone>> {
        None
    }

    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<RefMut<'_, PerCpuPages>> {
        self.0.trylock_pcp(cpu, zone)
    }

    fn lock_pcp(&self, cpu: usize, zone: usize) -> RefMut<'_, PerCpuPages> {
        self.0.lock_pcp(cpu, zone)
    }
}

/// C13: an async run that finds the zone lock held counts itself contended and ends at the
/// next pageblock boundary with `COMPACT_CONTENDED` (the thread-safe library's trylock);
/// the simulator's single thread never finds it held.
#[test]
fn an_async_run_meeting_a_held_zone_lock_ends_contended() {
    let (node, start) = full_zone(16);
    // Free pages to migrate into, on every other pfn of blocks 1..=6: below the upper half
    // of the range, so the free scanner walks to them and takes the zone lock.
    free(&node, (512..7 * 512).step_by(2).map(|o| start + o));
    let mut cc = run(&node, 9, MigrateMode::Async, true);
    assert_eq!(compact_zone(&Busy(&node), &Nowhere, &mut cc), CompactResult::Contended);
    assert!(cc.contended);
    assert_eq!(cc.migrate_pfn, start + 512, "it stopped at the first pageblock boundary");
    let mut cc = run(&node, 9, MigrateMode::Async, true);
    let r = compact_zone(&node, &Nowhere, &mut cc);
    assert!(!cc.contended);
    assert!(matches!(r, CompactResult::Complete | CompactResult::PartialSkipped), "{r:?}");
    node.verify().unwrap();
}
