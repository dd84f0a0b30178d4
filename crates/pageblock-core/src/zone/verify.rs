//! The zone's own invariant check ([`Zone::verify`]) and its page census.
//!
//! It recomputes everything the zone maintains incrementally — from the memmap, the lists and
//! the pageblock bits — and compares. It is O(pages) and meant for tests, the simulator and
//! debugging, after every operation if need be. Each check corresponds to an invariant
//! written down in [`crate::zone`], [`crate::list`] or [`crate::memmap`], and a failure names
//! it ([`Invariant`]). The node-wide check over a driver is [`crate::verify`].

use crate::invariant::{ensure, Invariant, VerifyError};

use crate::memmap::pagemap::PageMap;
use crate::memmap::{PageState, NIL};
use crate::migratetype::{MigrateType, MIGRATE_TYPES};
use crate::stats::ZoneStat;
use crate::zone::{Zone, ZoneShared};

/// Page totals found by walking the memmap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCensus {
    /// Pages in free blocks on buddy lists.
    pub free: u64,
    /// Pages in allocated blocks.
    pub allocated: u64,
    /// Pages in blocks on per-CPU lists.
    pub pcp: u64,
    /// Pages in isolated free blocks.
    pub isolated: u64,
    /// Pages reserved at boot.
    pub reserved: u64,
    /// Pages of offline memory.
    pub offline: u64,
}

impl std::ops::Add for PageCensus {
    type Output = PageCensus;

    fn add(self, o: PageCensus) -> PageCensus {
        PageCensus {
            free: self.free + o.free,
            allocated: self.allocated + o.allocated,
            pcp: self.pcp + o.pcp,
            isolated: self.isolated + o.isolated,
            reserved: self.reserved + o.reserved,
            offline: self.offline + o.offline,
        }
    }
}

impl ZoneShared {
    /// Count the zone's pages by state from the memmap alone, without the zone lock (a
    /// moving target while other CPUs work; exact in the simulator, and between the steps
    /// of a compaction run). Every block is counted by its head.
    pub fn census(&self) -> PageCensus {
        let mm = self.memmap();
        let mut census = PageCensus::default();
        for e in mm.extents(0, mm.len() as u32) {
            let pages = e.pages;
            match e.info.state {
                PageState::Buddy => census.free += pages,
                PageState::Allocated => census.allocated += pages,
                PageState::Pcp => census.pcp += pages,
                PageState::Isolated => census.isolated += pages,
                PageState::Reserved => census.reserved += pages,
                PageState::Offline => census.offline += pages,
                PageState::Tail => {}
            }
        }
        census
    }
}

/// Free block heads found in the memmap, per order.
type HeadsPerOrder = [u64; crate::types::NR_ORDER_SLOTS];

impl Zone {
    /// Check every invariant; returns the page census on success.
    pub fn verify(&self) -> Result<PageCensus, VerifyError> {
        let (census, heads) = self.verify_memmap()?;
        self.verify_lists(&heads)?;
        self.verify_counts()?;
        self.verify_merged()?;
        self.verify_highatomic()?;
        let total = census.free + census.allocated + census.pcp + census.isolated;
        ensure!(
            total == self.managed_pages(),
            Invariant::ManagedPages,
            "census {census:?} covers {total} of {} pages",
            self.managed_pages()
        );
        let reserved = self.config().reserved_pages;
        ensure!(
            census.reserved == reserved,
            Invariant::ReservedPages,
            "{} reserved pages in the memmap, {reserved} configured",
            census.reserved
        );
        Ok(census)
    }

    /// Walk the zone block by block: every pfn is covered once, blocks are aligned and
    /// inside the zone, tails are tails, free blocks sit on their pageblock's type.
    fn verify_memmap(&self) -> Result<(PageCensus, HeadsPerOrder), VerifyError> {
        let mm = &self.shared.memmap;
        let mut census = PageCensus::default();
        let mut heads = HeadsPerOrder::default();
        let mut pfn = self.start_pfn();
        while pfn < self.end_pfn() {
            let info = mm.info(self.idx(pfn));
            ensure!(
                info.state != PageState::Tail,
                Invariant::StrayTail,
                "pfn {pfn:#x} is a tail page outside any block"
            );
            let o = info.order;
            ensure!(o <= self.max_order(), Invariant::OrderAboveMax, "pfn {pfn:#x}: order {o} above max");
            ensure!(
                pfn & ((1 << o) - 1) == 0,
                Invariant::UnalignedBlock,
                "pfn {pfn:#x}: block of order {o} is unaligned"
            );
            let end = pfn + (1 << o);
            ensure!(
                end <= self.end_pfn(),
                Invariant::BlockPastZone,
                "pfn {pfn:#x}: block of order {o} runs past the zone"
            );
            for p in pfn + 1..end {
                ensure!(
                    mm.info(self.idx(p)).state == PageState::Tail,
                    Invariant::HeadInsideBlock,
                    "pfn {p:#x} inside block {pfn:#x}/{o} is a head"
                );
            }
            let pages = 1u64 << o;
            match info.state {
                PageState::Buddy => {
                    census.free += pages;
                    heads[o as usize] += 1;
                    self.verify_free_block_type(pfn, o)?;
                }
                PageState::Allocated => census.allocated += pages,
                PageState::Pcp => census.pcp += pages,
                PageState::Isolated => census.isolated += pages,
                PageState::Reserved => {
                    ensure!(
                        o == 0,
                        Invariant::ReservedOrOfflineOrder,
                        "pfn {pfn:#x}: a reserved page of order {o}"
                    );
                    census.reserved += 1;
                }
                PageState::Offline => {
                    ensure!(
                        o == 0,
                        Invariant::ReservedOrOfflineOrder,
                        "pfn {pfn:#x}: an offline page of order {o}"
                    );
                    census.offline += 1;
                }
                PageState::Tail => unreachable!(),
            }
            pfn = end;
        }
        Ok((census, heads))
    }

    fn verify_free_block_type(&self, pfn: u64, order: u32) -> Result<(), VerifyError> {
        let mt = self.pageblock_migratetype(pfn);
        let pb = self.pageblock_nr_pages();
        let mut p = pfn & !(pb - 1);
        while p < pfn + (1 << order) {
            let bmt = self.pageblock_migratetype(p);
            ensure!(
                bmt == mt,
                Invariant::FreeBlockSpansTypes,
                "free block {pfn:#x}/{order} spans pageblocks of types {mt:?} and {bmt:?}"
            );
            p += pb;
        }
        Ok(())
    }

    /// Every list is well linked and holds only free heads of its order and type, no page is
    /// on two lists (or twice on one), and every free head of the memmap is on a list.
    fn verify_lists(&self, heads: &HeadsPerOrder) -> Result<(), VerifyError> {
        let mm = self.pages();
        let mut seen = vec![0u64; mm.nr_pages().div_ceil(64)];
        for order in 0..=self.max_order() {
            let mut on_lists = 0;
            for mt in MigrateType::ALL {
                let list = self.shared.free_areas().list(order, mt);
                let mut prev = NIL;
                // Walked by hand, not with `ListHead::iter`: a link past the memmap must be
                // reported before it is followed.
                let mut next = list.first().unwrap_or(NIL);
                while next != NIL {
                    let idx = next;
                    ensure!(
                        (idx as usize) < mm.nr_pages(),
                        Invariant::ListLinkage,
                        "{mt:?} order {order}: link to index {idx} past the memmap"
                    );
                    next = mm.next(idx);
                    let pfn = self.pfn_at(idx);
                    let (word, bit) = (idx as usize / 64, 1u64 << (idx % 64));
                    ensure!(
                        seen[word] & bit == 0,
                        Invariant::OnTwoLists,
                        "{pfn:#x} is on a free list twice ({mt:?} order {order})"
                    );
                    seen[word] |= bit;
                    ensure!(
                        mm.prev(idx) == prev,
                        Invariant::ListLinkage,
                        "{mt:?} order {order}: bad back link at {pfn:#x}"
                    );
                    let info = mm.info(idx);
                    ensure!(
                        info.state == PageState::Buddy && info.order == order,
                        Invariant::ListEntry,
                        "{mt:?} order {order} list holds {pfn:#x} {info:?}"
                    );
                    let bmt = self.pageblock_migratetype(pfn);
                    ensure!(
                        bmt == mt,
                        Invariant::WrongTypeList,
                        "{pfn:#x} on the {mt:?} list of a {bmt:?} block"
                    );
                    prev = idx;
                    on_lists += 1;
                }
                ensure!(
                    list.last().unwrap_or(NIL) == prev,
                    Invariant::ListLinkage,
                    "{mt:?} order {order}: tail pointer is stale"
                );
            }
            let h = heads[order as usize];
            ensure!(
                on_lists == h,
                Invariant::FreeHeadNotListed,
                "order {order}: {h} free heads in the memmap, {on_lists} on the lists"
            );
        }
        Ok(())
    }

    /// Counts equal list lengths; free-page statistics equal what the lists hold.
    fn verify_counts(&self) -> Result<(), VerifyError> {
        let c = &self.shared.counters;
        let fa = self.shared.free_areas();
        let mm = self.pages();
        let mut pages = [0u64; MIGRATE_TYPES];
        let mut blocks_pages = 0;
        for order in 0..=self.max_order() {
            let mut nr_free = 0;
            for mt in MigrateType::ALL {
                let len = fa.list(order, mt).iter(mm).count() as u64;
                if let Some(count) = fa.mt_nr_free(order, mt) {
                    ensure!(
                        count == len,
                        Invariant::MtNrFree,
                        "mt_nr_free[{order}][{mt:?}] = {count} but the list has {len}"
                    );
                }
                nr_free += len;
                pages[mt as usize] += len << order;
                if order >= self.pageblock_order() && mt != MigrateType::Isolate {
                    blocks_pages += len << order;
                }
            }
            ensure!(
                fa.nr_free(order) == nr_free,
                Invariant::NrFree,
                "nr_free[{order}] = {} but the lists hold {nr_free}",
                fa.nr_free(order)
            );
        }
        let not_isolated: u64 = pages.iter().sum::<u64>() - pages[MigrateType::Isolate as usize];
        let expect = [
            (ZoneStat::NrFreePages, not_isolated, Invariant::NrFreePages),
            (ZoneStat::NrFreeCmaPages, pages[MigrateType::Cma as usize], Invariant::NrFreeCmaPages),
            (ZoneStat::NrFreePagesBlocks, blocks_pages, Invariant::NrFreePagesBlocks),
        ];
        for (item, want, invariant) in expect {
            ensure!(
                c.zone_stat(item) == want,
                invariant,
                "{} = {} but the lists hold {want}",
                item.name(),
                c.zone_stat(item)
            );
        }
        let ha = pages[MigrateType::HighAtomic as usize];
        ensure!(
            c.nr_free_highatomic() == ha,
            Invariant::NrFreeHighatomic,
            "nr_free_highatomic = {} but the lists hold {ha}",
            c.nr_free_highatomic()
        );
        Ok(())
    }

    /// No free block below pageblock order has a free buddy (merges there ignore types, so a
    /// free pair can only mean a merge was missed). From pageblock order up the kernel merges
    /// only when a block is freed, and releasing a HighAtomic reserve retypes a whole free
    /// block without re-merging it (`unreserve_highatomic_pageblock`), so a free pair of
    /// mergeable types may legitimately stay split there; pairs that could never merge
    /// (HighAtomic, CMA, Isolate against another type) need no check.
    fn verify_merged(&self) -> Result<(), VerifyError> {
        let mm = self.pages();
        for order in 0..self.max_order().min(self.pageblock_order()) {
            for mt in MigrateType::ALL {
                for idx in self.shared.free_areas().list(order, mt).iter(mm) {
                    let pfn = self.pfn_at(idx);
                    let buddy = pfn ^ (1 << order);
                    ensure!(
                        !self.is_free_buddy(buddy, order),
                        Invariant::UnmergedBuddies,
                        "free buddies {pfn:#x} and {buddy:#x} of order {order} ({mt:?}) were not merged"
                    );
                }
            }
        }
        Ok(())
    }

    fn verify_highatomic(&self) -> Result<(), VerifyError> {
        let pb = &self.shared.pageblocks;
        let blocks = (0..pb.len()).filter(|&b| pb.migratetype(b) == MigrateType::HighAtomic).count() as u64;
        let reserved = self.shared.counters.nr_reserved_highatomic();
        ensure!(
            reserved == blocks * self.pageblock_nr_pages(),
            Invariant::NrReservedHighatomic,
            "nr_reserved_highatomic = {reserved} but {blocks} pageblocks are HighAtomic"
        );
        Ok(())
    }
}
