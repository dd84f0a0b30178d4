//! The migrate scanner (`isolate_migratepages`, `isolate_migratepages_block`,
//! `suitable_migration_source`): from the zone's low end upwards, one pageblock per call,
//! isolate up to [`COMPACT_CLUSTER_MAX`] pages of movable allocated blocks.
//!
//! It reads the memmap without the zone lock, as the kernel does; a block is taken from its
//! owner with a compare-and-swap of its state word (`Allocated` → `Isolated`), so a block
//! freed meanwhile is simply not isolated.

use super::compact_zone::CompactControl;
use super::{MigrateMode, COMPACT_CLUSTER_MAX};
use crate::locks::{lock_zone, NodeLocks};
use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::types::Pfn;
use crate::zone::ZoneShared;

/// What a call of the scanner found.
pub(crate) enum Isolated {
    /// Nothing isolated (the scanner moved on).
    None,
    /// Blocks are waiting in `cc.migratepages`.
    Some,
}

impl CompactControl {
    /// `isolate_migratepages()`: from where the free-list search
    /// ([`CompactControl::fast_find_migrateblock`]) points, or else linearly from
    /// `migrate_pfn`, find the first pageblock worth scanning below the free scanner, and
    /// isolate from it.
    pub(crate) fn isolate_migratepages<L: NodeLocks + ?Sized>(&mut self, l: &L) -> Isolated {
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let (zone_start, zone_end) = (zone.config().start_pfn, zone.config().end_pfn());
        let mut low = self.fast_find_migrateblock(l);
        // A block the search chose was checked for its skip hint already.
        let mut fast_find_block = low != self.migrate_pfn && self.fast_search_fail == 0;
        let mut block_start = (low & !(pb - 1)).max(zone_start);
        let mut block_end = (low & !(pb - 1)) + pb;
        while block_end <= self.free_pfn {
            let first_of_block = low & (pb - 1) == 0 || low == zone_start;
            let partial = block_start & (pb - 1) != 0 || block_end > zone_end;
            let skip = !partial
                && first_of_block
                && !fast_find_block
                && !self.ignore_skip_hint
                && zone.pageblocks().skip(block_index(zone, block_start));
            if !partial && !skip {
                if !self.suitable_migration_source(zone, block_start) {
                    self.update_cached_migrate(l, block_end);
                } else {
                    self.migrate_pfn = self.isolate_migratepages_block(l, low, block_end);
                    return if self.migratepages.is_empty() { Isolated::None } else { Isolated::Some };
                }
            }
            fast_find_block = false;
            low = block_end;
            self.migrate_pfn = low;
            block_start = block_end;
            block_end += pb;
        }
        Isolated::None
    }

    /// `suitable_migration_source()`: not a block-sized allocation; any block for sync runs
    /// and kcompactd; for async direct compaction only blocks of the request's own kind.
    fn suitable_migration_source(&self, zone: &ZoneShared, block_start: u64) -> bool {
        let head = zone.memmap().info(idx(zone, block_start));
        if head.state == PageState::Allocated && head.order >= zone.config().pageblock_order {
            return false;
        }
        if self.mode != MigrateMode::Async || !self.direct {
            return true;
        }
        let block_mt = zone.pageblock_migratetype(block_start);
        if self.migratetype == MigrateType::Movable {
            matches!(block_mt, MigrateType::Movable | MigrateType::Cma)
        } else {
            block_mt == self.migratetype
        }
    }

    /// `isolate_migratepages_block()` over `[low, end)`: returns where the scan stopped.
    fn isolate_migratepages_block<L: NodeLocks + ?Sized>(&mut self, l: &L, low: u64, end: u64) -> u64 {
        let zone = l.node().zone(self.zone);
        let mm = zone.memmap();
        let pbo = zone.config().pageblock_order;
        // Async direct compaction gives up on a whole order-aligned chunk at the first page
        // that cannot move (`skip_on_failure`): the chunk could not become free anyway.
        let chunk_order = self.order.filter(|_| self.direct && self.mode == MigrateMode::Async);
        let mut next_skip_pfn = chunk_order.map_or(u64::MAX, |o| chunk_end(low, o));
        let mut chunk_isolated_from = self.migratepages.len();
        let mut nr_scanned = 0;
        let mut nr_isolated = 0;
        let mut skip_updated = false;
        let mover = l.mover();
        let unevictable_allowed = l.node().policy().sysctls.compact_unevictable_allowed();
        let mut pfn = low;
        while pfn < end {
            if let Some(o) = chunk_order {
                if pfn >= next_skip_pfn {
                    if nr_isolated > 0 {
                        break;
                    }
                    next_skip_pfn = chunk_end(pfn, o);
                    chunk_isolated_from = self.migratepages.len();
                }
            }
            let i = idx(zone, pfn);
            let word = mm.info_word(i);
            let info = PageInfo::from_word(word);
            // A tail page at a block boundary lies in a block larger than a pageblock: the
            // rest of this pageblock is part of it.
            let pages = if info.state == PageState::Tail { end - pfn } else { 1u64 << info.order };
            nr_scanned += pages;
            let movable = info.state == PageState::Allocated
                && (if self.handles_only { info.tag.handle } else { info.tag.movable })
                && info.order < pbo
                && self.order.is_none_or(|o| info.order < o)
                && mover.is_none_or(|m| {
                    self.may_isolate(m.folio_state(Pfn(pfn), info.order), unevictable_allowed)
                });
            if matches!(info.state, PageState::Buddy | PageState::Tail) {
                pfn += pages;
                continue;
            }
            if movable {
                // The first isolation in a block marks it scanned (`test_and_set_skip`); a
                // block another run already marked is left to that run.
                if !skip_updated && !self.ignore_skip_hint && low & ((1 << pbo) - 1) == 0 {
                    skip_updated = true;
                    let b = block_index(zone, pfn);
                    if zone.pageblocks().skip(b) && !self.finish_pageblock {
                        pfn = end;
                        break;
                    }
                    zone.pageblocks().set_skip(b, true);
                }
                let isolated = PageInfo { state: PageState::Isolated, ..info };
                if mm.compare_exchange_word(i, word, isolated).is_ok() {
                    self.migratepages.push((pfn, info));
                    self.nr_migratepages += pages;
                    nr_isolated += pages;
                    pfn += pages;
                    // A contended run isolates the whole block at once.
                    if self.nr_migratepages >= COMPACT_CLUSTER_MAX
                        && !self.finish_pageblock
                        && !self.contended
                    {
                        break;
                    }
                    continue;
                }
            }
            // isolate_fail: a page that cannot move.
            if chunk_order.is_some() {
                for (p, inf) in self.migratepages.drain(chunk_isolated_from..) {
                    mm.set_info(idx(zone, p), inf);
                    self.nr_migratepages -= 1 << inf.order;
                    nr_isolated -= 1 << inf.order;
                }
                // The rest of the chunk is passed over, not scanned.
                pfn = next_skip_pfn.min(end).max(pfn + pages);
            } else {
                pfn += pages;
            }
        }
        // A block scanned to its end without isolating anything, or rescanned whole after a
        // failed migration, is not worth a second look.
        if pfn >= end && (nr_isolated == 0 || self.finish_pageblock) {
            if !self.ignore_skip_hint {
                zone.pageblocks().set_skip(block_index(zone, end - 1), true);
            }
            self.update_cached_migrate(l, end);
        }
        let node = l.node();
        node.count(VmEvent::CompactIsolated, nr_isolated);
        self.total_migrate_scanned += nr_scanned;
        pfn.min(end)
    }

    /// `update_cached_migrate()`: later runs start the migrate scanner past `pfn`'s block.
    fn update_cached_migrate<L: NodeLocks + ?Sized>(&self, l: &L, pfn: u64) {
        if self.ignore_skip_hint {
            return;
        }
        let mut z = lock_zone(l, self.zone, self.cpu);
        let pb = z.pageblock_nr_pages();
        let pfn = (pfn + pb - 1) & !(pb - 1);
        let c = &mut z.compact;
        c.cached_migrate_pfn[0] = c.cached_migrate_pfn[0].max(pfn);
        if self.mode != MigrateMode::Async {
            c.cached_migrate_pfn[1] = c.cached_migrate_pfn[1].max(pfn);
        }
    }
}

/// The end of the order-`order` block containing `pfn`.
fn chunk_end(pfn: u64, order: u32) -> u64 {
    (pfn | ((1 << order) - 1)) + 1
}

/// The memmap index of `pfn`.
pub(crate) fn idx(zone: &ZoneShared, pfn: u64) -> u32 {
    (pfn - zone.config().start_pfn) as u32
}

/// The zone-relative pageblock number of `pfn`.
pub(crate) fn block_index(zone: &ZoneShared, pfn: u64) -> usize {
    let pbo = zone.config().pageblock_order;
    ((pfn >> pbo) - (zone.config().start_pfn >> pbo)) as usize
}
