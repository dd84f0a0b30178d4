//! The memory's users, as the kernel's reclaim and compaction see them: anonymous pages of
//! processes (swapped out and back in), page cache pages of files (dropped, refaulting when
//! read again), reclaimable slab pages, and unmovable kernel pages.
//!
//! [`Mm`] is the owner the simulated node talks to: it implements [`Unmap`] (reclaim took a
//! page) and [`Mover`] (compaction moved one), so every record here always names the pfn the
//! node has allocated for it. Each page also has the states that can stop compaction from
//! moving it or reclaim from taking it ([`super::page_states`]). Workloads go through [`Mm`]'s methods, which allocate on the
//! node and record the result; no borrow of the records is held across an allocation
//! (reclaim and compaction call back into the records from inside it).

use std::cell::RefCell;
use std::rc::Rc;

use pageblock_core::compaction::{FolioState, MigrateFail, MigrateMode, Mover};
use pageblock_core::thp::ThpDefrag;
use pageblock_core::vmscan::{DirtyWriteback, LruKind, Unmap};
use pageblock_core::{AllocError, Gfp, Node, Pfn};
use rustc_hash::FxHashMap;

use super::page_states::{PageStateShares, PageStates};

/// An anonymous page (or huge page) of a process, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnonPage {
    /// In memory.
    Present {
        /// Where.
        pfn: u64,
        /// Its order (a huge page: the pageblock order).
        order: u32,
    },
    /// Written to swap (a huge page is swapped whole, as `THP_SWAP` does).
    Swapped {
        /// The order it had.
        order: u32,
        /// The shadow entry: the node's non-resident age when it was swapped out.
        eviction: u64,
        /// The shadow entry's workingset bit: it was active before eviction.
        workingset: bool,
    },
    /// A huge page that came back from swap as base pages (swap-in reads base pages): each
    /// is recorded on its own, present or swapped.
    Split,
    /// Unmapped by its process.
    Gone,
}

/// A page of the file set, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilePage {
    /// Never read.
    Uncached,
    /// In the page cache.
    Cached {
        /// Where.
        pfn: u64,
    },
    /// Read once, then dropped by reclaim (a shadow entry remains: the next read refaults).
    Evicted {
        /// The shadow entry: the node's non-resident age when it was dropped.
        eviction: u64,
        /// The shadow entry's workingset bit: it was active before eviction.
        workingset: bool,
    },
}

/// Who holds an allocated block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    Anon(u32),
    /// Base page `.1` of split anonymous page `.0`.
    AnonPart(u32, u16),
    File(u32),
    Slab(u32),
}

/// The records, shared between the workload and the node's callbacks.
#[derive(Debug, Default)]
struct Records {
    holders: FxHashMap<u64, Holder>,
    anon: Vec<AnonPage>,
    /// The base pages of [`AnonPage::Split`] pages, by id.
    split: FxHashMap<u32, Vec<AnonPage>>,
    files: Vec<FilePage>,
    /// Reclaimable slab pages by id: `Some(pfn)` while in memory.
    slab: Vec<Option<u64>>,
    /// `lruvec->nonresident_age`: pages evicted, plus pages activated on refault; a shadow
    /// entry stamps it, and the difference at refault is the refault distance.
    nonresident_age: u64,
    /// Dirty, writeback, pinned and unevictable pages.
    states: PageStates,
}

/// A shared handle to the records: what the node calls back.
#[derive(Clone, Debug, Default)]
struct Owner(Rc<RefCell<Records>>);

impl Unmap for Owner {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, workingset: bool) -> bool {
        let mut r = self.0.borrow_mut();
        let eviction = r.nonresident_age;
        if let Some(&h) = r.holders.get(&pfn) {
            if !r.states.may_reclaim(h) {
                return false;
            }
            r.states.reclaimed(h);
        }
        let holder = r.holders.remove(&pfn);
        let slot = match holder {
            Some(Holder::Anon(id)) => Some(&mut r.anon[id as usize]),
            Some(Holder::AnonPart(id, i)) => r.split.get_mut(&id).map(|parts| &mut parts[i as usize]),
            _ => None,
        };
        if let Some(slot) = slot {
            if let AnonPage::Present { order, .. } = *slot {
                *slot = AnonPage::Swapped { order, eviction, workingset };
                r.nonresident_age += 1 << order;
            }
            return true;
        }
        match holder {
            Some(Holder::Anon(_) | Holder::AnonPart(..)) => true,
            Some(Holder::File(id)) => {
                r.files[id as usize] = FilePage::Evicted { eviction, workingset };
                r.nonresident_age += 1;
                true
            }
            Some(Holder::Slab(id)) => {
                r.slab[id as usize] = None;
                true
            }
            None => false,
        }
    }

    fn folio_check_dirty_writeback(&self, pfn: u64) -> DirtyWriteback {
        let r = self.0.borrow();
        match r.holders.get(&pfn) {
            Some(&Holder::File(id)) => r.states.dirty_writeback(id),
            _ => DirtyWriteback::default(),
        }
    }

    fn wakeup_flusher_threads(&self, now_us: u64) {
        self.0.borrow_mut().states.wakeup_flusher_threads(now_us);
    }

    fn writeback_completed(&self, now_us: u64) -> Vec<u64> {
        let mut r = self.0.borrow_mut();
        let ended = r.states.flush(now_us);
        ended
            .into_iter()
            .filter_map(|id| match r.files[id as usize] {
                FilePage::Cached { pfn } => Some(pfn),
                _ => None,
            })
            .collect()
    }

    fn writeback_ends_us(&self, pages: u64) -> Vec<u64> {
        self.0.borrow().states.writeback_ends_us(pages)
    }

    fn write_pending(&self) -> u64 {
        self.0.borrow().states.write_pending()
    }
}

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, _order: u32, mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut r = self.0.borrow_mut();
        let Some(&holder) = r.holders.get(&from.0) else {
            return Err(MigrateFail::Busy);
        };
        r.states.may_migrate(holder, mode)?;
        r.holders.remove(&from.0);
        r.holders.insert(to.0, holder);
        match holder {
            Holder::Anon(id) => {
                if let AnonPage::Present { pfn, .. } = &mut r.anon[id as usize] {
                    *pfn = to.0;
                }
            }
            Holder::AnonPart(id, i) => {
                if let Some(AnonPage::Present { pfn, .. }) = r.split.get_mut(&id).map(|p| &mut p[i as usize])
                {
                    *pfn = to.0;
                }
            }
            Holder::File(id) => r.files[id as usize] = FilePage::Cached { pfn: to.0 },
            Holder::Slab(id) => r.slab[id as usize] = Some(to.0),
        }
        Ok(())
    }

    fn folio_state(&self, pfn: Pfn, _order: u32) -> FolioState {
        let r = self.0.borrow();
        r.holders.get(&pfn.0).map_or_else(FolioState::default, |&h| r.states.folio(h))
    }
}

/// What a touch of an anonymous page did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// The page was in memory.
    Hit,
    /// It was swapped out and is back (`pswpin`).
    SwapIn,
    /// It is gone, or the swap-in could not be served.
    Miss,
}

/// The memory's users on one node.
#[derive(Debug, Default)]
pub struct Mm {
    owner: Owner,
}

/// `GFP_HIGHUSER_MOVABLE | __GFP_ZERO`: an anonymous fault.
const GFP_ANON: Gfp = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);

impl Mm {
    /// Attach to `node`: reclaim and compaction now reach these records.
    pub fn attach(node: &mut Node) -> Mm {
        let mm = Mm::default();
        node.set_unmap(Box::new(mm.owner.clone()));
        node.set_mover(Box::new(mm.owner.clone()));
        mm
    }

    fn records(&self) -> std::cell::RefMut<'_, Records> {
        self.owner.0.borrow_mut()
    }

    /// From now on new pages take their states from `shares` (on a node of `managed`
    /// pages, which sets the dirty background threshold).
    pub fn set_page_states(&self, shares: PageStateShares, managed: u64) {
        self.records().states = PageStates::new(shares, managed);
    }

    /// A new anonymous page: fault it in on `cpu`. Returns its id, or `None` if the fault
    /// failed (no page even after reclaim).
    pub fn fault_anon(&self, node: &Node, cpu: usize) -> Option<u32> {
        let pfn = node.alloc_pages(cpu, 0, GFP_ANON).ok()?;
        Some(self.map_anon(node, pfn.0, 0))
    }

    /// A huge page fault with `defrag` on `cpu`; returns the page id and its order (0 after a
    /// fallback), or `None` if not even a base page could be had.
    pub fn fault_thp(
        &self,
        node: &Node,
        cpu: usize,
        defrag: ThpDefrag,
        madvised: bool,
    ) -> Option<(u32, u32)> {
        let f = node.thp_fault(cpu, defrag, madvised).ok()?;
        Some((self.map_anon(node, f.pfn.0, f.order), f.order))
    }

    fn map_anon(&self, node: &Node, pfn: u64, order: u32) -> u32 {
        let id = {
            let mut r = self.records();
            let id = r.anon.len() as u32;
            r.anon.push(AnonPage::Present { pfn, order });
            r.holders.insert(pfn, Holder::Anon(id));
            r.states.anon_mapped(id);
            id
        };
        node.lru_add(Pfn(pfn), order, LruKind::Anon);
        id
    }

    /// Touch anonymous page `id`: mark it used, or swap it back in. A swapped-out huge page
    /// comes back whole, as base pages (swap-in reads base pages: `pswpin` counts each).
    pub fn touch_anon(&self, node: &Node, cpu: usize, id: u32) -> Touch {
        let page = self.records().anon[id as usize];
        match page {
            AnonPage::Present { pfn, .. } => {
                node.mark_page_accessed(Pfn(pfn));
                Touch::Hit
            }
            AnonPage::Swapped { order: 0, eviction, workingset } => {
                let Some(pfn) = self.swap_in(node, cpu, Holder::Anon(id), eviction, workingset) else {
                    return Touch::Miss;
                };
                self.records().anon[id as usize] = AnonPage::Present { pfn, order: 0 };
                Touch::SwapIn
            }
            AnonPage::Swapped { order, eviction, workingset } => {
                let part = AnonPage::Swapped { order: 0, eviction, workingset };
                let mut r = self.records();
                r.anon[id as usize] = AnonPage::Split;
                r.split.insert(id, vec![part; 1 << order]);
                drop(r);
                self.touch_split(node, cpu, id)
            }
            AnonPage::Split => self.touch_split(node, cpu, id),
            AnonPage::Gone => Touch::Miss,
        }
    }

    /// Touch every base page of split page `id`.
    fn touch_split(&self, node: &Node, cpu: usize, id: u32) -> Touch {
        let n = self.records().split.get(&id).map_or(0, Vec::len);
        let mut touch = Touch::Hit;
        for i in 0..n {
            let part = self.records().split[&id][i];
            match part {
                AnonPage::Present { pfn, .. } => node.mark_page_accessed(Pfn(pfn)),
                AnonPage::Swapped { eviction, workingset, .. } => {
                    let holder = Holder::AnonPart(id, i as u16);
                    let Some(pfn) = self.swap_in(node, cpu, holder, eviction, workingset) else {
                        return Touch::Miss;
                    };
                    if let Some(parts) = self.records().split.get_mut(&id) {
                        parts[i] = AnonPage::Present { pfn, order: 0 };
                    }
                    touch = Touch::SwapIn;
                }
                AnonPage::Split | AnonPage::Gone => {}
            }
        }
        touch
    }

    /// Read one base page back from swap for `holder` (`pswpin`); its pfn, or `None` if no
    /// page could be had.
    fn swap_in(
        &self,
        node: &Node,
        cpu: usize,
        holder: Holder,
        eviction: u64,
        workingset: bool,
    ) -> Option<u64> {
        let pfn = node.alloc_pages(cpu, 0, GFP_ANON).ok()?;
        self.records().holders.insert(pfn.0, holder);
        node.lru_add(pfn, 0, LruKind::Anon);
        node.shared().count(pageblock_core::VmEvent::Pswpin, 1);
        self.refault(node, pfn, LruKind::Anon, eviction, workingset);
        Some(pfn.0)
    }

    /// `workingset_refault()`: the base page at `pfn` came back from the shadow entry
    /// stamped `eviction` (with its workingset bit); an activation ages the non-resident
    /// pages too.
    fn refault(&self, node: &Node, pfn: Pfn, kind: LruKind, eviction: u64, workingset: bool) {
        let distance = self.records().nonresident_age - eviction;
        if node.note_refault(pfn, kind, distance, workingset) {
            self.records().nonresident_age += 1;
        }
    }

    /// Unmap anonymous page `id` (the process freed it or exited).
    pub fn unmap_anon(&self, node: &Node, cpu: usize, id: u32) {
        let page = std::mem::replace(&mut self.records().anon[id as usize], AnonPage::Gone);
        let parts = match page {
            AnonPage::Split => self.records().split.remove(&id).unwrap_or_default(),
            page => vec![page],
        };
        for part in parts {
            if let AnonPage::Present { pfn, order } = part {
                self.records().holders.remove(&pfn);
                let freed = node.free_pages(cpu, Pfn(pfn), order);
                debug_assert!(freed.is_ok(), "anon {id} at {pfn:#x}: {freed:?}");
            }
        }
    }

    /// Make room for `n` more file pages; returns the first id.
    pub fn add_files(&self, n: u32) -> u32 {
        let mut r = self.records();
        let first = r.files.len() as u32;
        r.files.extend(std::iter::repeat_n(FilePage::Uncached, n as usize));
        first
    }

    /// Read file page `id`: a cache hit marks it used; a miss allocates page cache (a refault
    /// if reclaim dropped it before). Returns whether it allocated.
    pub fn read_file(&self, node: &Node, cpu: usize, id: u32, gfp: Gfp) -> Result<bool, AllocError> {
        let page = self.records().files[id as usize];
        match page {
            FilePage::Cached { pfn } => {
                node.mark_page_accessed(Pfn(pfn));
                Ok(false)
            }
            FilePage::Uncached | FilePage::Evicted { .. } => {
                let pfn = node.alloc_pages(cpu, 0, gfp)?;
                {
                    let mut r = self.records();
                    r.files[id as usize] = FilePage::Cached { pfn: pfn.0 };
                    r.holders.insert(pfn.0, Holder::File(id));
                    r.states.file_cached(id);
                }
                node.lru_add(pfn, 0, LruKind::File);
                if let FilePage::Evicted { eviction, workingset } = page {
                    self.refault(node, pfn, LruKind::File, eviction, workingset);
                }
                Ok(true)
            }
        }
    }

    /// A reclaimable slab page (dentries, inodes) of `order`; its id, or `None` on failure.
    pub fn alloc_slab(&self, node: &Node, cpu: usize, order: u32, gfp: Gfp) -> Option<u32> {
        let pfn = node.alloc_pages(cpu, order, gfp).ok()?;
        let id = {
            let mut r = self.records();
            let id = r.slab.len() as u32;
            r.slab.push(Some(pfn.0));
            r.holders.insert(pfn.0, Holder::Slab(id));
            id
        };
        node.lru_add(pfn, order, LruKind::Slab);
        Some(id)
    }

    /// Touch slab page `id` (a lookup hit its objects).
    pub fn touch_slab(&self, node: &Node, id: u32) {
        if let Some(pfn) = self.records().slab[id as usize] {
            node.mark_page_accessed(Pfn(pfn));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::{NodeConfig, Policy, VmEvent, ZoneConfig};

    #[test]
    fn a_swapped_out_huge_page_comes_back_whole_as_base_pages() {
        let mut node =
            Node::new(NodeConfig::single(ZoneConfig::normal(64 << 20)), Policy::default()).unwrap();
        let mm = Mm::attach(&mut node);
        let free = node.shared().nr_free_pages();
        let (id, order) = mm.fault_thp(&node, 0, ThpDefrag::Always, true).unwrap();
        assert_eq!(order, 9);
        let AnonPage::Present { pfn, .. } = mm.records().anon[id as usize] else { panic!("mapped") };
        // Reclaim takes it whole (THP_SWAP).
        assert!(mm.owner.try_to_unmap(pfn, 9, LruKind::Anon, false));
        node.free_pages(0, Pfn(pfn), 9).unwrap();
        assert_eq!(mm.touch_anon(&node, 0, id), Touch::SwapIn);
        assert_eq!(node.shared().event(VmEvent::Pswpin), 512, "every base page is read back");
        node.drain_all_pages();
        assert_eq!(free - node.shared().nr_free_pages(), 512);
        assert_eq!(mm.touch_anon(&node, 0, id), Touch::Hit, "all back");
        mm.unmap_anon(&node, 0, id);
        node.drain_all_pages();
        assert_eq!(node.shared().nr_free_pages(), free, "every base page freed with the mapping");
    }
}
