//! Page frame numbers, orders and the geometry constants of a zone.
//!
//! The kernel's x86_64 defaults are the defaults here: 4 KiB pages, `MAX_PAGE_ORDER` 10 (so 11
//! free-area orders) and `pageblock_order` 9 (512 pages, one PMD huge page). Both orders are
//! runtime values of a [`crate::ZoneConfig`] so the lab can try other geometries; arrays are
//! sized for the largest supported order, [`MAX_ORDER_LIMIT`].

use std::fmt;

/// Bytes in a base page (`PAGE_SIZE`).
pub const PAGE_SIZE: u64 = 4096;
/// `PAGE_SHIFT`.
pub const PAGE_SHIFT: u32 = 12;
/// Default `MAX_PAGE_ORDER` (x86_64): the largest buddy block is 2^10 pages = 4 MiB.
pub const MAX_PAGE_ORDER: u32 = 10;
/// Default `pageblock_order` (x86_64 with THP): 2^9 pages = 2 MiB.
pub const PAGEBLOCK_ORDER: u32 = 9;
/// `PAGE_ALLOC_COSTLY_ORDER`: orders above this are "costly" to the reclaim/compaction logic.
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// The largest `max_order` a zone may be configured with. Free-area arrays have
/// `MAX_ORDER_LIMIT + 1` slots so no allocation depends on the configuration.
pub const MAX_ORDER_LIMIT: u32 = 15;
/// Number of free-area slots allocated per zone.
pub const NR_ORDER_SLOTS: usize = MAX_ORDER_LIMIT as usize + 1;

const _: () = assert!(PAGEBLOCK_ORDER <= MAX_PAGE_ORDER);
const _: () = assert!(MAX_PAGE_ORDER <= MAX_ORDER_LIMIT);
const _: () = assert!(PAGE_SIZE == 1 << PAGE_SHIFT);

/// A page frame number: physical address >> `PAGE_SHIFT`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pfn(pub u64);

impl Pfn {
    /// The pfn of the buddy of the block at `self` of `order` (`__find_buddy_pfn`).
    #[inline]
    pub fn buddy(self, order: u32) -> Pfn {
        Pfn(self.0 ^ (1 << order))
    }

    /// True if `self` is the first pfn of a naturally aligned block of `order`.
    #[inline]
    pub fn is_aligned(self, order: u32) -> bool {
        // Orders of 64 and more (misuse) must not overflow the shift.
        match 1u64.checked_shl(order) {
            Some(size) => self.0 & (size - 1) == 0,
            None => self.0 == 0,
        }
    }
}

/// `[start, end)` cut into the largest naturally aligned blocks of at most `max_order`, in
/// pfn order: how memblock and memory onlining hand a range to the buddy allocator.
pub fn aligned_blocks(start: u64, end: u64, max_order: u32) -> impl Iterator<Item = (u64, u32)> {
    let mut pfn = start;
    std::iter::from_fn(move || {
        if pfn >= end {
            return None;
        }
        let mut order = max_order;
        while !Pfn(pfn).is_aligned(order) || pfn + (1 << order) > end {
            order -= 1;
        }
        let block = (pfn, order);
        pfn += 1 << order;
        Some(block)
    })
}

impl fmt::Debug for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pfn {:#x}", self.0)
    }
}

impl fmt::Display for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Pages in a block of `order`.
#[inline]
pub const fn order_pages(order: u32) -> u64 {
    1 << order
}
