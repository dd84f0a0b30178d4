//! The memmap: one small record per base page, the analogue of the kernel's `struct page`.
//!
//! The kernel spends 64 bytes per 4 KiB page. Here a page costs 9 bytes by default, split
//! between a dense array of one-byte state words and link records ([`MemmapLayout::Split`]),
//! so a 64 GiB zone (16 Mi pages) needs 144 MiB of metadata; [`MemmapLayout::Records`] keeps
//! the kernel's shape, one record per page of 12 to 256 bytes (64 for the kernel's footprint,
//! in cache experiments such as seed 001's). Arrays of 2 MiB or more live in huge-page-backed
//! memory (`crate::vmemmap`), as the kernel's memmap does. A page has:
//!
//! * the free-list links (`next`, `prev`: zone-relative page indices, [`NIL`] for none), used
//!   only while the page heads a block that sits on a list (`buddy_list` in the kernel);
//! * a state word: what the page is ([`PageState`]), the order of the block it heads, and the
//!   [`AllocTag`] of the request that allocated it, or of the movable handle that owns it.
//!
//! Every field is an atomic accessed with relaxed loads and stores. Writers are serialised by
//! the lock that owns the page at the time (the zone lock for buddy pages, the owning CPU's
//! lock for per-CPU pages); the atomics exist so that lock-free readers (reports, the runtime's
//! free path validating a pfn) never see a torn value, exactly like the kernel's
//! `READ_ONCE`/`WRITE_ONCE` on `struct page` fields. On x86_64 a relaxed atomic load or store
//! is a plain `mov`.
//!
//! # Invariants
//!
//! * Only the first page of a block carries a non-[`PageState::Tail`] state; every other page
//!   of a free, allocated or per-CPU block is `Tail`. (`verify` walks the zone by extents and
//!   checks that every page is covered exactly once.)
//! * `state == Buddy` ⇔ the page heads a block on `free_area[order].free_list[mt]` for the
//!   block's pageblock type (`PageBuddy` + `buddy_order()`).
//! * Links are meaningful only for pages on a list; stale values elsewhere are never read.

pub mod pagemap;

use std::sync::atomic::{AtomicU32, AtomicU8};

use crate::config::MemmapLayout;
use crate::memmap::pagemap::{PageMap, Pages, RecordPages, SplitPages, INFO, NEXT, PREV};
use crate::migratetype::MigrateType;
use crate::vmemmap::VmemmapArray;

/// "No page": the end of a list.
pub const NIL: u32 = u32::MAX;

/// What a page is, from the allocator's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageState {
    /// Not the head of any block: a tail page inside a larger free or allocated block.
    Tail = 0,
    /// Head of a free block on a buddy free list (`PageBuddy`).
    Buddy = 1,
    /// Head of a block handed out to a caller.
    Allocated = 2,
    /// Head of a block cached on a per-CPU list: free to the caller, allocated to the buddy.
    Pcp = 3,
    /// Head of a free block taken off the free lists by isolation (compaction's free scanner).
    Isolated = 4,
    /// A page reserved at boot and never given to the buddy allocator (`PageReserved`).
    Reserved = 5,
    /// A page of offline memory: it has a memmap, but memory hotplug has not onlined it.
    Offline = 6,
}

impl PageState {
    /// Every state, in enum order (so `ALL[s as usize] == s`).
    pub const ALL: [PageState; 7] = [
        PageState::Tail,
        PageState::Buddy,
        PageState::Allocated,
        PageState::Pcp,
        PageState::Isolated,
        PageState::Reserved,
        PageState::Offline,
    ];

    /// Decode a kind below [`HANDLE_KIND`] (a table lookup: the merge loop decodes on every
    /// step). A kind is the state's own value; `Allocated`'s value is never written and reads
    /// as `Tail`.
    #[inline(always)]
    const fn from_kind(kind: u32) -> PageState {
        const STATES: [PageState; 8] = {
            let mut table = [PageState::Tail; 8];
            let mut i = 0;
            while i < PageState::ALL.len() {
                if !matches!(PageState::ALL[i], PageState::Allocated) {
                    table[i] = PageState::ALL[i];
                }
                i += 1;
            }
            table
        };
        STATES[(kind & 0x7) as usize]
    }
}

/// The kinds from this one up (the top bit of a state word's kind nibble) are allocated
/// blocks; the low three bits are the owner's [`AllocTag::code`].
const ALLOCATED_KIND: u32 = 8;

/// The kind of an allocated block owned by a movable handle ([`AllocTag::HANDLE`]): the one
/// kind below [`ALLOCATED_KIND`] that no state uses, so a raw free's test for an allocated
/// block ([`Memmap::word_is_allocated`]) fails on it without a further compare.
const HANDLE_KIND: u32 = 7;

/// What the allocation request that owns a block was: its migratetype and whether the
/// contents can be moved by compaction (`PageLRU` or `movable_ops` in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocTag {
    /// The request's migratetype (from its GFP flags).
    pub migratetype: MigrateType,
    /// True if compaction could migrate the contents.
    pub movable: bool,
    /// True if a movable handle of the thread-safe library owns the block: only the handle
    /// frees it, as the kernel's free path refuses a page still on an LRU list (`PG_lru`).
    pub handle: bool,
}

impl AllocTag {
    /// The tag of a request of `migratetype`: movable exactly when the request is.
    pub const fn of(migratetype: MigrateType) -> AllocTag {
        AllocTag { migratetype, movable: migratetype.is_movable(), handle: false }
    }

    /// The tag of a movable block published under a handle (`folio_add_lru`): freed only
    /// by [`crate::zone::free::Owner::Handle`].
    pub const HANDLE: AllocTag = AllocTag { migratetype: MigrateType::Movable, movable: true, handle: true };

    /// Every tag a state word can hold, by [`AllocTag::code`]: the six migratetypes with
    /// their own mobility, then the two movable types pinned in place.
    const ALL: [AllocTag; 8] = {
        let mut table = [AllocTag::of(MigrateType::Movable); 8];
        let mut i = 0;
        while i < MigrateType::ALL.len() {
            table[i] = AllocTag::of(MigrateType::ALL[i]);
            i += 1;
        }
        table[6] = AllocTag { migratetype: MigrateType::Movable, movable: false, handle: false };
        table[7] = AllocTag { migratetype: MigrateType::Cma, movable: false, handle: false };
        table
    };

    /// The tag's three-bit code: the migratetype's value, or 6 and 7 for Movable and CMA
    /// pinned. Only a movable type can be movable: a tag claiming it for another type is
    /// stored as what it is, not movable. (A handle's tag has its own kind, not a code.)
    const fn code(self) -> u32 {
        match self.migratetype {
            MigrateType::Movable if !self.movable => 6,
            MigrateType::Cma if !self.movable => 7,
            mt => mt as u32,
        }
    }

    #[inline(always)]
    const fn from_code(code: u32) -> AllocTag {
        AllocTag::ALL[(code & 0x7) as usize]
    }
}

/// A decoded state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    /// What the page is.
    pub state: PageState,
    /// Order of the block the page heads (meaningless for `Tail`).
    pub order: u32,
    /// Owner of an allocated block (kept for `Allocated` only; other states read back
    /// [`PageInfo::TAIL`]'s).
    pub tag: AllocTag,
}

impl PageInfo {
    /// A tail page.
    pub const TAIL: PageInfo = PageInfo {
        state: PageState::Tail,
        order: 0,
        tag: AllocTag { migratetype: MigrateType::Unmovable, movable: false, handle: false },
    };

    /// One byte: the order in bits 0–3 (at most `MAX_ORDER_LIMIT` = 15) and the kind in bits
    /// 4–7: [`HANDLE_KIND`] for a handle's block, [`ALLOCATED_KIND`] plus the owner's tag code
    /// for another allocated block, the state's own value otherwise. Only an allocated block
    /// keeps its tag (no other state has one).
    pub(crate) const fn pack(self) -> u32 {
        let kind = match self.state {
            PageState::Allocated if self.tag.handle => HANDLE_KIND,
            PageState::Allocated => ALLOCATED_KIND | self.tag.code(),
            state => state as u32,
        };
        (kind << 4) | (self.order & 0xf)
    }

    /// Decode a raw state word (from [`Memmap::info_word`]).
    #[inline]
    pub const fn from_word(v: u32) -> PageInfo {
        PageInfo::unpack(v)
    }

    const fn unpack(v: u32) -> PageInfo {
        let (kind, order) = ((v >> 4) & 0xf, v & 0xf);
        if kind >= ALLOCATED_KIND {
            PageInfo { state: PageState::Allocated, order, tag: AllocTag::from_code(kind) }
        } else if kind == HANDLE_KIND {
            PageInfo { state: PageState::Allocated, order, tag: AllocTag::HANDLE }
        } else {
            PageInfo { state: PageState::from_kind(kind), order, tag: PageInfo::TAIL.tag }
        }
    }
}

/// A block met while walking the memmap: the index of its first page, that page's state,
/// and how many pages it covers (`2^order` for a head, 1 for a stray tail page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Index of the first page.
    pub idx: u32,
    /// State of the first page.
    pub info: PageInfo,
    /// Pages covered.
    pub pages: u64,
}

/// Iterator over the [`Extent`]s of an index range, block by block.
pub struct Extents<'a> {
    mm: &'a Memmap,
    next: u64,
    end: u64,
}

impl Iterator for Extents<'_> {
    type Item = Extent;

    #[inline]
    fn next(&mut self) -> Option<Extent> {
        if self.next >= self.end {
            return None;
        }
        let idx = self.next as u32;
        let info = self.mm.info(idx);
        let pages = if info.state == PageState::Tail { 1 } else { 1u64 << info.order };
        self.next += pages;
        Some(Extent { idx, info, pages })
    }
}

/// The memmap of one zone, indexed by zone-relative page index (`pfn - zone_start_pfn`),
/// laid out as its [`MemmapLayout`] says. Arrays are aligned to a cache line (large ones to
/// 2 MiB), so a 64-byte record is exactly one line, as `struct page` is. Its methods read or
/// write one page; a loop over pages takes [`Memmap::pages`] once.
#[derive(Debug)]
pub struct Memmap {
    storage: Storage,
    len: usize,
}

#[derive(Debug)]
enum Storage {
    /// [`MemmapLayout::Split`].
    Split {
        /// One state word per page, starting `(start_pfn + 32) % 64` bytes into its
        /// allocation: lines hold 64 state words and start at pfns ≡ 32 (mod 64), half a
        /// line from an aligned block.
        states: VmemmapArray<AtomicU8>,
        /// Page `idx`'s `[next, prev]`.
        links: VmemmapArray<[AtomicU32; 2]>,
    },
    /// [`MemmapLayout::Records`]: `stride` words per page, [`NEXT`], [`PREV`], [`INFO`]
    /// first.
    Records { words: VmemmapArray<AtomicU32>, stride: usize },
}

impl Memmap {
    /// A memmap of `nr_pages` tail pages in the default layout.
    pub fn new(nr_pages: usize) -> Memmap {
        Memmap::with_layout(nr_pages, MemmapLayout::Split, 0)
    }

    /// A memmap of `nr_pages` tail pages in `layout`, the first at pfn `start_pfn` (the
    /// zone's config is validated before this runs). Panics on a layout that is not
    /// [`MemmapLayout::is_valid`].
    ///
    /// In the split layout a line holds the state words of 64 pages, written on every
    /// allocation and free, so two CPUs whose hot pages share a line bounce it between
    /// them. A per-CPU refill hands out `batch` consecutive pages (2^n − 1, 63 by default)
    /// and the list head each CPU reuses first is its batch's first page; from an aligned
    /// block those are pfns P and P + 63, which an aligned line would hold both of. Lines
    /// therefore start half a line off (at pfns ≡ 32 mod 64): a 32-page buddy block still
    /// has all its state words in one line, and two consecutive batch heads never share.
    pub fn with_layout(nr_pages: usize, layout: MemmapLayout, start_pfn: u64) -> Memmap {
        assert!(layout.is_valid(), "{layout:?}");
        let tail = PageInfo::TAIL.pack();
        let storage = match layout {
            MemmapLayout::Split => {
                let colour = ((start_pfn + 32) % 64) as usize;
                Storage::Split {
                    states: VmemmapArray::with_offset(colour, nr_pages, |_| AtomicU8::new(tail as u8)),
                    links: VmemmapArray::new(nr_pages, |_| [AtomicU32::new(NIL), AtomicU32::new(NIL)]),
                }
            }
            MemmapLayout::Records(bytes) => {
                let stride = bytes as usize / 4;
                let words = VmemmapArray::new(nr_pages * stride, |w| {
                    AtomicU32::new(match w % stride {
                        NEXT | PREV => NIL,
                        INFO => tail,
                        _ => 0,
                    })
                });
                Storage::Records { words, stride }
            }
        };
        Memmap { storage, len: nr_pages }
    }

    /// The memmap as a [`PageMap`], for loops over pages: match it once with
    /// `with_pages!` (or use it as it is for a few accesses).
    #[inline(always)]
    pub fn pages(&self) -> Pages<'_> {
        match &self.storage {
            Storage::Split { states, links } => Pages::Split(SplitPages { states, links }),
            Storage::Records { words, stride } => Pages::Records(RecordPages { words, stride: *stride }),
        }
    }

    /// Number of pages.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the memmap has no pages.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Walk pages `start..end` block by block: each head yields its whole block, so a walk
    /// from a block boundary visits every block once (how the kernel scans a pageblock).
    pub fn extents(&self, start: u32, end: u32) -> Extents<'_> {
        Extents { mm: self, next: start as u64, end: (end as u64).min(self.len as u64) }
    }

    /// The decoded state of page `idx`.
    #[inline]
    pub fn info(&self, idx: u32) -> PageInfo {
        self.pages().info(idx)
    }

    /// The state of the block a tail page `pfn` lies in, for a memmap whose first page is
    /// `start`: the nearest aligned pfn below it (orders 1..=`max_order`) that heads a block,
    /// if that block reaches `pfn`. `None` if no block does (a block's interior pages are all
    /// tails, so the first head met is the only candidate).
    pub fn tail_block_info(&self, start: u64, pfn: u64, max_order: u32) -> Option<PageInfo> {
        for o in 1..=max_order {
            let head = pfn & !((1u64 << o) - 1);
            if head < start {
                return None;
            }
            let info = self.info((head - start) as u32);
            if info.state != PageState::Tail {
                return (info.order >= o).then_some(info);
            }
        }
        None
    }

    /// Overwrite the state of page `idx`.
    #[inline]
    pub fn set_info(&self, idx: u32, info: PageInfo) {
        self.pages().set_info(idx, info)
    }

    /// Set page `idx` to the head of a block of `order` in `state` (no owner tag).
    #[inline]
    pub fn set_head(&self, idx: u32, state: PageState, order: u32) {
        self.pages().set_head(idx, state, order)
    }

    /// Make page `idx` a tail page again (it stopped heading a block).
    #[inline]
    pub fn clear(&self, idx: u32) {
        self.pages().clear(idx)
    }

    /// The raw state word of page `idx` (an opaque encoding of [`PageInfo`], for fast paths
    /// that compare and swap it without decoding).
    #[inline]
    pub fn info_word(&self, idx: u32) -> u32 {
        self.pages().word(idx)
    }

    /// Atomically replace the raw state word of `idx` if it is still `expected`; on failure
    /// returns the word found.
    #[inline]
    pub fn compare_exchange_word(&self, idx: u32, expected: u32, new: PageInfo) -> Result<(), u32> {
        self.pages().compare_exchange_word(idx, expected, new.pack())
    }

    /// True if a raw state word says "head of an allocated block of `order` that its caller
    /// owns" (not a movable handle: see [`Memmap::word_is_handle`]).
    #[inline]
    pub const fn word_is_allocated(word: u32, order: u32) -> bool {
        word & 0x8f == (ALLOCATED_KIND << 4) | order
    }

    /// True if a raw state word says "head of an allocated block of `order` that a movable
    /// handle owns" ([`AllocTag::HANDLE`]).
    #[inline]
    pub const fn word_is_handle(word: u32, order: u32) -> bool {
        word == (HANDLE_KIND << 4) | order
    }

    /// True if a raw state word says "head of a block of `order` in `state`": the state and
    /// order bits compared at once, without decoding (the merge loop's `page_is_buddy`).
    #[inline(always)]
    pub const fn word_heads(word: u32, state: PageState, order: u32) -> bool {
        match state {
            PageState::Allocated => {
                Memmap::word_is_allocated(word, order) || Memmap::word_is_handle(word, order)
            }
            state => word == ((state as u32) << 4) | order,
        }
    }
}

/// `value`, computed only once `dep` is known: the kernel learns a page's address from the
/// previous step of its list walk, so what it does with the page (seed 001's buddy prefetch)
/// waits for that step. Timing only: `dep` enters through an opaque zero.
#[inline]
pub fn after(value: u64, dep: u32) -> u64 {
    value ^ u64::from(dep & std::hint::black_box(0u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_round_trips_every_state_order_and_tag_in_every_layout() {
        for layout in [MemmapLayout::Split, MemmapLayout::Records(12), MemmapLayout::Records(64)] {
            let memmap = Memmap::with_layout(4, layout, 0);
            let m = memmap.pages();
            for state in PageState::ALL {
                for order in 0..=15 {
                    for mt in MigrateType::ALL {
                        for (movable, handle) in [(false, false), (true, false), (true, true)] {
                            let info =
                                PageInfo { state, order, tag: AllocTag { migratetype: mt, movable, handle } };
                            m.set_info(2, info);
                            // Only an allocated block keeps a tag, only a movable type can
                            // be movable, and a handle's tag is the one handle tag.
                            let tag = match state {
                                PageState::Allocated if handle => AllocTag::HANDLE,
                                PageState::Allocated => {
                                    AllocTag { migratetype: mt, movable: movable && mt.is_movable(), handle }
                                }
                                _ => PageInfo::TAIL.tag,
                            };
                            assert_eq!(m.info(2), PageInfo { tag, ..info }, "{layout:?}");
                            assert!(m.heads(2, state, order), "{layout:?}");
                            assert!(m.word(2) < 256, "a state word is one byte");
                        }
                    }
                }
            }
            m.set_next(3, 7);
            m.set_prev(3, 9);
            assert_eq!((m.next(3), m.prev(3), m.info(3)), (7, 9, PageInfo::TAIL), "links beside the state");
            assert_eq!((m.info(0), m.next(0), m.prev(0)), (PageInfo::TAIL, NIL, NIL));
        }
    }

    #[test]
    fn every_tag_has_its_own_code() {
        for (code, tag) in AllocTag::ALL.iter().enumerate() {
            assert_eq!(tag.code(), code as u32, "{tag:?}");
            assert_eq!(AllocTag::from_code(tag.code()), *tag);
        }
        let pinned = |mt| AllocTag { migratetype: mt, movable: false, handle: false };
        assert!(AllocTag::ALL.contains(&pinned(MigrateType::Movable)));
        assert!(AllocTag::ALL.contains(&pinned(MigrateType::Cma)));
    }

    #[test]
    fn word_heads_agrees_with_the_decoded_word_for_every_byte() {
        // Every byte a page can hold: the unused kind 2 is never written.
        let words: Vec<u32> = (0..256).filter(|&w| PageInfo::from_word(w).pack() == w).collect();
        assert_eq!(words.len(), 15 * 16, "six states, eight allocated tags and a handle's, 16 orders each");
        for word in words {
            let info = PageInfo::from_word(word);
            for state in PageState::ALL {
                for order in 0..=15 {
                    let expect = info.state == state && info.order == order;
                    assert_eq!(Memmap::word_heads(word, state, order), expect, "{word:#x} {state:?} {order}");
                }
            }
            // A raw free's test and a handle's free's test split the allocated blocks.
            for order in 0..=15 {
                let allocated = info.state == PageState::Allocated && info.order == order;
                assert_eq!(
                    Memmap::word_is_allocated(word, order),
                    allocated && !info.tag.handle,
                    "{word:#x}"
                );
                assert_eq!(Memmap::word_is_handle(word, order), allocated && info.tag.handle, "{word:#x}");
            }
        }
    }

    #[test]
    fn state_lines_start_half_a_line_off_aligned_blocks() {
        // Which 64-byte line holds pfn `p`'s state word, for a zone starting at `start`.
        let line = |m: &Memmap, start: u64, p: u64| match m.pages() {
            Pages::Split(s) => &s.states[(p - start) as usize] as *const AtomicU8 as usize / 64,
            Pages::Records(_) => unreachable!("a split memmap"),
        };
        for start in [0u64, 1, 31, 32, 63, 64, 1000] {
            let m = Memmap::with_layout(4096, MemmapLayout::Split, start);
            let p = start.next_multiple_of(1024);
            assert_ne!(line(&m, start, p), line(&m, start, p + 63), "two batch heads, start {start}");
            for q in p..p + 32 {
                assert_eq!(
                    line(&m, start, q),
                    line(&m, start, p),
                    "a 32-page block in one line, start {start}"
                );
            }
            assert_eq!(line(&m, start, p + 32), line(&m, start, p + 95), "start {start}");
        }
    }

    #[test]
    fn extents_step_over_whole_blocks_and_stray_tails() {
        let m = Memmap::new(16);
        m.set_head(0, PageState::Buddy, 2);
        m.set_head(4, PageState::Allocated, 1);
        m.set_head(8, PageState::Pcp, 3);
        let got: Vec<(u32, u64)> = m.extents(0, 16).map(|e| (e.idx, e.pages)).collect();
        assert_eq!(got, [(0, 4), (4, 2), (6, 1), (7, 1), (8, 8)]);
        assert_eq!(m.extents(4, 100).count(), 4, "the end is clamped to the memmap");
    }

    #[test]
    fn compare_exchange_word_reports_the_word_found() {
        let m = Memmap::new(1);
        let alloc = PageInfo { state: PageState::Allocated, order: 3, ..PageInfo::TAIL };
        let pcp = PageInfo { state: PageState::Pcp, order: 3, ..PageInfo::TAIL };
        assert_eq!(m.compare_exchange_word(0, alloc.pack(), pcp), Err(PageInfo::TAIL.pack()));
        m.set_info(0, alloc);
        assert!(Memmap::word_is_allocated(m.info_word(0), 3));
        assert!(!Memmap::word_is_allocated(m.info_word(0), 2));
        assert_eq!(m.compare_exchange_word(0, alloc.pack(), pcp), Ok(()));
        assert_eq!(m.info(0), pcp);
    }
}
