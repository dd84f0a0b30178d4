//! A zone put into a given state — pageblock types and free blocks at chosen places, every
//! other managed page allocated — and the memmap operations that follow a real kernel's
//! allocations when a trace is replayed against it.
//!
//! A replay starts from a real machine's `/proc/pagetypeinfo`: it knows how many free blocks
//! of each order and type each zone had and how many pageblocks of each type, not where. The
//! lab chooses places ([`ZoneLayout`]); `Zone::set_layout` makes the zone look like that.
//! The allocated pages of that state are owned by nobody the simulation knows: each is an
//! allocated block of order 0 tagged with its pageblock's type, and when the trace frees one
//! at a higher order, `Zone::adopt_allocated` first gathers the pages into one block (they
//! were one allocation all along), as the kernel's allocation would have left them.

use std::fmt;

use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::zone::Zone;

/// Where a zone's free blocks and reserved pages are and what type each pageblock has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneLayout {
    /// The type of every pageblock of the zone, in pfn order (`Zone::pageblocks`' length).
    pub block_types: Vec<MigrateType>,
    /// The free blocks `(pfn, order)`; each goes on its pageblock's list.
    pub free: Vec<(u64, u32)>,
    /// The reserved pages as `(pfn, count)` runs: as many as the zone's `reserved_pages`,
    /// anywhere among its online pages (the kernel's reservations are scattered).
    pub reserved: Vec<(u64, u64)>,
}

/// Why a layout cannot be applied. The zone is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The zone is not as it booted (something is allocated or cached).
    NotFresh,
    /// The number of block types is not the zone's number of pageblocks.
    BlockCount {
        /// Types given.
        given: usize,
        /// Pageblocks of the zone.
        blocks: usize,
    },
    /// Isolate is a flag, not a type a block can be given.
    IsolateType,
    /// A free block outside the managed pages, unaligned, or above the max order.
    BadBlock(u64, u32),
    /// Two free blocks overlap.
    Overlap(u64),
    /// A free block whose pageblocks have different types.
    MixedTypes(u64, u32),
    /// Two free buddies below pageblock order (the kernel would have merged them).
    Unmerged(u64, u32),
    /// Reserved runs outside the zone, over a free block, or not the zone's reserved count.
    Reserved,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::NotFresh => write!(f, "the zone is not freshly booted"),
            LayoutError::BlockCount { given, blocks } => {
                write!(f, "{given} pageblock types for a zone of {blocks} pageblocks")
            }
            LayoutError::IsolateType => write!(f, "a pageblock cannot be given the Isolate type"),
            LayoutError::BadBlock(p, o) => write!(f, "free block {p:#x}/{o} is not a managed, aligned block"),
            LayoutError::Overlap(p) => write!(f, "free blocks overlap at {p:#x}"),
            LayoutError::MixedTypes(p, o) => {
                write!(f, "free block {p:#x}/{o} spans pageblocks of different types")
            }
            LayoutError::Unmerged(p, o) => {
                write!(f, "free blocks {p:#x}/{o} and its buddy would have merged")
            }
            LayoutError::Reserved => {
                write!(f, "reserved pages must be the zone's count, inside it, and not free")
            }
        }
    }
}

impl std::error::Error for LayoutError {}

impl Zone {
    /// Make a freshly booted zone look like `layout`: its pageblocks get the given types,
    /// exactly the given free blocks are on the free lists (in the given order), the given
    /// pages are reserved, and every other page is an allocated block of order 0 tagged with
    /// its pageblock's type. HighAtomic blocks count as reserved. Counters of events are left
    /// alone.
    pub(crate) fn set_layout(&mut self, layout: &ZoneLayout) -> Result<(), LayoutError> {
        self.check_layout(layout)?;
        // Take every boot-time free block off its list.
        let mut boot_blocks = Vec::new();
        for order in 0..=self.max_order() {
            for mt in MigrateType::ALL {
                boot_blocks.extend(self.free_list(order, mt).map(|p| (p.0, order, mt)));
            }
        }
        for (pfn, order, mt) in boot_blocks {
            self.del_page_from_free_list(pfn, order, mt);
        }
        let pb = self.pageblock_nr_pages();
        for (i, &mt) in layout.block_types.iter().enumerate() {
            let pfn = ((self.start_pfn() >> self.pageblock_order()) + i as u64) << self.pageblock_order();
            self.set_pageblock_migratetype(pfn.max(self.start_pfn()), mt);
        }
        let reserved = layout.block_types.iter().filter(|&&mt| mt == MigrateType::HighAtomic).count() as u64;
        self.shared.counters.nr_reserved_highatomic.set(reserved * pb);
        for pfn in (self.start_pfn()..self.end_pfn()).filter(|&p| !self.shared.page_offline(p)) {
            let tag = AllocTag::of(self.pageblock_migratetype(pfn));
            self.shared
                .memmap
                .set_info(self.idx(pfn), PageInfo { state: PageState::Allocated, order: 0, tag });
        }
        for &(pfn, n) in &layout.reserved {
            for p in pfn..pfn + n {
                self.shared.memmap.set_head(self.idx(p), PageState::Reserved, 0);
            }
        }
        for &(pfn, order) in &layout.free {
            for p in pfn..pfn + (1 << order) {
                self.shared.memmap.clear(self.idx(p));
            }
            let mt = self.pageblock_migratetype(pfn);
            self.add_to_free_list(self.pages(), pfn, order, mt, crate::zone::free_area::ListEnd::Tail);
            self.account_freepages(1 << order, mt);
        }
        Ok(())
    }

    fn check_layout(&self, layout: &ZoneLayout) -> Result<(), LayoutError> {
        if self.nr_free_pages() != self.managed_pages() {
            return Err(LayoutError::NotFresh);
        }
        let blocks = self.shared.pageblocks.len();
        if layout.block_types.len() != blocks {
            return Err(LayoutError::BlockCount { given: layout.block_types.len(), blocks });
        }
        if layout.block_types.contains(&MigrateType::Isolate) {
            return Err(LayoutError::IsolateType);
        }
        let mut sorted = layout.free.clone();
        sorted.sort_unstable();
        self.check_reserved(layout, &sorted)?;
        let first = self.start_pfn();
        let mut end_of_last = first;
        for &(pfn, order) in &sorted {
            let end = pfn.checked_add(1 << order.min(63));
            let fits = order <= self.max_order() && crate::Pfn(pfn).is_aligned(order) && pfn >= first;
            let online = |e: u64| self.shared.range_online(pfn, e);
            let Some(end) = end.filter(|&e| fits && e <= self.end_pfn() && online(e)) else {
                return Err(LayoutError::BadBlock(pfn, order));
            };
            if pfn < end_of_last {
                return Err(LayoutError::Overlap(pfn));
            }
            end_of_last = end;
            let block = |p: u64| layout.block_types[self.block_of(p)];
            let pb = self.pageblock_nr_pages();
            if (pfn..end).step_by(pb as usize).any(|p| block(p) != block(pfn)) {
                return Err(LayoutError::MixedTypes(pfn, order));
            }
            let buddy = pfn ^ (1 << order);
            if order < self.pageblock_order() && sorted.binary_search(&(buddy, order)).is_ok() {
                return Err(LayoutError::Unmerged(pfn, order));
            }
        }
        Ok(())
    }

    fn check_reserved(&self, layout: &ZoneLayout, free: &[(u64, u32)]) -> Result<(), LayoutError> {
        let total: u64 = layout.reserved.iter().map(|r| r.1).sum();
        let inside = |&(p, n): &(u64, u64)| {
            p >= self.start_pfn()
                && p.checked_add(n).is_some_and(|e| e <= self.end_pfn())
                && self.shared.range_online(p, p + n)
        };
        if total != self.config().reserved_pages || !layout.reserved.iter().all(inside) {
            return Err(LayoutError::Reserved);
        }
        // No reserved run may meet a free block (both lists are short next to the zone).
        let covered = |p: u64| {
            let i = free.partition_point(|&(f, _)| f <= p);
            i > 0 && p < free[i - 1].0 + (1 << free[i - 1].1)
        };
        if layout.reserved.iter().any(|&(p, n)| (p..p + n).any(covered)) {
            return Err(LayoutError::Reserved);
        }
        Ok(())
    }

    /// Gather the allocated blocks that exactly tile the `2^order` pages at `pfn` into one
    /// allocated block of `order` (they were one allocation the simulation saw as pieces: pages
    /// allocated before a replay began, or pieces of a split it must join again). The new
    /// block keeps the first piece's owner. Returns false, changing nothing, unless every page
    /// of the range belongs to an allocated block inside it.
    pub(crate) fn adopt_allocated(&mut self, pfn: u64, order: u32) -> bool {
        let aligned = order <= self.max_order() && crate::Pfn(pfn).is_aligned(order);
        if !aligned || !self.contains(pfn) || pfn + (1 << order) > self.end_pfn() {
            return false;
        }
        let (start, end) = (self.idx(pfn), self.idx(pfn) + (1u32 << order));
        let mm = &self.shared.memmap;
        let mut covered = start;
        for e in mm.extents(start, end) {
            if e.idx != covered
                || e.info.state != PageState::Allocated
                || u64::from(e.idx) + e.pages > u64::from(end)
            {
                return false;
            }
            covered += e.pages as u32;
        }
        let head = mm.info(start);
        for idx in start + 1..end {
            mm.clear(idx);
        }
        mm.set_info(start, PageInfo { order, ..head });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Gfp, Node, NodeLocks, Pfn, Policy, Sysctl, ZoneConfig};

    fn node() -> Node {
        let cfg = ZoneConfig { max_order: 4, pageblock_order: 2, ..ZoneConfig::normal(64 * 4096) };
        Node::single_zone(cfg, Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 16).unwrap()).unwrap()
    }

    #[test]
    fn a_layout_puts_exactly_its_free_blocks_on_the_lists() {
        let n = node();
        let start = n.zone(0).start_pfn();
        let mut types = vec![MigrateType::Movable; 16];
        types[1] = MigrateType::Unmovable;
        types[2] = MigrateType::HighAtomic;
        let free = vec![(start, 1), (start + 3, 0), (start + 4, 1), (start + 8, 2), (start + 32, 4)];
        n.lock_zone(0)
            .set_layout(&ZoneLayout { block_types: types.clone(), free, reserved: vec![] })
            .unwrap();
        let census = n.verify().unwrap();
        assert_eq!((census.free, census.allocated), (2 + 1 + 2 + 4 + 16, 64 - 25));
        let z = n.zone(0);
        assert_eq!(z.free_list(1, MigrateType::Unmovable).count(), 1, "the block at +4 is Unmovable");
        assert_eq!(z.free_list(2, MigrateType::HighAtomic).count(), 1);
        assert_eq!(z.counters().nr_reserved_highatomic(), 4);
        drop(z);
        // A pre-existing page frees like any other, and four of them free as one block.
        n.free_pages(0, Pfn(start + 2), 0).unwrap();
        assert!(n.lock_zone(0).adopt_allocated(start + 12, 2));
        n.free_pages(0, Pfn(start + 12), 2).unwrap();
        assert!(!n.lock_zone(0).adopt_allocated(start + 2, 1), "one of them is no longer allocated");
        n.drain_all_pages();
        n.verify().unwrap();
    }

    #[test]
    fn impossible_layouts_are_refused_and_change_nothing() {
        let n = node();
        let start = n.zone(0).start_pfn();
        let types = vec![MigrateType::Movable; 16];
        let bad = |free: Vec<(u64, u32)>| {
            n.lock_zone(0).set_layout(&ZoneLayout { block_types: types.clone(), free, reserved: vec![] })
        };
        assert_eq!(bad(vec![(start + 1, 1)]), Err(LayoutError::BadBlock(start + 1, 1)));
        assert_eq!(bad(vec![(start, 2), (start + 2, 0)]), Err(LayoutError::Overlap(start + 2)));
        assert_eq!(bad(vec![(start, 0), (start + 1, 0)]), Err(LayoutError::Unmerged(start, 0)));
        let one = ZoneLayout { block_types: vec![MigrateType::Movable], ..ZoneLayout::default() };
        let short = n.lock_zone(0).set_layout(&one);
        assert_eq!(short, Err(LayoutError::BlockCount { given: 1, blocks: 16 }));
        let reserved = n.lock_zone(0).set_layout(&ZoneLayout {
            block_types: types.clone(),
            free: vec![],
            reserved: vec![(start, 1)],
        });
        assert_eq!(reserved, Err(LayoutError::Reserved), "this zone reserves nothing");
        assert_eq!(n.verify().unwrap().free, 64, "still as booted");
        let p = n.alloc_pages(0, 4, Gfp::KERNEL).unwrap();
        assert_eq!(bad(vec![]), Err(LayoutError::NotFresh));
        n.free_pages(0, p, 4).unwrap();
    }
}
