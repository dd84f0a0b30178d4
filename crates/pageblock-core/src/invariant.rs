//! What `verify()` reports: the invariant that broke ([`Invariant`], one variant per check,
//! grouped as docs/ARCHITECTURE.md numbers them) and where ([`VerifyError::detail`]).

use std::fmt;

/// The check that failed. The number in each group's heading is the invariant's number in
/// docs/ARCHITECTURE.md ("Invariants").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invariant {
    // 1. Every pfn belongs to exactly one block, aligned and inside the zone.
    /// A `Tail` page where a block must start (a tail outside any block).
    StrayTail,
    /// A block of an order above `MAX_PAGE_ORDER`.
    OrderAboveMax,
    /// A block whose pfn is not a multiple of its size.
    UnalignedBlock,
    /// A block that runs past the zone's end.
    BlockPastZone,
    /// A page inside a block that is not `Tail` (two blocks overlap).
    HeadInsideBlock,
    // 2. Free blocks and pageblock types.
    /// A free block of `pageblock_order` or more covers pageblocks of different types.
    FreeBlockSpansTypes,
    /// A free block on the list of a type other than its pageblock's.
    WrongTypeList,
    // 3. The buddy lists.
    /// A list's back link or tail pointer is wrong.
    ListLinkage,
    /// A list holds a page that is not a free (`PageBuddy`) head of the list's order.
    ListEntry,
    /// A page is on two free lists, or twice on one.
    OnTwoLists,
    /// A free head in the memmap is on no list.
    FreeHeadNotListed,
    // 4. The free-area counts.
    /// `free_area[o].nr_free` is not the blocks on the order's lists.
    NrFree,
    /// A per-list count (`mt_nr_free`) is not its list's length.
    MtNrFree,
    // 5. The free-page statistics.
    /// `NR_FREE_PAGES` is not the pages on the lists (Isolate lists excepted).
    NrFreePages,
    /// `NR_FREE_CMA_PAGES` is not the pages on the CMA lists.
    NrFreeCmaPages,
    /// `nr_free_highatomic` is not the pages on the HighAtomic lists.
    NrFreeHighatomic,
    /// `NR_FREE_PAGES_BLOCKS` is not the pages in listed blocks of `pageblock_order` or more.
    NrFreePagesBlocks,
    // 6. Merging.
    /// Two free buddies below `pageblock_order` were not merged.
    UnmergedBuddies,
    // 7. The HighAtomic reserve.
    /// `nr_reserved_highatomic` is not the pages of the HighAtomic pageblocks.
    NrReservedHighatomic,
    // 8. The page census.
    /// A reserved or offline page heads a block of order above 0.
    ReservedOrOfflineOrder,
    /// Free, allocated, per-CPU and isolated pages do not add up to the managed pages.
    ManagedPages,
    /// The reserved pages in the memmap are not the configured count.
    ReservedPages,
    // 9. The per-CPU lists.
    /// A CPU's list holds a page that is not a per-CPU head of the list's order.
    PcpEntry,
    /// A CPU's lists do not hold its `pcp->count` pages (or the published count differs).
    PcpCount,
    /// The zone's per-CPU pages in the memmap are not what all CPUs' lists hold.
    PcpTotal,
    // 10. The library's movable handles.
    /// A block the memmap tags as a handle's has no live handle.
    OrphanHandleBlock,
    /// A live handle's block is not allocated with the handle tag and the handle's order.
    HandleBlock,
    /// A handle slot in a state a quiescent allocator cannot have.
    HandleState,
    /// The reverse map does not name a live handle's block, or names a block no handle has.
    HandleRmap,
    /// The live handles, the handle-tagged blocks and the table's count differ.
    HandleCount,
}

/// A broken invariant: which one, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The check that failed.
    pub invariant: Invariant,
    /// What was found, and where (pfn, order, list).
    pub detail: String,
}

impl VerifyError {
    /// A failed `invariant`, described by `detail`.
    pub fn new(invariant: Invariant, detail: String) -> VerifyError {
        VerifyError { invariant, detail }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant broken ({:?}): {}", self.invariant, self.detail)
    }
}

impl std::error::Error for VerifyError {}

/// `ensure!(cond, Invariant::X, "format", args…)`: fail with `X` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $inv:expr, $($arg:tt)*) => {
        if !$cond {
            return Err($crate::invariant::VerifyError::new($inv, format!($($arg)*)));
        }
    };
}
pub(crate) use ensure;
