//! `/proc/kpageflags`: one 64-bit flags word per pfn (`include/uapi/linux/kernel-page-flags.h`,
//! bits 32+ from `include/linux/kernel-page-flags.h`), and what each page is for compaction.
//!
//! Every page of a free buddy block reports `KPF_BUDDY` (the kernel tests
//! `is_free_buddy_page`), so free memory is exact. Pages without any flag are kernel
//! allocations that carry no type (vmalloc, kernel stacks, per-CPU cached free pages, …):
//! they are counted as unmovable — except where the zone has more flagless pages than it
//! manages: struct pages the kernel has not initialised yet (deferred or lazy init) read
//! flagless too, and [`super::ZoneBlocks::mark_not_managed`] takes them out. Logically offline
//! pages (`KPF_OFFLINE`: virtio-mem's unplugged parts, balloons) are not managed either.

/// `KPF_LRU`.
pub const KPF_LRU: u32 = 5;
/// `KPF_SLAB`.
pub const KPF_SLAB: u32 = 7;
/// `KPF_BUDDY`.
pub const KPF_BUDDY: u32 = 10;
/// `KPF_ANON`.
pub const KPF_ANON: u32 = 12;
/// `KPF_SWAPCACHE`.
pub const KPF_SWAPCACHE: u32 = 13;
/// `KPF_HUGE` (hugetlbfs).
pub const KPF_HUGE: u32 = 17;
/// `KPF_UNEVICTABLE`.
pub const KPF_UNEVICTABLE: u32 = 18;
/// `KPF_NOPAGE`: no struct page at this pfn.
pub const KPF_NOPAGE: u32 = 20;
/// `KPF_KSM`.
pub const KPF_KSM: u32 = 21;
/// `KPF_THP`: part of a transparent huge page.
pub const KPF_THP: u32 = 22;
/// `KPF_OFFLINE`: logically offline (ballooned, hot-unplugged).
pub const KPF_OFFLINE: u32 = 23;
/// `KPF_PGTABLE`.
pub const KPF_PGTABLE: u32 = 26;
/// `KPF_RESERVED` (kernel-internal bit, exported unchanged).
pub const KPF_RESERVED: u32 = 32;

const fn bit(b: u32) -> u64 {
    1 << b
}

/// What a page is, for anti-fragmentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageClass {
    /// In a free buddy block.
    Free,
    /// Movable: on an LRU list, anonymous, in the swap cache or KSM (compaction can move it).
    Movable,
    /// A slab page (reclaimable or not: kpageflags does not tell).
    Slab,
    /// A page table.
    PageTable,
    /// Reserved at boot (`PG_reserved`).
    Reserved,
    /// A hugetlbfs page.
    Hugetlb,
    /// Any other kernel page (no flag says what it is).
    Kernel,
    /// Memory the buddy allocator does not manage (`KPF_OFFLINE`).
    NotManaged,
    /// No memory here (no struct page).
    Hole,
}

impl PageClass {
    /// True for the classes that pin a pageblock: compaction cannot move them.
    pub const fn is_unmovable(self) -> bool {
        matches!(self, PageClass::Slab | PageClass::PageTable | PageClass::Reserved | PageClass::Kernel)
    }
}

/// Classify one flags word.
#[inline]
pub fn classify(flags: u64) -> PageClass {
    if flags & bit(KPF_NOPAGE) != 0 {
        PageClass::Hole
    } else if flags & bit(KPF_OFFLINE) != 0 {
        PageClass::NotManaged
    } else if flags & bit(KPF_BUDDY) != 0 {
        PageClass::Free
    } else if flags & bit(KPF_RESERVED) != 0 {
        PageClass::Reserved
    } else if flags & bit(KPF_HUGE) != 0 {
        PageClass::Hugetlb
    } else if flags & bit(KPF_SLAB) != 0 {
        PageClass::Slab
    } else if flags & bit(KPF_PGTABLE) != 0 {
        PageClass::PageTable
    } else if flags
        & (bit(KPF_LRU) | bit(KPF_ANON) | bit(KPF_SWAPCACHE) | bit(KPF_KSM) | bit(KPF_UNEVICTABLE))
        != 0
    {
        PageClass::Movable
    } else {
        PageClass::Kernel
    }
}

/// True if the page belongs to a transparent huge page.
#[inline]
pub fn is_thp(flags: u64) -> bool {
    flags & bit(KPF_THP) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_seen_on_this_machine_classify_as_expected() {
        // Values read from /proc/kpageflags of a 6.18 machine.
        assert_eq!(classify(0x400), PageClass::Free);
        assert_eq!(classify(0x0), PageClass::Kernel);
        assert_eq!(
            classify(0x4_0000_006c),
            PageClass::Movable,
            "referenced|uptodate|lru|active|mappedtodisk"
        );
        assert_eq!(classify(0x80), PageClass::Slab);
        assert_eq!(classify(0x10080), PageClass::Slab, "slab compound tail");
        assert_eq!(classify(0x2_0204_483c), PageClass::Movable, "mlocked, unevictable");
        assert!(is_thp(0x8_0241_0028) && classify(0x8_0241_0028) == PageClass::Movable);
        assert_eq!(classify(bit(KPF_PGTABLE)), PageClass::PageTable);
        assert_eq!(classify(bit(KPF_RESERVED)), PageClass::Reserved);
        assert_eq!(classify(bit(KPF_NOPAGE)), PageClass::Hole);
        assert_eq!(classify(bit(KPF_OFFLINE)), PageClass::NotManaged, "virtio-mem's unplugged pages");
        assert!(PageClass::Kernel.is_unmovable() && !PageClass::Movable.is_unmovable());
    }
}
