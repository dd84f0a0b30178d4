//! The free scanner (`isolate_freepages`, `isolate_freepages_block`,
//! `suitable_migration_target`, `__isolate_free_page`): from the zone's high end downwards,
//! take free blocks off the free lists as destinations for migration, until there are as
//! many free pages as pages waiting to move.

use super::compact_zone::CompactControl;
use super::migrate::{block_index, idx};
use crate::gfp::AllocFlags;
use crate::locks::NodeLocks;
use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::page_alloc::lock_zone;
use crate::stats::VmEvent;
use crate::watermark::WatermarkRequest;
use crate::zone::{Zone, ZoneShared};

impl CompactControl {
    /// `isolate_freepages()`: scan pageblocks downwards from `free_pfn` while they lie above
    /// the migrate scanner's block.
    pub(crate) fn isolate_freepages<L: NodeLocks + ?Sized>(&mut self, l: &L) {
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let (zone_start, zone_end) = (zone.config().start_pfn, zone.config().end_pfn());
        let low_pfn = (self.migrate_pfn & !(pb - 1)) + pb;
        let mut block_start = self.free_pfn & !(pb - 1);
        let mut isolate_start = self.free_pfn;
        while block_start >= low_pfn {
            let block_end = (block_start + pb).min(zone_end);
            let usable = block_start >= zone_start
                && block_end - block_start == pb
                && self.suitable_migration_target(zone, block_start)
                && (self.ignore_skip_hint || !zone.pageblocks().skip(block_index(zone, block_start)));
            if usable {
                isolate_start = self.isolate_freepages_block(l, isolate_start.max(block_start), block_end);
                if isolate_start >= block_end && !self.ignore_skip_hint {
                    // Fully scanned: skip it next time, and resume below it.
                    zone.pageblocks().set_skip(block_index(zone, block_start), true);
                    let mut z = lock_zone(l, self.zone, self.cpu);
                    if block_start < z.compact.cached_free_pfn {
                        z.compact.cached_free_pfn = block_start;
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

    /// `isolate_freepages_block()` over `[start, end)` under the zone lock: isolate free
    /// blocks until there are enough. Returns where the scan stopped (`end` if it finished).
    fn isolate_freepages_block<L: NodeLocks + ?Sized>(&mut self, l: &L, start: u64, end: u64) -> u64 {
        let mut z = lock_zone(l, self.zone, self.cpu);
        let mut nr_scanned = 0;
        let mut nr_isolated = 0;
        let mut pfn = start;
        while pfn < end {
            let info = z.shared().memmap().info(z.idx(pfn));
            let pages = if info.state == PageState::Tail { end - pfn } else { 1u64 << info.order };
            nr_scanned += pages;
            if info.state == PageState::Buddy {
                if !z.isolate_free_page(pfn, info.order) {
                    break;
                }
                self.freepages[info.order as usize].push(pfn);
                self.nr_freepages += pages;
                nr_isolated += pages;
                if self.nr_freepages >= self.nr_migratepages {
                    pfn += pages;
                    break;
                }
            }
            pfn += pages;
        }
        drop(z);
        let node = l.node();
        node.count(VmEvent::CompactIsolated, nr_isolated);
        self.total_free_scanned += nr_scanned;
        pfn.min(end)
    }
}

impl Zone {
    /// `__isolate_free_page()`: take the free block at `pfn` off its list for compaction,
    /// unless that would drop the zone below its (un-boosted) min watermark. A block of
    /// nearly a pageblock or more turns its pageblocks Movable: they will hold migrated
    /// movable pages.
    pub(crate) fn isolate_free_page(&mut self, pfn: u64, order: u32) -> bool {
        let mt = self.pageblock_migratetype(pfn);
        if mt != MigrateType::Isolate {
            let c = self.counters();
            let mark = c.watermarks().min + (1 << order);
            let req = WatermarkRequest {
                order: 0,
                flags: AllocFlags::CMA,
                highest_zoneidx: crate::config::ZoneType::Dma,
            };
            if !self.shared().zone_watermark_ok(req, mark) {
                return false;
            }
        }
        self.del_page_from_free_list(pfn, order, mt);
        if order + 1 >= self.pageblock_order() {
            let pb = self.pageblock_nr_pages();
            let mut block = pfn & !(pb - 1);
            while block < pfn + (1 << order) {
                let bmt = self.pageblock_migratetype(block);
                if bmt.is_mergeable() && bmt != MigrateType::Movable {
                    self.move_freepages_block(block, bmt, MigrateType::Movable);
                }
                block += pb;
            }
        }
        self.shared.memmap.set_head(self.idx(pfn), PageState::Isolated, order);
        true
    }
}
