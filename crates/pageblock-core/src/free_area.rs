//! Free-list primitives and free-page accounting (6.10+ "freelist hygiene":
//! `account_freepages`, `__add_to_free_list`, `__del_page_from_free_list`,
//! `move_to_free_list`, and seed 000's per-migratetype counts).
//!
//! Every change to a free list goes through these four functions, so the counts are exact by
//! construction:
//!
//! * list membership, `nr_free[order]` and `mt_nr_free[order][mt]` change together in
//!   add/del/move;
//! * `NR_FREE_PAGES_BLOCKS` follows list membership of blocks ≥ `pageblock_order` (not
//!   isolated);
//! * `NR_FREE_PAGES`, `NR_FREE_CMA_PAGES` and `nr_free_highatomic` are changed only by
//!   [`Zone::account_freepages`], which callers invoke with the net change — adding and
//!   removing a block does *not* account by itself, because a split or merge moves pages
//!   between lists without changing how many are free.

use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::stats::ZoneStat;
use crate::zone::Zone;

/// Where a block goes on its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListEnd {
    /// Allocated first (cache-hot, the default).
    Head,
    /// Allocated last (cold, or likely to merge soon).
    Tail,
}

impl Zone {
    /// `account_freepages()`: change the free-page statistics by `nr` pages of type `mt`.
    /// Isolated pages are not free memory; CMA and HighAtomic pages are, and are also
    /// counted on their own.
    #[inline]
    pub(crate) fn account_freepages(&self, nr: i64, mt: MigrateType) {
        let c = &self.shared.counters;
        match mt {
            MigrateType::Isolate => return,
            MigrateType::Cma => c.zone_stat[ZoneStat::NrFreeCmaPages as usize].add_signed(nr),
            MigrateType::HighAtomic => c.nr_free_highatomic.add_signed(nr),
            MigrateType::Unmovable | MigrateType::Movable | MigrateType::Reclaimable => {}
        }
        c.zone_stat[ZoneStat::NrFreePages as usize].add_signed(nr);
    }

    /// `NR_FREE_PAGES_BLOCKS` tracks whole free pageblocks of non-isolated types.
    #[inline]
    fn account_free_blocks(&self, order: u32, mt: MigrateType, sign: i64) {
        if order >= self.pageblock_order() && mt != MigrateType::Isolate {
            self.shared.counters.zone_stat[ZoneStat::NrFreePagesBlocks as usize].add_signed(sign << order);
        }
    }

    /// `__add_to_free_list()`: make the page at `pfn` the head of a free block of `order` and
    /// link it on `free_list[order][mt]`.
    #[inline]
    pub(crate) fn add_to_free_list(&mut self, pfn: u64, order: u32, mt: MigrateType, end: ListEnd) {
        let idx = self.idx(pfn);
        let mm = &self.shared.memmap;
        debug_assert_eq!(
            mm.info(idx).state,
            PageState::Tail,
            "pfn {pfn:#x} order {order} already heads a block"
        );
        mm.set_head(idx, PageState::Buddy, order);
        let list = &mut self.free_area[order as usize][mt as usize];
        match end {
            ListEnd::Head => list.add_head(mm, idx),
            ListEnd::Tail => list.add_tail(mm, idx),
        }
        let c = &self.shared.counters;
        c.nr_free[order as usize].add(1);
        c.mt_nr_free[order as usize][mt as usize].add(1);
        self.account_free_blocks(order, mt, 1);
    }

    /// `__del_page_from_free_list()`: unlink the free block at `pfn` (of `order`, on the `mt`
    /// list) and make its head a plain page again. Free-page statistics are not changed.
    #[inline]
    pub(crate) fn del_from_free_list(&mut self, pfn: u64, order: u32, mt: MigrateType) {
        let idx = self.idx(pfn);
        let mm = &self.shared.memmap;
        let info = mm.info(idx);
        assert!(
            info.state == PageState::Buddy && info.order == order,
            "pfn {pfn:#x}: expected a free block of order {order} on the {mt:?} list, found {info:?}"
        );
        self.free_area[order as usize][mt as usize].del(mm, idx);
        mm.clear(idx);
        let c = &self.shared.counters;
        c.nr_free[order as usize].sub(1);
        c.mt_nr_free[order as usize][mt as usize].sub(1);
        self.account_free_blocks(order, mt, -1);
    }

    /// `del_page_from_free_list()`: unlink and account the pages as no longer free.
    #[inline]
    pub(crate) fn del_page_from_free_list(&mut self, pfn: u64, order: u32, mt: MigrateType) {
        self.del_from_free_list(pfn, order, mt);
        self.account_freepages(-(1 << order), mt);
    }

    /// `move_to_free_list()`: move a free block to the tail of another type's list, with the
    /// accounting of both types.
    pub(crate) fn move_to_free_list(
        &mut self,
        pfn: u64,
        order: u32,
        old_mt: MigrateType,
        new_mt: MigrateType,
    ) {
        let idx = self.idx(pfn);
        let mm = &self.shared.memmap;
        debug_assert_eq!(mm.info(idx).state, PageState::Buddy);
        self.free_area[order as usize][old_mt as usize].del(mm, idx);
        self.free_area[order as usize][new_mt as usize].add_tail(mm, idx);
        let c = &self.shared.counters;
        c.mt_nr_free[order as usize][old_mt as usize].sub(1);
        c.mt_nr_free[order as usize][new_mt as usize].add(1);
        self.account_free_blocks(order, old_mt, -1);
        self.account_free_blocks(order, new_mt, 1);
        self.account_freepages(-(1 << order), old_mt);
        self.account_freepages(1 << order, new_mt);
        self.count(crate::stats::VmEvent::WorkBlockMove, 1);
    }

    /// The first (head) block of `free_list[order][mt]`, counting the probe as work.
    #[inline]
    pub(crate) fn free_list_first(&self, order: u32, mt: MigrateType) -> Option<u64> {
        self.count(crate::stats::VmEvent::WorkFreelistProbe, 1);
        self.free_area[order as usize][mt as usize].first().map(|idx| self.pfn_at(idx))
    }

    /// True if `free_list[order][mt]` is empty (`free_area_empty`).
    #[inline]
    pub(crate) fn free_list_empty(&self, order: u32, mt: MigrateType) -> bool {
        self.free_area[order as usize][mt as usize].is_empty()
    }

    /// `move_freepages_block()`: move every free block inside the pageblock containing `pfn`
    /// from the `old_mt` lists to the `new_mt` lists and retag the pageblock. Returns the
    /// number of free pages moved, or `None` if the pageblock straddles the zone boundary.
    pub(crate) fn move_freepages_block(
        &mut self,
        pfn: u64,
        old_mt: MigrateType,
        new_mt: MigrateType,
    ) -> Option<u64> {
        if self.pageblock_straddles_zone(pfn) {
            return None;
        }
        let pb = self.pageblock_nr_pages();
        let start = pfn & !(pb - 1);
        let mut moved = 0;
        let mut p = start;
        while p < start + pb {
            let info = self.shared.memmap.info(self.idx(p));
            match info.state {
                PageState::Buddy => {
                    self.move_to_free_list(p, info.order, old_mt, new_mt);
                    moved += 1 << info.order;
                    p += 1 << info.order;
                }
                PageState::Allocated | PageState::Pcp | PageState::Isolated => p += 1 << info.order,
                PageState::Tail => p += 1,
            }
        }
        self.shared.pageblocks.set_migratetype(self.block_of(start), new_mt);
        Some(moved)
    }
}
