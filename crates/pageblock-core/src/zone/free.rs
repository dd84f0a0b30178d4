//! A zone's part of freeing (`free_one_page`, `free_pcppages_bulk`'s per-block step) and the
//! misuse checks every free passes first (the entry point is [`crate::page_alloc`]).
//!
//! The kernel trusts its callers (a bad free corrupts memory and is caught, if at all, by
//! debug checks). A user-space allocator serving untrusted callers must not: every way a
//! caller can get a free wrong is detected *before* anything changes, reported as a
//! [`FreeError`], and leaves the zone — lists, counters, pageblock bits — exactly as it was.

use std::fmt;

use crate::memmap::pagemap::{with_pages, PageMap};
use crate::memmap::{self, AllocTag, Memmap, PageInfo, PageState, NIL};
use crate::policy::BulkFree;
use crate::stats::VmEvent;
use crate::trace::TraceEvent;
use crate::types::Pfn;
use crate::zone::buddy::FreeTo;
use crate::zone::capture::Capture;
use crate::zone::{Zone, ZoneShared};

/// A free that was refused. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The pfn is not in this zone.
    OutOfRange {
        /// The pfn given.
        pfn: Pfn,
    },
    /// The order exceeds the zone's `MAX_PAGE_ORDER`.
    OrderTooLarge {
        /// The order given.
        order: u32,
    },
    /// A block of this order cannot start at this pfn.
    Unaligned {
        /// The pfn given.
        pfn: Pfn,
        /// The order given.
        order: u32,
    },
    /// The block is already free (on a buddy or per-CPU list, or isolated).
    DoubleFree {
        /// The pfn given.
        pfn: Pfn,
    },
    /// The pfn heads an allocated block of another order.
    WrongOrder {
        /// The pfn given.
        pfn: Pfn,
        /// The order given.
        order: u32,
        /// The order it was allocated with.
        allocated_order: u32,
    },
    /// The pfn does not head an allocated block (it is inside one, or inside a free block).
    NotAllocated {
        /// The pfn given.
        pfn: Pfn,
    },
    /// The pfn lies in a block a movable handle owns (its head or inside it, whatever the
    /// order given): only the handle frees it.
    HandleOwned {
        /// The pfn given.
        pfn: Pfn,
    },
}

/// Who frees an allocated block: a block published under a movable handle
/// ([`AllocTag::handle`]) only its handle, every other block the caller it was handed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The caller the block was handed to (`free_pages`).
    Caller,
    /// The movable handle the block was published under (its free, or compaction freeing
    /// the old copy of a block it moved).
    Handle,
}

impl Owner {
    /// Who frees a block allocated with `tag`.
    pub const fn of(tag: AllocTag) -> Owner {
        if tag.handle {
            Owner::Handle
        } else {
            Owner::Caller
        }
    }

    /// True if raw state `word` heads an allocated block of `order` this owner frees.
    #[inline(always)]
    const fn frees(self, word: u32, order: u32) -> bool {
        match self {
            Owner::Caller => Memmap::word_is_allocated(word, order),
            Owner::Handle => Memmap::word_is_handle(word, order),
        }
    }
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::OutOfRange { pfn } => write!(f, "pfn {pfn} is outside the zone"),
            FreeError::OrderTooLarge { order } => write!(f, "order {order} exceeds MAX_PAGE_ORDER"),
            FreeError::Unaligned { pfn, order } => {
                write!(f, "pfn {pfn} is not aligned to order {order}")
            }
            FreeError::DoubleFree { pfn } => write!(f, "pfn {pfn} is already free (double free)"),
            FreeError::WrongOrder { pfn, order, allocated_order } => {
                write!(f, "pfn {pfn} was allocated with order {allocated_order}, freed with order {order}")
            }
            FreeError::NotAllocated { pfn } => {
                write!(f, "pfn {pfn} does not start an allocated block")
            }
            FreeError::HandleOwned { pfn } => {
                write!(f, "pfn {pfn} belongs to a movable handle: only free_movable frees it")
            }
        }
    }
}

impl std::error::Error for FreeError {}

/// A batch free ([`crate::free_pages::free_pages_batch`]) that stopped at a refused block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeBatchError {
    /// Blocks freed before the refused one (its index in the batch); it and the blocks after
    /// it were not touched.
    pub freed: usize,
    /// Why the block was refused.
    pub error: FreeError,
}

impl fmt::Display for FreeBatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {} of the batch: {} (the blocks before it were freed)", self.freed, self.error)
    }
}

impl std::error::Error for FreeBatchError {}

impl ZoneShared {
    /// Check that `(pfn, order)` names a block this zone handed out to a caller and has not
    /// taken back. Reads the memmap without the zone lock; returns the page's state on
    /// success.
    pub fn check_allocated(&self, pfn: Pfn, order: u32) -> Result<PageInfo, FreeError> {
        self.allocated_word(pfn, order, Owner::Caller)
            .map(|_| self.memmap.info((pfn.0 - self.config().start_pfn) as u32))
    }

    /// The fast form of [`ZoneShared::check_allocated`]: the page's raw state word if
    /// `(pfn, order)` heads an allocated block that `owner` frees, for a compare-and-swap
    /// that claims it. Either owner's test is one compare of the word.
    #[inline]
    pub fn allocated_word(&self, pfn: Pfn, order: u32, owner: Owner) -> Result<u32, FreeError> {
        let cfg = self.config();
        let idx = pfn.0.wrapping_sub(cfg.start_pfn);
        // One range test covers "below the zone" too (the subtraction wraps); the order is
        // checked first so that no shift below can overflow.
        let pages = self.memmap.len() as u64;
        let mut seen = None;
        if order <= cfg.max_order && idx < pages && pfn.is_aligned(order) && idx + (1 << order) <= pages {
            let word = self.memmap.info_word(idx as u32);
            if owner.frees(word, order) {
                return Ok(word);
            }
            seen = Some(word);
        }
        Err(self.free_error(pfn, order, owner, seen))
    }

    /// Why `(pfn, order)` cannot be freed by `owner`, judged from `seen`, the state word
    /// the test read (if it read one): a block isolated by compaction and put back since
    /// was refused as isolated, not as what it is again now.
    #[cold]
    fn free_error(&self, pfn: Pfn, order: u32, owner: Owner, seen: Option<u32>) -> FreeError {
        let cfg = self.config();
        if pfn.0 < cfg.start_pfn || pfn.0 >= cfg.end_pfn() {
            return FreeError::OutOfRange { pfn };
        }
        if order > cfg.max_order {
            return FreeError::OrderTooLarge { order };
        }
        let info = seen.map_or_else(|| self.memmap.info((pfn.0 - cfg.start_pfn) as u32), PageInfo::from_word);
        if owner == Owner::Caller && self.in_handle_block(pfn.0, info) {
            return FreeError::HandleOwned { pfn };
        }
        if !pfn.is_aligned(order) || pfn.0 + (1 << order) > cfg.end_pfn() {
            return FreeError::Unaligned { pfn, order };
        }
        match info.state {
            // A handle freeing a block its caller owns: a bug in the handle table.
            PageState::Allocated if Owner::of(info.tag) != owner => FreeError::NotAllocated { pfn },
            PageState::Allocated => FreeError::WrongOrder { pfn, order, allocated_order: info.order },
            PageState::Buddy | PageState::Pcp | PageState::Isolated => FreeError::DoubleFree { pfn },
            PageState::Tail | PageState::Reserved | PageState::Offline => FreeError::NotAllocated { pfn },
        }
    }

    /// True if `pfn` (in the zone, its state `info`) lies in a block a movable handle owns:
    /// the block it heads, or else the block its tail page lies in.
    fn in_handle_block(&self, pfn: u64, info: PageInfo) -> bool {
        let block = if info.state == PageState::Tail {
            self.memmap.tail_block_info(self.config().start_pfn, pfn, self.config().max_order)
        } else {
            Some(info)
        };
        block.is_some_and(|b| b.state == PageState::Allocated && b.tag.handle)
    }

    /// Validate a free by `owner` and take the block away from it in one atomic step: the
    /// page goes from its `Allocated` state to `to`. Two threads freeing the same block at
    /// once cannot both succeed: the loser gets [`FreeError::DoubleFree`].
    #[inline]
    pub fn claim_for_free(&self, pfn: Pfn, order: u32, to: PageInfo, owner: Owner) -> Result<(), FreeError> {
        let word = self.allocated_word(pfn, order, owner)?;
        let idx = (pfn.0 - self.config().start_pfn) as u32;
        self.memmap.compare_exchange_word(idx, word, to).map_err(|_| FreeError::DoubleFree { pfn })
    }
}

impl ZoneShared {
    /// Pin or unpin an allocated block (`pin_user_pages` and its release): a pinned block
    /// cannot be moved by compaction, whatever it was allocated as. Only blocks allocated
    /// movable can be unpinned back to movable. Misuse changes nothing.
    pub fn set_pinned(&self, pfn: Pfn, order: u32, pinned: bool) -> Result<(), FreeError> {
        let word = self.allocated_word(pfn, order, Owner::Caller)?;
        let mut info = PageInfo::from_word(word);
        info.tag.movable = !pinned && info.tag.migratetype.is_movable();
        let idx = (pfn.0 - self.config().start_pfn) as u32;
        self.memmap.compare_exchange_word(idx, word, info).map_err(|_| FreeError::DoubleFree { pfn })
    }

    /// Publish a movable block its caller owns under a movable handle (`folio_add_lru`): it
    /// keeps its order, is tagged [`AllocTag::HANDLE`] and from now on only
    /// [`Owner::Handle`] frees it. The caller allocated it with a movable mask. Misuse
    /// changes nothing: `(pfn, order)` must head an allocated block a caller owns, else the
    /// reason it does not is returned.
    pub fn set_handle_owned(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        let word = self.allocated_word(pfn, order, Owner::Caller)?;
        let handle = PageInfo { state: PageState::Allocated, order, tag: AllocTag::HANDLE };
        let idx = (pfn.0 - self.config().start_pfn) as u32;
        self.memmap.compare_exchange_word(idx, word, handle).map_err(|_| FreeError::DoubleFree { pfn })
    }
}

impl Zone {
    /// Check that `(pfn, order)` names a block this zone handed out and has not taken back.
    pub fn check_allocated(&self, pfn: Pfn, order: u32) -> Result<PageInfo, FreeError> {
        self.shared.check_allocated(pfn, order)
    }

    /// `free_one_page()` under the zone lock: validate a free by `owner` of a block this zone
    /// handed out, take it from its owner, and return it to the buddy lists (the path for
    /// orders the per-CPU lists do not cache, isolated pageblocks, and a contended per-CPU
    /// lock).
    pub(crate) fn free_pages(&mut self, pfn: Pfn, order: u32, owner: Owner) -> Result<(), FreeError> {
        self.shared.claim_for_free(pfn, order, PageInfo::TAIL, owner)?;
        self.count(VmEvent::PgFree, 1 << order);
        self.split_large_buddy(pfn.0, order, FreeTo::Heuristic);
        Ok(())
    }

    /// `free_pcppages_bulk()`'s per-block step: return a block that sits on a per-CPU list
    /// (state [`PageState::Pcp`]) to the buddy lists with its pageblock's current type.
    /// Per-CPU lists are the allocator's own data: a block that is not a per-CPU block of
    /// that order is a bug, caught by a debug assertion and by `verify()`, as the kernel
    /// checks it only under `CONFIG_DEBUG_VM`.
    pub(crate) fn free_pcp_page(&mut self, pfn: Pfn, order: u32) {
        self.with_capture(
            |z, capture| with_pages!(z.shared.memmap, mm => z.free_pcp_page_in(mm, capture, pfn, order)),
        );
    }

    /// [`Zone::free_pcp_page`] in a view of the memmap, with the zone's capture wish copied
    /// out (see [`Zone::__free_one_page`]).
    #[inline(always)]
    fn free_pcp_page_in<M: PageMap>(&self, mm: M, capture: &mut Option<Capture>, pfn: Pfn, order: u32) {
        let idx = self.idx(pfn.0);
        // The free fast path's compare-and-swap made the block a per-CPU block before it
        // went on the list, so this holds by construction (verify() checks it in tests).
        debug_assert!(
            mm.heads(idx, PageState::Pcp, order),
            "pfn {pfn} order {order}: not a per-CPU block ({:?})",
            mm.info(idx)
        );
        mm.clear(idx);
        let mt = self.pageblock_migratetype(pfn.0);
        self.emit(|| TraceEvent::PagePcpuDrain { pfn: pfn.0, order, migratetype: mt });
        if order <= self.pageblock_order() {
            // split_large_buddy()'s common case, with the type just read.
            self.__free_one_page(mm, capture, pfn.0, order, mt, FreeTo::Heuristic);
        } else {
            self.split_large_buddy_in(mm, capture, pfn.0, order, FreeTo::Heuristic);
        }
    }

    /// `free_pcppages_bulk()` after the blocks were taken off their per-CPU lists: one zone
    /// lock hold for the whole batch, one memmap view and one copy of the capture wish. The
    /// prefetches differ by `SpeedOnly::bulk_free`; the blocks, their order and every decision
    /// do not.
    pub(crate) fn free_pcppages_bulk(&mut self, blocks: &[(Pfn, u32)]) {
        self.with_capture(
            |z, capture| with_pages!(z.shared.memmap, mm => z.free_pcppages_bulk_in(mm, capture, blocks)),
        );
    }

    #[inline(always)]
    fn free_pcppages_bulk_in<M: PageMap>(&self, mm: M, capture: &mut Option<Capture>, blocks: &[(Pfn, u32)]) {
        match self.policy().speed_only.bulk_free {
            BulkFree::Pipelined => self.free_pcppages_pipelined(mm, capture, blocks),
            BulkFree::SinglePass => {
                // The kernel takes each page off its list under the lock (a step of the walk
                // through struct page), prefetches its buddy if seed 001 is on, and merges it.
                // `prefetch_nr = pcp->batch`: the batch the zone's pagesets were given.
                let prefetch_nr = if self.policy().speed_only.buddy_prefetch {
                    self.shared.pageset().batch as usize
                } else {
                    0
                };
                let mut dep = 0;
                for (i, &(pfn, order)) in blocks.iter().enumerate() {
                    dep = self.shared.pcp_walk_step(mm, pfn.0, order, i < prefetch_nr, dep);
                    self.free_pcp_page_in(mm, capture, pfn, order);
                }
            }
            // The walk ran before the lock was taken (`PerCpuPages::free_pcppages_bulk`).
            BulkFree::TwoPass => {
                for &(pfn, order) in blocks {
                    self.free_pcp_page_in(mm, capture, pfn, order);
                }
            }
        }
    }

    /// [`BulkFree::Pipelined`]: a software pipeline over the batch. While block `i` merges,
    /// the state of block `i + AHEAD`'s buddy is on its way; for block `i + AHEAD / 2`, its
    /// own link record is fetched (the list insertion writes it), and its buddy's state has
    /// arrived: if that buddy is free (the merge will unlink it), its link record is fetched
    /// too; block `i + AHEAD / 4`'s buddy record has arrived and names the list neighbours
    /// the unlink will write, which are fetched last. A merge earlier in the batch can
    /// change a list under a prefetch; that only wastes the prefetch. `AHEAD` = 8 was the
    /// best of 8–24 (by 1–2%) for 900k random-order frees over 4 GiB in the split layout.
    #[inline(always)]
    fn free_pcppages_pipelined<M: PageMap>(
        &self,
        mm: M,
        capture: &mut Option<Capture>,
        blocks: &[(Pfn, u32)],
    ) {
        const AHEAD: usize = 8;
        // Stage two's finding for blocks i + 4 ..= i + 8: the free buddy's index, or NIL.
        let mut free_buddy = [NIL; AHEAD / 2];
        for (i, &(pfn, order)) in blocks.iter().enumerate() {
            if let Some(&(p, o)) = blocks.get(i + AHEAD) {
                self.shared.prefetch_buddy(mm, p.0, o);
            }
            if let Some(&(p, o)) = blocks.get(i + AHEAD / 2) {
                mm.prefetch_links(self.idx(p.0));
                let buddy = self.shared.free_block_idx(mm, p.0 ^ (1 << o), o);
                mm.prefetch_links(buddy);
                free_buddy[(i + AHEAD / 2) % (AHEAD / 2)] = buddy;
            }
            let buddy = free_buddy[(i + AHEAD / 4) % (AHEAD / 2)];
            if buddy != NIL && i + AHEAD / 4 < blocks.len() {
                mm.prefetch_links(mm.next(buddy));
                mm.prefetch_links(mm.prev(buddy));
            }
            self.free_pcp_page_in(mm, capture, pfn, order);
        }
    }
}

impl ZoneShared {
    /// One step of the kernel's walk down a per-CPU list, through `struct page` (the
    /// [`BulkFree::TwoPass`] and [`BulkFree::SinglePass`] models): with `buddy_prefetch`,
    /// seed 001's prefetch of the buddy of the block of `order` at `pfn`, which waits for
    /// the previous step (`dep`) to name the page; then the step's own load. Returns what the
    /// next step depends on. Timing only.
    #[inline]
    pub(crate) fn pcp_walk_step<M: PageMap>(
        &self,
        mm: M,
        pfn: u64,
        order: u32,
        buddy_prefetch: bool,
        dep: u32,
    ) -> u32 {
        if buddy_prefetch {
            self.prefetch_buddy(mm, memmap::after(pfn, dep), order);
        }
        mm.walk_step((pfn - self.config().start_pfn) as u32, dep)
    }

    /// Prefetch the state of the buddy of the block of `order` at `pfn` (in the split layout
    /// the next orders' buddies share its line up to order 4). Hints only: nothing
    /// observable changes.
    #[inline]
    pub(crate) fn prefetch_buddy<M: PageMap>(&self, mm: M, pfn: u64, order: u32) {
        self.prefetch_state(mm, pfn ^ (1 << order));
    }

    /// Prefetch the state word of the page at `pfn` (a hint: a pfn outside the zone is
    /// ignored).
    #[inline]
    pub(crate) fn prefetch_state<M: PageMap>(&self, mm: M, pfn: u64) {
        if let Some(idx) = self.page_idx(pfn) {
            mm.prefetch_state(idx);
        }
    }

    /// `page_is_buddy()`: the memmap index of `pfn` if it heads a free block of exactly
    /// `order` in this zone, else [`NIL`]. Read without the zone lock it is only a hint
    /// (the pipelined drain's prefetches).
    #[inline]
    pub(crate) fn free_block_idx<M: PageMap>(&self, mm: M, pfn: u64, order: u32) -> u32 {
        match self.page_idx(pfn) {
            Some(idx) if mm.heads(idx, PageState::Buddy, order) => idx,
            _ => NIL,
        }
    }
}
