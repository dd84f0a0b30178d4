//! Falling back to other migratetypes when the requested type's lists are empty
//! (`__rmqueue`, `enum rmqueue_mode`, `__rmqueue_claim`, `__rmqueue_steal`,
//! `find_suitable_fallback`, `should_try_claim_block`, `try_to_claim_block`).
//!
//! Two steps, each a bigger fragmentation risk than the one before:
//!
//! 1. **Claim** (top-down over orders): take the largest free block of a fallback type and
//!    convert its whole pageblock to the requested type — outright if the free block is a
//!    whole pageblock or more, or if at least half the pageblock is free or already holds
//!    "alike" pages. Future requests of this type then find a home there, which keeps
//!    types grouped.
//! 2. **Steal** (bottom-up): take the smallest free block of a fallback type and leave the
//!    pageblock's type alone. The block is now mixed ("fragmenting"). Not allowed under
//!    ALLOC_NOFRAGMENT.
//!
//! A bulk refill calls `Zone::__rmqueue` many times under one lock hold. With
//! `SeedPatches::rmqueue_mode_memory` (seed 003, 6.16+) it keeps the [`RmqueueMode`] of the last
//! success, so once claiming has failed it is not retried for every page of the batch.

use crate::gfp::AllocFlags;
use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::stats::{VmEvent, ZoneStat};
use crate::trace::TraceEvent;
use crate::zone::Zone;

/// Where `__rmqueue` starts looking (`enum rmqueue_mode`). Each stage falls through to the
/// next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RmqueueMode {
    /// The requested type's own lists.
    Normal,
    /// CMA pageblocks (movable requests only).
    Cma,
    /// Claim a foreign pageblock.
    Claim,
    /// Steal a single block from a foreign pageblock.
    Steal,
}

/// What `find_suitable_fallback` found at one order.
pub(crate) enum Fallback {
    /// A non-empty list of this fallback type.
    Found(MigrateType),
    /// Nothing at this order.
    None,
    /// Blocks this small are not worth claiming: stop the top-down claim scan.
    TooSmallToClaim,
}

impl Zone {
    /// `should_try_claim_block()`: is a free block of `order` big enough to justify converting
    /// its pageblock for a `start_mt` request? Unmovable and reclaimable requests always try
    /// (they pollute wherever they land, so they should at least own the block); movable
    /// requests only for blocks of at least half a pageblock's order.
    fn should_try_claim_block(&self, order: u32, start_mt: MigrateType) -> bool {
        order >= self.pageblock_order()
            || order >= self.pageblock_order() / 2
            || matches!(start_mt, MigrateType::Reclaimable | MigrateType::Unmovable)
            || !self.group_by_mobility
    }

    /// `find_suitable_fallback()` (6.16+ form).
    pub(crate) fn find_suitable_fallback(
        &self,
        order: u32,
        start_mt: MigrateType,
        claimable: bool,
    ) -> Fallback {
        if claimable && !self.should_try_claim_block(order, start_mt) {
            return Fallback::TooSmallToClaim;
        }
        if self.shared.free_areas.nr_free(order) == 0 {
            return Fallback::None;
        }
        for &fmt in start_mt.fallbacks() {
            self.count(VmEvent::WorkFreelistProbe, 1);
            if !self.free_list_empty(order, fmt) {
                return Fallback::Found(fmt);
            }
        }
        Fallback::None
    }

    /// `__rmqueue()`: one block of `order` for `mt`, starting at `*mode` and recording in it
    /// the stage that succeeded.
    pub(crate) fn __rmqueue(
        &mut self,
        order: u32,
        mt: MigrateType,
        flags: AllocFlags,
        mode: &mut RmqueueMode,
    ) -> Option<u64> {
        // Balance movable allocations between CMA and the rest of the zone: take CMA first
        // when it holds more than half of the free memory.
        if flags.contains(AllocFlags::CMA) && self.cma_holds_most_free_memory() {
            if let Some(pfn) = self.__rmqueue_smallest(order, MigrateType::Cma) {
                self.count(VmEvent::PgAllocCma, 1 << order);
                return Some(pfn);
            }
        }
        if *mode <= RmqueueMode::Normal {
            if let Some(pfn) = self.__rmqueue_smallest(order, mt) {
                return Some(pfn);
            }
        }
        if *mode <= RmqueueMode::Cma && flags.contains(AllocFlags::CMA) {
            if let Some(pfn) = self.__rmqueue_smallest(order, MigrateType::Cma) {
                self.count(VmEvent::PgAllocCma, 1 << order);
                *mode = RmqueueMode::Cma;
                return Some(pfn);
            }
        }
        if *mode <= RmqueueMode::Claim {
            if let Some(pfn) = self.__rmqueue_claim(order, mt, flags) {
                // The claimed block refilled the requested type's lists.
                *mode = RmqueueMode::Normal;
                return Some(pfn);
            }
        }
        if !flags.contains(AllocFlags::NOFRAGMENT) {
            if let Some(pfn) = self.__rmqueue_steal(order, mt) {
                *mode = RmqueueMode::Steal;
                return Some(pfn);
            }
        }
        None
    }

    fn cma_holds_most_free_memory(&self) -> bool {
        let c = &self.shared.counters;
        self.config().config_cma
            && c.zone_stat(ZoneStat::NrFreeCmaPages) > c.zone_stat(ZoneStat::NrFreePages) / 2
    }

    /// `__rmqueue_claim()`: scan orders from the top down for a fallback block whose
    /// pageblock can be claimed. With ALLOC_NOFRAGMENT only whole free pageblocks qualify.
    fn __rmqueue_claim(&mut self, order: u32, start_mt: MigrateType, flags: AllocFlags) -> Option<u64> {
        let pbo = self.pageblock_order();
        let min_order = if order < pbo && flags.contains(AllocFlags::NOFRAGMENT) { pbo } else { order };
        for cur in (min_order..=self.max_order()).rev() {
            let fmt = match self.find_suitable_fallback(cur, start_mt, true) {
                Fallback::Found(fmt) => fmt,
                Fallback::None => continue,
                Fallback::TooSmallToClaim => break,
            };
            let candidate = self.free_list_first(cur, fmt)?;
            if let Some(pfn) = self.try_to_claim_block(candidate, cur, order, start_mt, fmt, flags) {
                self.trace_extfrag(pfn, order, cur, start_mt, fmt);
                return Some(pfn);
            }
        }
        None
    }

    /// `__rmqueue_steal()`: the smallest fallback block of at least `order`, split in place;
    /// the pageblock keeps its type and the rest of the block stays on its lists.
    fn __rmqueue_steal(&mut self, order: u32, start_mt: MigrateType) -> Option<u64> {
        for cur in order..=self.max_order() {
            let Fallback::Found(fmt) = self.find_suitable_fallback(cur, start_mt, false) else {
                continue;
            };
            let pfn = self.free_list_first(cur, fmt)?;
            self.page_del_and_expand(self.pages(), pfn, order, cur, fmt);
            self.count(VmEvent::Steal, 1);
            self.trace_extfrag(pfn, order, cur, start_mt, fmt);
            return Some(pfn);
        }
        None
    }

    /// `try_to_claim_block()`: convert the pageblock of the free block at `pfn` (order
    /// `cur_order`, on the `block_mt` list) to `start_mt` and allocate from it.
    fn try_to_claim_block(
        &mut self,
        pfn: u64,
        cur_order: u32,
        order: u32,
        start_mt: MigrateType,
        block_mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u64> {
        if cur_order >= self.pageblock_order() {
            // A whole free pageblock (or more): take it over without polluting anything.
            self.del_page_from_free_list(pfn, cur_order, block_mt);
            self.set_pageblock_range(pfn, cur_order, start_mt);
            let added = self.expand(self.pages(), pfn, order, cur_order, start_mt);
            self.account_freepages(added as i64, start_mt);
            self.count(VmEvent::ClaimWholeBlock, 1);
            return Some(pfn);
        }
        // Mixing types inside a pageblock: ask kswapd/kcompactd to restore some headroom.
        if self.boost_watermark() && flags.contains(AllocFlags::KSWAPD) {
            self.shared.flags.set_boosted_watermark(true);
        }
        if self.pageblock_straddles_zone(pfn) {
            self.count(VmEvent::ClaimFail, 1);
            return None;
        }
        let (free, movable) = self.count_free_and_movable(pfn);
        let alike = if start_mt == MigrateType::Movable {
            movable
        } else if block_mt == MigrateType::Movable {
            self.pageblock_nr_pages() - (free + movable)
        } else {
            // Unmovable <-> reclaimable: no way to tell the pages apart; be conservative.
            0
        };
        // Claim if at least half of the block is free or already alike.
        if free + alike < self.pageblock_nr_pages() / 2 && self.group_by_mobility {
            self.count(VmEvent::ClaimFail, 1);
            return None;
        }
        self.move_freepages_block(pfn, block_mt, start_mt);
        self.count(VmEvent::ClaimPartialBlock, 1);
        self.__rmqueue_smallest(order, start_mt)
    }

    /// Free pages and movable allocated pages in the pageblock containing `pfn`
    /// (`prep_move_freepages_block`'s counts). Per-CPU and isolated pages are neither.
    fn count_free_and_movable(&self, pfn: u64) -> (u64, u64) {
        let pb = self.pageblock_nr_pages();
        let start = self.idx(pfn & !(pb - 1));
        let (mut free, mut movable) = (0, 0);
        for e in self.shared.memmap.extents(start, start + pb as u32) {
            match e.info.state {
                PageState::Buddy => free += e.pages,
                PageState::Allocated if e.info.tag.movable => movable += e.pages,
                _ => {}
            }
        }
        self.count(VmEvent::WorkPagesScanned, pb);
        (free, movable)
    }

    /// `trace_mm_page_alloc_extfrag` and its counters. `change_ownership` is whether the
    /// pageblock now belongs to the requester (read after the claim or steal, as the kernel).
    pub(crate) fn trace_extfrag(
        &self,
        pfn: u64,
        order: u32,
        fallback_order: u32,
        start_mt: MigrateType,
        fmt: MigrateType,
    ) {
        let change_ownership = self.pageblock_migratetype(pfn) == start_mt;
        self.count(VmEvent::Extfrag, 1);
        if fallback_order < self.pageblock_order() {
            self.count(VmEvent::ExtfragFragmenting, 1);
        }
        if change_ownership {
            self.count(VmEvent::ExtfragChangeOwnership, 1);
        }
        let per_type = |mt: MigrateType, [u, m, r]: [VmEvent; 3]| match mt {
            MigrateType::Unmovable => Some(u),
            MigrateType::Movable => Some(m),
            MigrateType::Reclaimable => Some(r),
            _ => None,
        };
        // The defrag_mode series' counters: who took a block over (claimer), who took pages
        // without owning the block (steal), whose block got foreign pages (pollute).
        if change_ownership {
            let ev = per_type(
                start_mt,
                [VmEvent::ClaimerUnmovable, VmEvent::ClaimerMovable, VmEvent::ClaimerReclaimable],
            );
            ev.into_iter().for_each(|e| self.count(e, 1));
        } else {
            let steal = per_type(
                start_mt,
                [VmEvent::StealUnmovable, VmEvent::StealMovable, VmEvent::StealReclaimable],
            );
            let pollute = per_type(
                fmt,
                [VmEvent::PolluteUnmovable, VmEvent::PolluteMovable, VmEvent::PolluteReclaimable],
            );
            steal.into_iter().chain(pollute).for_each(|e| self.count(e, 1));
        }
        self.emit(|| TraceEvent::PageAllocExtfrag {
            pfn,
            alloc_order: order,
            fallback_order,
            alloc_migratetype: start_mt,
            fallback_migratetype: fmt,
            change_ownership,
        });
    }
}
