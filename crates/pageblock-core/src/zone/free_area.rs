//! The free areas (`zone->free_area[order]`: one free list per migratetype, `nr_free`, and
//! seed 000's per-migratetype counts), their memory layout (seed 002's [`FreeAreaLayout`]), and the list
//! primitives with free-page accounting (6.10+ "freelist hygiene": `account_freepages`,
//! `__add_to_free_list`, `__del_page_from_free_list`, `move_to_free_list`).
//!
//! Every change to a free list goes through these four functions, so the counts are exact by
//! construction:
//!
//! * list membership, `nr_free[order]` and (in layouts that keep them) the per-migratetype
//!   counts change together in add/del/move;
//! * `NR_FREE_PAGES_BLOCKS` follows list membership of blocks ≥ `pageblock_order` (not
//!   isolated);
//! * `NR_FREE_PAGES`, `NR_FREE_CMA_PAGES` and `nr_free_highatomic` are changed only by
//!   `Zone::account_freepages`, which callers invoke with the net change — adding and
//!   removing a block does *not* account by itself, because a split or merge moves pages
//!   between lists without changing how many are free.
//!
//! The free areas live in [`crate::ZoneShared`]: the zone lock holder writes them, and the
//! counts can be read by anyone (the list heads too, for emptiness).

use crate::list::ListHead;
use crate::memmap::pagemap::PageMap;
use crate::memmap::PageState;
use crate::migratetype::{MigrateType, MIGRATE_TYPES};
use crate::policy::FreeAreaLayout;
use crate::stats::{Counter, ZoneStat};
use crate::types::NR_ORDER_SLOTS;
use crate::zone::Zone;

/// `{ free_list[MT]; nr_free }`.
#[derive(Default)]
#[repr(C)]
struct PlainArea {
    lists: [ListHead; MIGRATE_TYPES],
    nr_free: Counter,
}

/// `{ free_list[MT]; nr_free; mt_nr_free[MT] }`.
#[derive(Default)]
#[repr(C)]
struct CountsArea {
    lists: [ListHead; MIGRATE_TYPES],
    nr_free: Counter,
    mt_nr_free: [Counter; MIGRATE_TYPES],
}

/// One list and its count.
#[derive(Default)]
#[repr(C)]
struct MtList {
    list: ListHead,
    nr_free: Counter,
}

/// `{ { free_list; nr_free }[MT]; nr_free }`.
#[derive(Default)]
#[repr(C)]
struct PerListArea {
    lists: [MtList; MIGRATE_TYPES],
    nr_free: Counter,
}

enum Storage {
    Plain(Box<[PlainArea]>),
    Counts(Box<[CountsArea]>),
    PerList(Box<[PerListArea]>),
}

/// `zone->free_area[NR_PAGE_ORDERS]` in one of the [`FreeAreaLayout`]s.
///
/// # Invariants
///
/// * `nr_free(o) == Σ_mt len(list(o, mt))`;
/// * `mt_nr_free(o, mt) == Some(len(list(o, mt)))` in the layouts that count per type.
pub struct FreeAreas {
    storage: Storage,
}

impl std::fmt::Debug for FreeAreas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreeAreas").field("layout", &self.layout()).finish_non_exhaustive()
    }
}

fn areas<T: Default>() -> Box<[T]> {
    (0..NR_ORDER_SLOTS).map(|_| T::default()).collect()
}

impl FreeAreas {
    /// Empty free areas in `layout`.
    pub fn new(layout: FreeAreaLayout) -> FreeAreas {
        let storage = match layout {
            FreeAreaLayout::Plain => Storage::Plain(areas()),
            FreeAreaLayout::Counts => Storage::Counts(areas()),
            FreeAreaLayout::PerList => Storage::PerList(areas()),
        };
        FreeAreas { storage }
    }

    /// The layout.
    pub fn layout(&self) -> FreeAreaLayout {
        match self.storage {
            Storage::Plain(_) => FreeAreaLayout::Plain,
            Storage::Counts(_) => FreeAreaLayout::Counts,
            Storage::PerList(_) => FreeAreaLayout::PerList,
        }
    }

    /// `free_area[order].free_list[mt]`.
    #[inline]
    pub fn list(&self, order: u32, mt: MigrateType) -> &ListHead {
        self.entry(order, mt).list
    }

    #[inline]
    fn nr_free_counter(&self, order: u32) -> &Counter {
        match &self.storage {
            Storage::Plain(a) => &a[order as usize].nr_free,
            Storage::Counts(a) => &a[order as usize].nr_free,
            Storage::PerList(a) => &a[order as usize].nr_free,
        }
    }

    #[inline]
    fn mt_counter(&self, order: u32, mt: MigrateType) -> Option<&Counter> {
        self.entry(order, mt).mt_nr_free
    }

    /// `free_area[order].nr_free`: free blocks of `order`, all types.
    #[inline]
    pub fn nr_free(&self, order: u32) -> u64 {
        self.nr_free_counter(order).get()
    }

    /// `nr_free` of orders `0..=max_order` (buddyinfo's row, the extfrag formulas' input).
    pub fn nr_free_per_order(&self, max_order: u32) -> Vec<u64> {
        (0..=max_order).map(|o| self.nr_free(o)).collect()
    }

    /// Free blocks of `order` on the `mt` list, if this layout counts them.
    #[inline]
    pub fn mt_nr_free(&self, order: u32, mt: MigrateType) -> Option<u64> {
        self.mt_counter(order, mt).map(Counter::get)
    }

    /// `!free_area_empty(area, mt)`: from the count where there is one (seed 000 patch 3),
    /// from the list head otherwise. Safe without the zone lock.
    #[inline]
    pub fn has_free(&self, order: u32, mt: MigrateType) -> bool {
        match self.mt_counter(order, mt) {
            Some(c) => c.get() > 0,
            None => !self.list(order, mt).is_empty(),
        }
    }

    /// The counters of `list(order, mt)`: the order's `nr_free`, and the list's own count in
    /// the layouts that keep one (for the checker's tests, which corrupt them).
    #[cfg(test)]
    pub(crate) fn counters(&self, order: u32, mt: MigrateType) -> (&Counter, Option<&Counter>) {
        let e = self.entry(order, mt);
        (e.nr_free, e.mt_nr_free)
    }

    /// Count a block added to (`+1`) or removed from (`-1`) `list(order, mt)`.
    #[inline]
    fn note(&self, order: u32, mt: MigrateType, delta: i64) {
        self.entry(order, mt).note(delta);
    }

    /// The list of `(order, mt)` with the counters that track it, found with one look at
    /// the layout (the merge loop's add and unlink use all three).
    #[inline(always)]
    fn entry(&self, order: u32, mt: MigrateType) -> FreeListEntry<'_> {
        let (o, m) = (order as usize, mt as usize);
        match &self.storage {
            Storage::Plain(a) => {
                FreeListEntry { list: &a[o].lists[m], nr_free: &a[o].nr_free, mt_nr_free: None }
            }
            Storage::Counts(a) => {
                let area = &a[o];
                FreeListEntry {
                    list: &area.lists[m],
                    nr_free: &area.nr_free,
                    mt_nr_free: Some(&area.mt_nr_free[m]),
                }
            }
            Storage::PerList(a) => {
                let area = &a[o];
                let l = &area.lists[m];
                FreeListEntry { list: &l.list, nr_free: &area.nr_free, mt_nr_free: Some(&l.nr_free) }
            }
        }
    }
}

/// One free list and its counters ([`FreeAreas::entry`]).
struct FreeListEntry<'a> {
    list: &'a ListHead,
    nr_free: &'a Counter,
    mt_nr_free: Option<&'a Counter>,
}

impl FreeListEntry<'_> {
    /// Count a block added (`+1`) or removed (`-1`).
    #[inline(always)]
    fn note(&self, delta: i64) {
        self.nr_free.add_signed(delta);
        if let Some(c) = self.mt_nr_free {
            c.add_signed(delta);
        }
    }
}

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
    /// link it on `free_list[order][mt]`. `mm` is this zone's memmap (as in all of these).
    #[inline(always)]
    pub(crate) fn add_to_free_list<M: PageMap>(
        &self,
        mm: M,
        pfn: u64,
        order: u32,
        mt: MigrateType,
        end: ListEnd,
    ) {
        let idx = self.idx(pfn);
        debug_assert_eq!(
            mm.info(idx).state,
            PageState::Tail,
            "pfn {pfn:#x} order {order} already heads a block"
        );
        mm.set_head(idx, PageState::Buddy, order);
        let entry = self.shared.free_areas.entry(order, mt);
        match end {
            ListEnd::Head => entry.list.add_head(mm, idx),
            ListEnd::Tail => entry.list.add_tail(mm, idx),
        }
        entry.note(1);
        self.account_free_blocks(order, mt, 1);
    }

    /// `__del_page_from_free_list()`: unlink the free block at `pfn` (of `order`, on the `mt`
    /// list) and make its head a plain page again. Free-page statistics are not changed.
    #[inline]
    pub(crate) fn del_from_free_list<M: PageMap>(&self, mm: M, pfn: u64, order: u32, mt: MigrateType) {
        let idx = self.idx(pfn);
        assert!(
            mm.heads(idx, PageState::Buddy, order),
            "pfn {pfn:#x}: expected a free block of order {order} on the {mt:?} list, found {:?}",
            mm.info(idx)
        );
        self.unlink_free_block(mm, idx, order, mt);
    }

    /// [`Zone::del_from_free_list`] for a caller that has just seen page `idx` head a free
    /// block of `order` (the merge loop's `page_is_buddy`), so the check is not repeated.
    #[inline(always)]
    pub(crate) fn unlink_free_block<M: PageMap>(&self, mm: M, idx: u32, order: u32, mt: MigrateType) {
        debug_assert!(
            mm.heads(idx, PageState::Buddy, order),
            "page {idx} is not a free block of order {order}"
        );
        let entry = self.shared.free_areas.entry(order, mt);
        entry.list.del(mm, idx);
        mm.clear(idx);
        entry.note(-1);
        self.account_free_blocks(order, mt, -1);
    }

    /// `del_page_from_free_list()`: unlink and account the pages as no longer free.
    #[inline]
    pub(crate) fn del_page_from_free_list(&self, pfn: u64, order: u32, mt: MigrateType) {
        self.del_from_free_list(self.pages(), pfn, order, mt);
        self.account_freepages(-(1 << order), mt);
    }

    /// `move_to_free_list()`: move a free block to the tail of another type's list, with the
    /// accounting of both types.
    pub(crate) fn move_to_free_list(&self, pfn: u64, order: u32, old_mt: MigrateType, new_mt: MigrateType) {
        let idx = self.idx(pfn);
        let mm = self.pages();
        debug_assert_eq!(mm.info(idx).state, PageState::Buddy);
        let fa = &self.shared.free_areas;
        fa.list(order, old_mt).del(mm, idx);
        fa.list(order, new_mt).add_tail(mm, idx);
        fa.note(order, old_mt, -1);
        fa.note(order, new_mt, 1);
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
        self.shared.free_areas.list(order, mt).first().map(|idx| self.pfn_at(idx))
    }

    /// True if `free_list[order][mt]` is empty (`free_area_empty`).
    #[inline]
    pub(crate) fn free_list_empty(&self, order: u32, mt: MigrateType) -> bool {
        !self.shared.free_areas.has_free(order, mt)
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
        let start = self.idx(pfn & !(pb - 1));
        // Moving blocks between lists changes links, not states: walk a handle of our own.
        let shared = std::sync::Arc::clone(&self.shared);
        let mut moved = 0;
        for e in shared.memmap.extents(start, start + pb as u32) {
            if e.info.state == PageState::Buddy {
                self.move_to_free_list(self.pfn_at(e.idx), e.info.order, old_mt, new_mt);
                moved += e.pages;
            }
        }
        self.set_pageblock_migratetype(self.pfn_at(start), new_mt);
        Some(moved)
    }
}
