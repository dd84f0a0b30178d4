//! The free scanner (`isolate_freepages`, `isolate_freepages_block`,
//! `suitable_migration_target`, `__isolate_free_page`): from the zone's high end downwards,
//! take free blocks off the free lists as destinations for migration, until there are as
//! many free pages as pages waiting to move.

use super::compact_zone::CompactControl;
use super::migrate::{block_index, idx};
use super::{MigrateMode, COMPACT_CLUSTER_MAX};
use crate::locks::{lock_zone, NodeLocks};
use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::zone::ZoneShared;

impl CompactControl {
    /// `isolate_freepages()`: try the free lists first ([`CompactControl::fast_isolate_freepages`]);
    /// if that isolated nothing, scan pageblocks downwards from `free_pfn` while they lie
    /// above the migrate scanner's block. Async runs start looking at every 32nd pfn of a
    /// block (`COMPACT_CLUSTER_MAX`), sync runs at every pfn; a block that yielded pages
    /// makes the next one scanned pfn by pfn, a block that yielded none doubles the stride,
    /// up to 32.
    pub(crate) fn isolate_freepages<L: NodeLocks + ?Sized>(&mut self, l: &L) {
        self.fast_isolate_freepages(l);
        if self.nr_freepages > 0 {
            return;
        }
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let (zone_start, zone_end) = (zone.config().start_pfn, zone.config().end_pfn());
        let low_pfn = (self.migrate_pfn & !(pb - 1)) + pb;
        let mut block_start = self.free_pfn & !(pb - 1);
        let mut isolate_start = self.free_pfn;
        let mut stride = if self.mode == MigrateMode::Async { COMPACT_CLUSTER_MAX } else { 1 };
        while block_start >= low_pfn {
            let block_end = (block_start + pb).min(zone_end);
            let usable = block_start >= zone_start
                && block_end - block_start == pb
                && self.suitable_migration_target(zone, block_start)
                && (self.ignore_skip_hint || !zone.pageblocks().skip(block_index(zone, block_start)));
            if usable {
                let (stop, nr_isolated) =
                    self.isolate_freepages_block(l, isolate_start.max(block_start), block_end, stride);
                isolate_start = stop;
                if isolate_start >= block_end && !self.ignore_skip_hint {
                    // Fully scanned (`update_pageblock_skip`): skip it next time, and resume
                    // below it.
                    zone.pageblocks().set_skip(block_index(zone, block_start), true);
                    let below = block_start.saturating_sub(pb);
                    let mut z = lock_zone(l, self.zone, self.cpu);
                    if below < z.compact.cached_free_pfn {
                        z.compact.cached_free_pfn = below;
                    }
                }
                if self.nr_freepages >= self.nr_migratepages {
                    if isolate_start >= block_end {
                        isolate_start = block_start.saturating_sub(pb);
                    }
                    break;
                }
                if isolate_start < block_end {
                    // Stopped early (the watermark refused): try again from here next time.
                    break;
                }
                stride = if nr_isolated > 0 { 1 } else { (stride << 1).min(COMPACT_CLUSTER_MAX) };
            }
            if block_start < pb {
                isolate_start = 0;
                break;
            }
            block_start -= pb;
            isolate_start = block_start;
        }
        self.free_pfn = isolate_start;
    }

    /// `suitable_migration_target()`: a Movable or CMA block (any block when block
    /// suitability is ignored) that does not start with a free block as large as the one the
    /// run is trying to make.
    fn suitable_migration_target(&self, zone: &ZoneShared, block_start: u64) -> bool {
        let head = zone.memmap().info(idx(zone, block_start));
        let big = self.order.filter(|&o| o > 0).unwrap_or(zone.config().pageblock_order);
        if head.state == PageState::Buddy && head.order >= big {
            return false;
        }
        if self.ignore_block_suitable {
            return true;
        }
        matches!(zone.pageblock_migratetype(block_start), MigrateType::Movable | MigrateType::Cma)
    }

    /// `isolate_freepages_block()` over `[start, end)`, looking at every `stride`-th pfn:
    /// isolate free blocks until there are enough. A pfn heading an allocated block of
    /// higher order (a compound page) skips the block and counts all of its pages; any other
    /// pfn counts one. The memmap is read without the zone lock; the lock is taken at the
    /// first free block (`compact_lock_irqsave`) and let go every `COMPACT_CLUSTER_MAX`
    /// pfns. Returns where the scan stopped (`end` if it finished) and the pages isolated.
    pub(super) fn isolate_freepages_block<L: NodeLocks + ?Sized>(
        &mut self,
        l: &L,
        start: u64,
        end: u64,
        stride: u64,
    ) -> (u64, u64) {
        let zone = l.node().zone(self.zone);
        let (mm, zone_start, max_order) = (zone.memmap(), zone.config().start_pfn, zone.config().max_order);
        let mut locked = None;
        let mut nr_scanned = 0;
        let mut nr_isolated = 0;
        let mut pfn = start;
        while pfn < end {
            if pfn % COMPACT_CLUSTER_MAX == 0 {
                locked = None;
            }
            let info = mm.info(idx(zone, pfn));
            let pages = 1u64 << info.order;
            match info.state {
                PageState::Buddy => {
                    nr_scanned += 1;
                    let z = match &mut locked {
                        Some(z) => z,
                        None => locked.insert(self.lock_zone(l)),
                    };
                    // Recheck under the lock.
                    let info = mm.info(idx(zone, pfn));
                    if info.state != PageState::Buddy {
                        pfn += stride;
                        continue;
                    }
                    let pages = 1u64 << info.order;
                    if !z.isolate_free_page(pfn, info.order) {
                        break;
                    }
                    self.freepages[info.order as usize].push(pfn);
                    self.nr_freepages += pages;
                    nr_scanned += pages - 1;
                    nr_isolated += pages;
                    if self.nr_freepages >= self.nr_migratepages {
                        pfn += pages;
                        break;
                    }
                    pfn += pages - 1 + stride;
                }
                PageState::Allocated if info.order > 0 => {
                    nr_scanned += pages;
                    pfn += pages - 1 + stride;
                }
                PageState::Tail => {
                    // Inside a block that began below: every pfn the stride meets there
                    // counts one.
                    let inside = match mm.tail_block_info(zone_start, pfn, max_order) {
                        Some(head) => ((pfn | ((1u64 << head.order) - 1)) + 1).min(end) - pfn,
                        None => 1,
                    };
                    let steps = inside.div_ceil(stride);
                    nr_scanned += steps;
                    pfn += steps * stride;
                }
                _ => {
                    nr_scanned += 1;
                    pfn += stride;
                }
            }
        }
        drop(locked);
        let node = l.node();
        node.count(VmEvent::CompactIsolated, nr_isolated);
        self.total_free_scanned += nr_scanned;
        (pfn.min(end), nr_isolated)
    }
}
