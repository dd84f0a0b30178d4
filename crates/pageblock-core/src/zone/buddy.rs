//! The buddy system proper: merging on free (`__free_one_page`, `buddy_merge_likely`,
//! `split_large_buddy`), splitting on allocation (`expand`, `page_del_and_expand`) and the
//! smallest-first search of one migratetype's lists (`__rmqueue_smallest`).
//!
//! A block of order `o` at pfn `p` (aligned to 2^o) has its buddy at `p ^ 2^o`; the two merge
//! into the block of order `o + 1` at `p & buddy`.

use crate::memmap::pagemap::{with_pages, PageMap};
use crate::memmap::NIL;
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::trace::TraceEvent;
use crate::zone::capture::Capture;
use crate::zone::free_area::ListEnd;
use crate::zone::Zone;

/// Where a freed block goes on its list (`FPI_TO_TAIL` or the merge heuristic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FreeTo {
    /// Head, unless `buddy_merge_likely` says its buddy's buddy is free.
    Heuristic,
    /// Always the tail (`FPI_TO_TAIL`: memory onlining, boot, isolation putback).
    Tail,
}

impl Zone {
    /// True if `pfn` heads a free block of exactly `order` in this zone (`page_is_buddy`).
    #[inline]
    pub(crate) fn is_free_buddy(&self, pfn: u64, order: u32) -> bool {
        self.shared.free_block_idx(self.pages(), pfn, order) != NIL
    }

    /// `split_large_buddy()`, the buddy step of `free_one_page()` (zone lock held): blocks
    /// above pageblock order are freed pageblock by pageblock, each with its own pageblock's
    /// type; the merge loop then joins them again where the types allow.
    pub(crate) fn split_large_buddy(&mut self, pfn: u64, order: u32, to: FreeTo) {
        self.with_capture(|z, capture| {
            with_pages!(z.shared.memmap, mm => z.split_large_buddy_in(mm, capture, pfn, order, to))
        });
    }

    /// [`Zone::split_large_buddy`] in a view of the memmap, with the zone's capture wish
    /// copied out (a caller freeing many blocks takes both once; see [`Zone::__free_one_page`]).
    #[inline]
    pub(crate) fn split_large_buddy_in<M: PageMap>(
        &self,
        mm: M,
        capture: &mut Option<Capture>,
        pfn: u64,
        order: u32,
        to: FreeTo,
    ) {
        if order <= self.pageblock_order() {
            let mt = self.pageblock_migratetype(pfn);
            self.__free_one_page(mm, capture, pfn, order, mt, to);
            return;
        }
        let pb = self.pageblock_nr_pages();
        let mut chunk = pfn;
        while chunk < pfn + (1 << order) {
            let mt = self.pageblock_migratetype(chunk);
            self.__free_one_page(mm, capture, chunk, self.pageblock_order(), mt, to);
            chunk += pb;
        }
    }

    /// `__free_one_page()`: account the pages as free, merge with free buddies as far as the
    /// rules allow, and put the result on the `mt` list.
    ///
    /// Below pageblock order migratetypes play no part (a buddy is always in the same block,
    /// on the same list). From pageblock order up, a buddy is a whole neighbouring pageblock
    /// range: it merges if its type is the same, or if both types are mobility types — then
    /// the buddy's blocks are retagged to `mt` so that a later split puts every piece on the
    /// right list. HighAtomic, CMA and Isolate blocks never merge with a different type.
    ///
    /// `mm` is this zone's memmap and `capture` its compaction capture wish (`zone.capture`),
    /// both taken by the caller: a drain takes them once for its whole batch, so the loop is
    /// compiled for one memmap layout and the zone stays borrowed only for reading.
    #[inline(always)]
    pub(crate) fn __free_one_page<M: PageMap>(
        &self,
        mm: M,
        capture: &mut Option<Capture>,
        mut pfn: u64,
        mut order: u32,
        mt: MigrateType,
        to: FreeTo,
    ) {
        debug_assert!(pfn & ((1 << order) - 1) == 0, "pfn {pfn:#x} not aligned to order {order}");
        self.account_freepages(1 << order, mt);
        let mut buddy_pfn = pfn;
        while order < self.max_order() {
            if capture.is_some() && self.compaction_capture(mm, capture, pfn, order, mt) {
                self.account_freepages(-(1 << order), mt);
                return;
            }
            buddy_pfn = pfn ^ (1 << order);
            let buddy = self.shared.free_block_idx(mm, buddy_pfn, order);
            if buddy == NIL {
                break;
            }
            let mut buddy_mt = mt;
            if order >= self.pageblock_order() {
                buddy_mt = self.pageblock_migratetype(buddy_pfn);
                if buddy_mt != mt && !(mt.is_mergeable() && buddy_mt.is_mergeable()) {
                    break;
                }
            }
            // free_block_idx() has just checked the buddy's state.
            self.unlink_free_block(mm, buddy, order, buddy_mt);
            if buddy_mt != mt {
                self.set_pageblock_range(buddy_pfn, order, mt);
            }
            self.count(VmEvent::WorkMergeStep, 1);
            pfn &= buddy_pfn;
            order += 1;
        }
        let end = match to {
            FreeTo::Tail => ListEnd::Tail,
            FreeTo::Heuristic if self.buddy_merge_likely(mm, pfn, buddy_pfn, order) => ListEnd::Tail,
            FreeTo::Heuristic => ListEnd::Head,
        };
        self.add_to_free_list(mm, pfn, order, mt, end);
    }

    /// `buddy_merge_likely()`: if the buddy of the block one order up is already free, this
    /// block's own buddy is probably about to be freed too; queue this block at the tail so it
    /// is not handed out before that merge can happen.
    #[inline(always)]
    fn buddy_merge_likely<M: PageMap>(&self, mm: M, pfn: u64, buddy_pfn: u64, order: u32) -> bool {
        if order + 1 >= self.max_order() {
            return false;
        }
        let higher = buddy_pfn & pfn;
        self.shared.free_block_idx(mm, higher ^ (1 << (order + 1)), order + 1) != NIL
    }

    /// `expand()`: the block at `pfn` of order `high` was taken for a request of order `low`;
    /// give back the upper halves, largest first, to the heads of the `mt` lists. Returns the
    /// number of pages given back.
    #[inline]
    pub(crate) fn expand<M: PageMap>(
        &self,
        mm: M,
        pfn: u64,
        low: u32,
        mut high: u32,
        mt: MigrateType,
    ) -> u64 {
        let mut added = 0;
        while high > low {
            high -= 1;
            let size = 1u64 << high;
            self.add_to_free_list(mm, pfn + size, high, mt, ListEnd::Head);
            added += size;
        }
        added
    }

    /// `page_del_and_expand()`: take the free block at `pfn` (order `high`, `mt` list), keep
    /// its first 2^`low` pages and free the rest; net free pages drop by exactly 2^`low`.
    #[inline]
    pub(crate) fn page_del_and_expand<M: PageMap>(
        &self,
        mm: M,
        pfn: u64,
        low: u32,
        high: u32,
        mt: MigrateType,
    ) {
        self.del_from_free_list(mm, pfn, high, mt);
        let added = self.expand(mm, pfn, low, high, mt);
        self.account_freepages(-((1i64 << high) - added as i64), mt);
    }

    /// `__rmqueue_smallest()`: the smallest free block of at least `order` on the `mt` lists,
    /// split down to `order`. Each order's list head is one probe of work.
    pub(crate) fn __rmqueue_smallest(&mut self, order: u32, mt: MigrateType) -> Option<u64> {
        for cur in order..=self.max_order() {
            let Some(pfn) = self.free_list_first(cur, mt) else {
                continue;
            };
            with_pages!(self.shared.memmap, mm => self.page_del_and_expand(mm, pfn, order, cur, mt));
            let percpu_refill = self.pcp_allowed_order(order) && mt.is_mergeable();
            self.emit(|| TraceEvent::PageAllocZoneLocked { pfn, order, migratetype: mt, percpu_refill });
            return Some(pfn);
        }
        None
    }

    /// `pcp_allowed_order()` (see [`crate::ZoneShared::pcp_allowed_order`]).
    #[inline]
    pub fn pcp_allowed_order(&self, order: u32) -> bool {
        self.shared.pcp_allowed_order(order)
    }
}
