//! The scanners' free-list searches (`fast_find_migrateblock`, `fast_isolate_freepages`,
//! `fast_isolate_around`): instead of walking the zone pfn by pfn, look at a few entries of
//! the MOVABLE free lists for a pageblock worth visiting.
//!
//! * The migrate scanner, for a costly order, jumps to a pageblock in the lower part of the
//!   scan range that already holds free pages of order `PAGE_ALLOC_COSTLY_ORDER..order`: it
//!   needs fewer migrations to become free.
//! * The free scanner takes a free block from the upper quarter (at worst the upper half) of
//!   the range straight off a free list, searching the orders below the request's in a
//!   round robin, then isolates the rest of that pageblock.
//!
//! Both look at few entries (`freelist_scan_limit`, halved after each search that found
//! nothing) and rotate the lists they read so that the next search meets other entries.
//! Entries read count as scanned pages, like the kernel's `nr_scanned`.

use super::compact_zone::CompactControl;
use super::migrate::block_index;
use super::{MigrateMode, COMPACT_CLUSTER_MAX};
use crate::locks::{lock_zone, NodeLocks};
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::types::PAGE_ALLOC_COSTLY_ORDER;
use crate::zone::Zone;

/// `cc->fast_start_pfn`: the lowest free page the migrate-side search chose in this run,
/// where the linear scan resumes once the search stops finding blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FastStart {
    /// No block chosen yet (`0`).
    Unset,
    /// The lowest free pfn chosen so far.
    At(u64),
    /// Already used to restart the linear scan (`ULONG_MAX`): not again in this run.
    Spent,
}

/// The state of one `fast_isolate_freepages` search across orders.
struct FreeSearch {
    /// The preferred window starts here (the top quarter of the scan range)...
    low_pfn: u64,
    /// ...and candidates may lie as low as this (the top half).
    min_pfn: u64,
    pb: u64,
    zone_start: u64,
    /// Entries an order's list may still be read for.
    limit: u32,
    /// The highest pageblock holding a free block the search read (0: none).
    highest: u64,
    /// Entries read and pages isolated (`nr_scanned`).
    nr_scanned: u64,
}

impl CompactControl {
    /// `freelist_scan_limit()`: how many free-list entries a search may read, halved by
    /// each search that found nothing.
    fn freelist_scan_limit(&self) -> u32 {
        (COMPACT_CLUSTER_MAX as u32 >> self.fast_search_fail.min(31)) + 1
    }

    /// `fast_find_migrateblock()`: where the migrate scanner continues — a pageblock with
    /// free pages in the lower part of the range if the free lists name one, else its
    /// linear position (or the lowest block a search chose before).
    pub(crate) fn fast_find_migrateblock<L: NodeLocks + ?Sized>(&mut self, l: &L) -> u64 {
        let pfn = self.migrate_pfn;
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let zone_start = zone.config().start_pfn;
        // Skip hints keep the search from choosing the same blocks again; a rescan finishes
        // its block; a scan restarted in mid-block continues.
        if self.ignore_skip_hint || self.finish_pageblock || (pfn != zone_start && pfn & (pb - 1) != 0) {
            return pfn;
        }
        // Small orders scan linearly; only kcompactd and movable requests may empty a
        // movable block quickly.
        let Some(order) = self.order.filter(|&o| o > PAGE_ALLOC_COSTLY_ORDER) else {
            return pfn;
        };
        if self.direct && self.migratetype != MigrateType::Movable {
            return pfn;
        }
        // The first half of the range when starting at the zone's start, else its first
        // eighth (a block chosen higher could soon be a migration target).
        let mut distance = self.free_pfn.saturating_sub(pfn) >> 1;
        if pfn != zone_start {
            distance >>= 2;
        }
        let high_pfn = (pfn + distance) & !(pb - 1);
        let limit = self.freelist_scan_limit();
        let mut nr_scanned = 0u32;
        let mut found = None;
        let mut o = order - 1;
        while o >= PAGE_ALLOC_COSTLY_ORDER && found.is_none() && nr_scanned < limit {
            if zone.free_areas().nr_free(o) > 0 {
                let z = lock_zone(l, self.zone, self.cpu);
                let (mm, list) = (z.pages(), z.shared().free_areas().list(o, MigrateType::Movable));
                for i in list.iter(mm) {
                    nr_scanned += 1;
                    if nr_scanned > limit {
                        list.rotate_to_tail(mm, i);
                        break;
                    }
                    let free_pfn = z.pfn_at(i);
                    if free_pfn < high_pfn && !zone.pageblocks().skip(block_index(zone, free_pfn)) {
                        list.rotate_to_tail(mm, i);
                        found = Some(free_pfn);
                        break;
                    }
                }
            }
            o -= 1;
        }
        self.total_migrate_scanned += u64::from(nr_scanned);
        match found {
            Some(free_pfn) => {
                self.fast_start = match self.fast_start {
                    FastStart::Unset => FastStart::At(free_pfn),
                    FastStart::At(p) => FastStart::At(p.min(free_pfn)),
                    FastStart::Spent => FastStart::Spent,
                };
                self.fast_search_fail = 0;
                (free_pfn & !(pb - 1)).max(zone_start)
            }
            None => {
                self.fast_search_fail += 1;
                // `reinit_migrate_pfn()`.
                if let FastStart::At(p) = self.fast_start {
                    self.migrate_pfn = p;
                    self.fast_start = FastStart::Spent;
                }
                self.migrate_pfn
            }
        }
    }

    /// `next_search_order()`: the round robin over orders `order-1 ..= 0`, starting at
    /// `search_order`; `None` when it wrapped around (and the next search starts one
    /// order lower).
    fn next_search_order(&mut self, o: i32, order: i32) -> Option<i32> {
        let next = if o == 0 { order - 1 } else { o - 1 };
        if next == self.search_order {
            self.search_order = if self.search_order == 0 { order - 1 } else { self.search_order - 1 };
            return None;
        }
        Some(next)
    }

    /// `fast_isolate_freepages()`: isolate a free block from the upper part of the scan
    /// range straight off a MOVABLE free list, then the rest of its pageblock
    /// (`fast_isolate_around`). Failing that, a run that starts its free scanner moves it
    /// to the highest block the search saw (direct compaction: to the middle of the range).
    pub(crate) fn fast_isolate_freepages<L: NodeLocks + ?Sized>(&mut self, l: &L) {
        let Some(order) = self.order.filter(|&o| o > 0).map(|o| o as i32) else {
            return;
        };
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let zone_start = zone.config().start_pfn;
        let mut limit = (self.freelist_scan_limit() >> 1).max(1);
        // A scanner that starts afresh searches deeper and may settle for the highest block.
        let scan_start = self.free_pfn >= lock_zone(l, self.zone, self.cpu).compact.init_free_pfn;
        if scan_start {
            limit = (pb >> 1) as u32;
        }
        // Preferably the top quarter of the range, at worst its top half.
        let distance = self.free_pfn.saturating_sub(self.migrate_pfn);
        let low_pfn = (self.free_pfn - (distance >> 2)) & !(pb - 1);
        let min_pfn = (self.free_pfn - (distance >> 1)) & !(pb - 1);
        self.search_order = self.search_order.min(order - 1);
        let mut s = FreeSearch { low_pfn, min_pfn, pb, zone_start, limit, highest: 0, nr_scanned: 0 };
        let mut page = None;
        let mut o = Some(self.search_order);
        while let Some(cur) = o.filter(|_| page.is_none()) {
            let co = cur as u32;
            if zone.free_areas().nr_free(co) == 0 {
                o = self.next_search_order(cur, order);
                continue;
            }
            let mut z = lock_zone(l, self.zone, self.cpu);
            let order_scanned;
            (page, order_scanned) = self.read_free_list(&z, cur, &mut s);
            let mut abort = false;
            if let Some(pfn) = page {
                if z.isolate_free_page(pfn, co) {
                    self.freepages[co as usize].push(pfn);
                    self.nr_freepages += 1 << co;
                    s.nr_scanned += (1 << co) - 1;
                    l.node().count(VmEvent::CompactIsolated, 1 << co);
                } else {
                    // Below the watermark: the search ends here.
                    page = None;
                    abort = true;
                }
            }
            drop(z);
            if self.nr_freepages >= self.nr_migratepages {
                break;
            }
            if order_scanned >= s.limit {
                s.limit = (s.limit >> 1).max(1);
            }
            // An aborted search wraps around at once (and starts lower next time).
            o = self.next_search_order(if abort { self.search_order + 1 } else { cur }, order);
        }
        if page.is_none() {
            self.fast_search_fail += 1;
            if scan_start {
                if s.highest >= min_pfn {
                    page = Some(s.highest);
                    self.free_pfn = s.highest;
                } else if self.direct {
                    page = Some(min_pfn);
                    self.free_pfn = min_pfn;
                }
            }
        }
        if s.highest != 0 {
            let mut z = lock_zone(l, self.zone, self.cpu);
            if s.highest >= z.compact.cached_free_pfn {
                z.compact.cached_free_pfn = s.highest.saturating_sub(pb);
            }
        }
        self.total_free_scanned += s.nr_scanned;
        if let Some(pfn) = page {
            self.fast_isolate_around(l, pfn);
        }
    }

    /// One order's turn in `fast_isolate_freepages`: read `free_list[o][MOVABLE]` from its
    /// tail (the blocks freed longest ago) for a block in the preferred window, settling for
    /// the highest candidate above `min_pfn`, and rotate the entries read behind the others
    /// so that the next search meets new ones (a list read to its end stays as it is).
    /// Returns the block chosen and the entries read.
    fn read_free_list(&mut self, z: &Zone, o: i32, s: &mut FreeSearch) -> (Option<u64>, u32) {
        let (mm, list) = (z.pages(), z.shared().free_areas().list(o as u32, MigrateType::Movable));
        let mut order_scanned = 0u32;
        let mut page = None;
        let mut high_pfn = None;
        let mut last = None;
        for i in list.iter_rev(mm) {
            order_scanned += 1;
            s.nr_scanned += 1;
            last = Some(i);
            let pfn = z.pfn_at(i);
            if pfn >= s.highest {
                s.highest = (pfn & !(s.pb - 1)).max(s.zone_start);
            }
            if pfn >= s.low_pfn {
                self.fast_search_fail = 0;
                self.search_order = o;
                page = Some(pfn);
                break;
            }
            if pfn >= s.min_pfn && high_pfn.is_none_or(|h| pfn > h) {
                high_pfn = Some(pfn);
                // A candidate shortens the search.
                s.limit >>= 1;
            }
            if order_scanned >= s.limit {
                break;
            }
        }
        if let (None, Some(h)) = (page, high_pfn) {
            page = Some(h);
            last = Some(z.idx(h));
        }
        if let Some(i) = last.filter(|_| page.is_some() || order_scanned >= s.limit) {
            list.rotate_to_head(mm, i);
        }
        (page, order_scanned)
    }

    /// `fast_isolate_around()`: isolate the free pages of `pfn`'s pageblock (every pfn) if
    /// more are needed — not in async direct compaction, which keeps its scanning small —
    /// and mark the block skipped if it was scanned to its end.
    fn fast_isolate_around<L: NodeLocks + ?Sized>(&mut self, l: &L, pfn: u64) {
        if self.nr_freepages >= self.nr_migratepages || (self.direct && self.mode == MigrateMode::Async) {
            return;
        }
        let zone = l.node().zone(self.zone);
        let pb = 1u64 << zone.config().pageblock_order;
        let start = (pfn & !(pb - 1)).max(zone.config().start_pfn);
        let end = ((pfn & !(pb - 1)) + pb).min(zone.config().end_pfn());
        let (stop, _) = self.isolate_freepages_block(l, start, end, 1);
        if stop == end && !self.ignore_skip_hint {
            zone.pageblocks().set_skip(block_index(zone, start), true);
        }
    }
}
