//! The allocators under comparison, behind one interface.
//!
//! * **pageblock** — [`pageblock::Allocator`] over a 4 GiB arena (its thread-safe API is
//!   the only API, used by every case);
//! * **buddy_system_allocator** — `FrameAllocator<11>` (max order 10, Linux-like), and its
//!   `LockedFrameAllocator<11>` (one spin mutex) for the two-thread cases;
//! * **buddy-alloc** — `BuddyAlloc` over a real, pre-faulted 4 GiB mapping (it keeps its
//!   free lists inside free memory), wrapped in a `std::sync::Mutex` for two threads (the
//!   crate is not thread-safe).
//!
//! Every peer serves frames (4 KiB pages) in blocks of 2^order; the cases never free a
//! block twice, so no peer's misuse handling is exercised.

use std::sync::Mutex;

use buddy_alloc::buddy_alloc::{BuddyAlloc, BuddyAllocParam};
use buddy_system_allocator::{FrameAllocator, LockedFrameAllocator};
use pageblock::arena::Arena;
use pageblock::{Allocator, Gfp, MemmapLayout, Pfn, Policy};

/// Pages in the benchmark region: 4 GiB.
pub const REGION_PAGES: u64 = 1 << 20;
const PAGE: usize = 4096;

/// A frame allocator used from one thread at a time.
pub trait FrameAlloc {
    /// A block of 2^order frames, or `None`.
    fn alloc(&mut self, order: u32) -> Option<u64>;
    /// Give back a block `alloc` returned.
    fn free(&mut self, frame: u64, order: u32);
}

/// A frame allocator shared by threads.
pub trait SharedFrameAlloc: Sync {
    /// A block of 2^order frames, or `None`.
    fn alloc(&self, order: u32) -> Option<u64>;
    /// Give back a block `alloc` returned.
    fn free(&self, frame: u64, order: u32);
}

/// The peers, by the names the report uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerKind {
    /// This project.
    Pageblock,
    /// rCore's buddy_system_allocator.
    BuddySystemAllocator,
    /// jjyr's buddy-alloc.
    BuddyAlloc,
}

impl PeerKind {
    /// All peers, pageblock first.
    pub const ALL: [PeerKind; 3] =
        [PeerKind::Pageblock, PeerKind::BuddySystemAllocator, PeerKind::BuddyAlloc];

    /// Name in tables and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            PeerKind::Pageblock => "pageblock",
            PeerKind::BuddySystemAllocator => "buddy_system_allocator",
            PeerKind::BuddyAlloc => "buddy-alloc",
        }
    }
}

/// pageblock with a given policy (prefetch on or off for the bulk-free comparison).
pub struct PageblockPeer(pub Allocator);

impl PageblockPeer {
    /// A fresh allocator over a 4 GiB arena with two CPU slots. Panics if the mapping fails;
    /// [`PageblockPeer::try_new`] reports it.
    pub fn new(policy: Policy) -> PageblockPeer {
        Self::with_layout(policy, MemmapLayout::Split)
    }

    /// A fresh allocator over a 4 GiB arena with two CPU slots, or why it could not be built.
    pub fn try_new(policy: Policy) -> Result<PageblockPeer, pageblock::ArenaError> {
        Self::try_with_layout(policy, MemmapLayout::Split)
    }

    /// [`PageblockPeer::new`] with the memmap in `layout`.
    pub fn with_layout(policy: Policy, layout: MemmapLayout) -> PageblockPeer {
        match PageblockPeer::try_with_layout(policy, layout) {
            Ok(p) => p,
            Err(e) => panic!("the benchmark's arena was mapped once, then refused: {e}"),
        }
    }

    /// [`PageblockPeer::try_new`] with the memmap in `layout`.
    pub fn try_with_layout(
        policy: Policy,
        layout: MemmapLayout,
    ) -> Result<PageblockPeer, pageblock::ArenaError> {
        Allocator::with_arena_layout(REGION_PAGES * PAGE as u64, 2, layout, policy).map(PageblockPeer)
    }
}

impl SharedFrameAlloc for PageblockPeer {
    #[inline]
    fn alloc(&self, order: u32) -> Option<u64> {
        self.0.alloc_pages(order, Gfp::HIGHUSER_MOVABLE).ok().map(|p| p.0)
    }
    #[inline]
    fn free(&self, frame: u64, order: u32) {
        let r = self.0.free_pages(Pfn(frame), order);
        debug_assert!(r.is_ok(), "{r:?}");
    }
}

impl FrameAlloc for PageblockPeer {
    #[inline]
    fn alloc(&mut self, order: u32) -> Option<u64> {
        SharedFrameAlloc::alloc(self, order)
    }
    #[inline]
    fn free(&mut self, frame: u64, order: u32) {
        SharedFrameAlloc::free(self, frame, order)
    }
}

/// `FrameAllocator<11>`: max order 10, as Linux.
pub struct BsaPeer(FrameAllocator<11>);

impl BsaPeer {
    /// A fresh allocator over frames `0..REGION_PAGES`.
    pub fn new() -> BsaPeer {
        let mut f = FrameAllocator::<11>::new();
        f.add_frame(0, REGION_PAGES as usize);
        BsaPeer(f)
    }
}

impl Default for BsaPeer {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameAlloc for BsaPeer {
    #[inline]
    fn alloc(&mut self, order: u32) -> Option<u64> {
        self.0.alloc(1 << order).map(|f| f as u64)
    }
    #[inline]
    fn free(&mut self, frame: u64, order: u32) {
        self.0.dealloc(frame as usize, 1 << order);
    }
}

/// `LockedFrameAllocator<11>`: the crate's own thread-safe form.
pub struct LockedBsaPeer(LockedFrameAllocator<11>);

impl LockedBsaPeer {
    /// A fresh allocator over frames `0..REGION_PAGES`.
    pub fn new() -> LockedBsaPeer {
        let f = LockedFrameAllocator::<11>::new();
        f.lock().add_frame(0, REGION_PAGES as usize);
        LockedBsaPeer(f)
    }
}

impl Default for LockedBsaPeer {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedFrameAlloc for LockedBsaPeer {
    #[inline]
    fn alloc(&self, order: u32) -> Option<u64> {
        self.0.lock().alloc(1 << order).map(|f| f as u64)
    }
    #[inline]
    fn free(&self, frame: u64, order: u32) {
        self.0.lock().dealloc(frame as usize, 1 << order);
    }
}

/// The memory buddy-alloc runs in: a pre-faulted mapping where its in-band metadata ends
/// exactly where a 4 GiB, 2 MiB-aligned heap begins (as in `peer-bench.md`), so its heap is
/// one order-20 block like the other peers' 4 GiB.
pub struct BuddyAllocRegion {
    arena: Arena,
    /// Where the allocator's range starts: `HEADROOM - metadata` bytes into the arena.
    offset: usize,
}

/// Room in front of the heap for buddy-alloc's metadata (about 772 KiB for 4 GiB).
const HEADROOM: usize = 4 << 20;

impl BuddyAllocRegion {
    /// Map (and with `prefault`, fault in) the region, and find the metadata size by trial:
    /// the range whose `available_bytes()` is exactly the 4 GiB heap. A mapping the system
    /// refuses is an error.
    pub fn new(prefault: bool) -> std::io::Result<BuddyAllocRegion> {
        let arena = Arena::new(REGION_PAGES * PAGE as u64 + HEADROOM as u64)?;
        if prefault {
            // Touch everything now so page faults are not timed (failure only costs accuracy).
            let _ = arena.populate();
        } else {
            // Short runs touch a few pages each in many places: fault them in small.
            arena.no_huge_pages();
        }
        let heap = (REGION_PAGES as usize) * PAGE;
        // Its metadata for a 4 GiB heap: 22 list heads and free-list sentinels, then one alloc
        // and one split bitmap per order (2^(21-k) bits each): 193 pages (~772 KiB). Checked
        // by one trial; if a newer buddy-alloc lays it out differently, search.
        let fits = |offset: usize| {
            let start = arena.base().as_ptr().wrapping_add(offset);
            let param = BuddyAllocParam::new(start, HEADROOM - offset + heap, PAGE);
            // SAFETY: the range lies inside the live mapping; no allocator uses it now.
            unsafe { BuddyAlloc::new(param) }.available_bytes() == heap
        };
        let expected = HEADROOM - 193 * PAGE;
        let offset = if fits(expected) {
            expected
        } else {
            (1..HEADROOM / PAGE)
                .map(|pages| HEADROOM - pages * PAGE)
                .find(|&o| fits(o))
                .expect("metadata < 4 MiB")
        };
        Ok(BuddyAllocRegion { arena, offset })
    }
}

/// buddy-alloc over real memory. Frames are addresses / 4096.
pub struct BuddyAllocPeer<'a> {
    alloc: BuddyAlloc,
    // The memory `alloc` lives in; borrowed so one pre-faulted mapping serves every run.
    _region: &'a BuddyAllocRegion,
}

// SAFETY: BuddyAlloc holds raw pointers into the borrowed region; it is only used by one
// thread at a time (`&mut`, or behind the Mutex of `LockedBuddyAllocPeer`).
unsafe impl Send for BuddyAllocPeer<'_> {}

impl<'a> BuddyAllocPeer<'a> {
    /// A fresh allocator over `region`; the previous allocator over it must be gone.
    pub fn new(region: &'a BuddyAllocRegion) -> BuddyAllocPeer<'a> {
        let start = region.arena.base().as_ptr().wrapping_add(region.offset);
        let param = BuddyAllocParam::new(start, region.arena.len() - region.offset, PAGE);
        // SAFETY: the range is a live mapping that only this allocator uses while it lives.
        let alloc = unsafe { BuddyAlloc::new(param) };
        BuddyAllocPeer { alloc, _region: region }
    }
}

impl FrameAlloc for BuddyAllocPeer<'_> {
    #[inline]
    fn alloc(&mut self, order: u32) -> Option<u64> {
        let p = self.alloc.malloc(PAGE << order);
        (!p.is_null()).then_some(p as u64 / PAGE as u64)
    }
    #[inline]
    fn free(&mut self, frame: u64, _order: u32) {
        self.alloc.free((frame * PAGE as u64) as *mut u8);
    }
}

/// buddy-alloc behind a `std::sync::Mutex` (added here: the crate is not thread-safe).
pub struct LockedBuddyAllocPeer<'a>(pub Mutex<BuddyAllocPeer<'a>>);

impl SharedFrameAlloc for LockedBuddyAllocPeer<'_> {
    #[inline]
    fn alloc(&self, order: u32) -> Option<u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).alloc(order)
    }
    #[inline]
    fn free(&self, frame: u64, order: u32) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).free(frame, order)
    }
}
