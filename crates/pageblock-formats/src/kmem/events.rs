//! The six kmem page event records and their `TP_printk` rendering.

use std::fmt;

use super::PagePtr;
use crate::gfp::Gfp;

pub(super) const ALLOC_KEYS: &[&str] = &["page", "pfn", "order", "migratetype", "gfp_flags"];
pub(super) const FREE_KEYS: &[&str] = &["page", "pfn", "order"];
pub(super) const ZONE_LOCKED_KEYS: &[&str] = &["page", "pfn", "order", "migratetype", "percpu_refill"];
pub(super) const PCPU_DRAIN_KEYS: &[&str] = &["page", "pfn", "order", "migratetype"];
pub(super) const EXTFRAG_KEYS: &[&str] = &[
    "page",
    "pfn",
    "alloc_order",
    "fallback_order",
    "pageblock_order",
    "alloc_migratetype",
    "fallback_migratetype",
    "fragmenting",
    "change_ownership",
];

/// `(page, printed pfn)` for a pfn that may be −1 (failed allocation).
fn page_and_pfn(pfn: Option<u64>) -> (PagePtr, u64) {
    match pfn {
        Some(p) => (PagePtr::hashed(p), p),
        None => (PagePtr::null(), 0),
    }
}

/// `mm_page_alloc`: end of `__alloc_pages`, success or failure.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPageAlloc {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx` as printed (0 for a failed allocation).
    pub pfn: u64,
    /// `order` (`unsigned int`, printed `%d`).
    pub order: u32,
    /// `migratetype`: the requested type derived from the gfp mask.
    pub migratetype: i32,
    /// `gfp_flags`.
    pub gfp_flags: Gfp,
}

impl MmPageAlloc {
    /// A synthetic event: `pfn` `None` is a failed allocation (`page=0000000000000000
    /// pfn=0x0`); otherwise the page prints as [`PagePtr::hashed`].
    pub fn new(pfn: Option<u64>, order: u32, migratetype: i32, gfp_flags: Gfp) -> Self {
        let (page, pfn) = page_and_pfn(pfn);
        MmPageAlloc { page, pfn, order, migratetype, gfp_flags }
    }

    /// True for a failed allocation (NULL page).
    pub fn failed(&self) -> bool {
        self.page.is_null()
    }
}

impl fmt::Display for MmPageAlloc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page={} pfn={:#x} order={} migratetype={} gfp_flags={}",
            self.page, self.pfn, self.order as i32, self.migratetype, self.gfp_flags
        )
    }
}

/// `mm_page_free`: every free, before the PCP or buddy path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPageFree {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx`.
    pub pfn: u64,
    /// `order` (`unsigned int`, printed `%d`).
    pub order: u32,
}

impl MmPageFree {
    /// A synthetic event with a [`PagePtr::hashed`] page.
    pub fn new(pfn: u64, order: u32) -> Self {
        MmPageFree { page: PagePtr::hashed(pfn), pfn, order }
    }
}

impl fmt::Display for MmPageFree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page={} pfn={:#x} order={}", self.page, self.pfn, self.order as i32)
    }
}

/// `mm_page_free_batched`: per folio in `free_unref_folios`; prints a literal `order=0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPageFreeBatched {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx`.
    pub pfn: u64,
}

impl MmPageFreeBatched {
    /// A synthetic event with a [`PagePtr::hashed`] page.
    pub fn new(pfn: u64) -> Self {
        MmPageFreeBatched { page: PagePtr::hashed(pfn), pfn }
    }
}

impl fmt::Display for MmPageFreeBatched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page={} pfn={:#x} order=0", self.page, self.pfn)
    }
}

/// `mm_page_alloc_zone_locked`: `__rmqueue_smallest` took a block off a buddy free list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPageAllocZoneLocked {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx` as printed (0 when the recorded pfn was −1).
    pub pfn: u64,
    /// `order` (printed `%u`).
    pub order: u32,
    /// `migratetype`: the free list the block came from.
    pub migratetype: i32,
    /// `percpu_refill`: 1 for PCP-eligible requests.
    pub percpu_refill: i32,
}

impl MmPageAllocZoneLocked {
    /// A synthetic event; `pfn` `None` prints as a NULL page and `pfn=0x0`.
    pub fn new(pfn: Option<u64>, order: u32, migratetype: i32, percpu_refill: bool) -> Self {
        let (page, pfn) = page_and_pfn(pfn);
        MmPageAllocZoneLocked { page, pfn, order, migratetype, percpu_refill: i32::from(percpu_refill) }
    }
}

impl fmt::Display for MmPageAllocZoneLocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page={} pfn={:#x} order={} migratetype={} percpu_refill={}",
            self.page, self.pfn, self.order, self.migratetype, self.percpu_refill
        )
    }
}

/// `mm_page_pcpu_drain`: `free_pcppages_bulk`, per page returned to the buddy lists.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPagePcpuDrain {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx`.
    pub pfn: u64,
    /// `order` (`unsigned int`, printed `%d`).
    pub order: u32,
    /// `migratetype`: the free list the page goes to.
    pub migratetype: i32,
}

impl MmPagePcpuDrain {
    /// A synthetic event with a [`PagePtr::hashed`] page.
    pub fn new(pfn: u64, order: u32, migratetype: i32) -> Self {
        MmPagePcpuDrain { page: PagePtr::hashed(pfn), pfn, order, migratetype }
    }
}

impl fmt::Display for MmPagePcpuDrain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page={} pfn={:#x} order={} migratetype={}",
            self.page, self.pfn, self.order as i32, self.migratetype
        )
    }
}

/// `mm_page_alloc_extfrag`: an allocation fell back to another migratetype's free list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmPageAllocExtfrag {
    /// `page=%p` as printed.
    pub page: PagePtr,
    /// `pfn=0x%lx`.
    pub pfn: u64,
    /// `alloc_order`: the requested order.
    pub alloc_order: i32,
    /// `fallback_order`: the order of the block taken.
    pub fallback_order: i32,
    /// `pageblock_order` as printed (computed in the print fmt: `min(HPAGE_PMD_ORDER,
    /// MAX_PAGE_ORDER)`).
    pub pageblock_order: i32,
    /// `alloc_migratetype`: the requested type.
    pub alloc_migratetype: i32,
    /// `fallback_migratetype`: the type of the list the block came from.
    pub fallback_migratetype: i32,
    /// `fragmenting` as printed (the kernel prints `fallback_order < pageblock_order`).
    pub fragmenting: i32,
    /// `change_ownership`: 1 if the pageblock now belongs to the requested type.
    pub change_ownership: i32,
}

impl MmPageAllocExtfrag {
    /// A synthetic event as the kernel prints it: `fragmenting` is computed as
    /// `fallback_order < pageblock_order`.
    pub fn new(
        pfn: u64,
        alloc_order: i32,
        fallback_order: i32,
        pageblock_order: i32,
        alloc_migratetype: i32,
        fallback_migratetype: i32,
        change_ownership: bool,
    ) -> Self {
        MmPageAllocExtfrag {
            page: PagePtr::hashed(pfn),
            pfn,
            alloc_order,
            fallback_order,
            pageblock_order,
            alloc_migratetype,
            fallback_migratetype,
            fragmenting: i32::from(fallback_order < pageblock_order),
            change_ownership: i32::from(change_ownership),
        }
    }
}

impl fmt::Display for MmPageAllocExtfrag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page={} pfn={:#x} alloc_order={} fallback_order={} pageblock_order={} alloc_migratetype={} \
             fallback_migratetype={} fragmenting={} change_ownership={}",
            self.page,
            self.pfn,
            self.alloc_order,
            self.fallback_order,
            self.pageblock_order,
            self.alloc_migratetype,
            self.fallback_migratetype,
            self.fragmenting,
            self.change_ownership
        )
    }
}
