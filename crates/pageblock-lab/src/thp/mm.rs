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
use pageblock_core::vmscan::{LruKind, Unmap};
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
    /// Written to swap (a huge page is swapped whole here).
    Swapped {
        /// The order it had.
        order: u32,
        /// The shadow entry: the node's non-resident age when it was swapped out.
        eviction: u64,
    },
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
    },
}

/// Who holds an allocated block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    Anon(u32),
    File(u32),
    Slab(u32),
}

/// The records, shared between the workload and the node's callbacks.
#[derive(Debug, Default)]
struct Records {
    holders: FxHashMap<u64, Holder>,
    anon: Vec<AnonPage>,
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
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind) -> bool {
        let mut r = self.0.borrow_mut();
        let eviction = r.nonresident_age;
        if let Some(&h) = r.holders.get(&pfn) {
            if !r.states.may_reclaim(h) {
                return false;
            }
            r.states.reclaimed(h);
        }
        match r.holders.remove(&pfn) {
            Some(Holder::Anon(id)) => {
                let slot = &mut r.anon[id as usize];
                if let AnonPage::Present { order, .. } = *slot {
                    *slot = AnonPage::Swapped { order, eviction };
                    r.nonresident_age += 1 << order;
                }
                true
            }
            Some(Holder::File(id)) => {
                r.files[id as usize] = FilePage::Evicted { eviction };
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

    /// The flusher at the node's current time (see [`super::page_states`]).
    pub fn flush_dirty(&self, node: &Node) {
        self.records().states.flush(node.now_us());
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

    /// Touch anonymous page `id`: mark it used, or swap it back in.
    pub fn touch_anon(&self, node: &Node, cpu: usize, id: u32) -> Touch {
        let page = self.records().anon[id as usize];
        match page {
            AnonPage::Present { pfn, .. } => {
                node.mark_page_accessed(Pfn(pfn));
                Touch::Hit
            }
            AnonPage::Swapped { eviction, .. } => {
                // Swap-in reads base pages: a swapped-out huge page comes back as one base
                // page (a simplification: its other pages are not faulted back).
                let Ok(pfn) = node.alloc_pages(cpu, 0, GFP_ANON) else {
                    return Touch::Miss;
                };
                {
                    let mut r = self.records();
                    r.anon[id as usize] = AnonPage::Present { pfn: pfn.0, order: 0 };
                    r.holders.insert(pfn.0, Holder::Anon(id));
                }
                node.lru_add(pfn, 0, LruKind::Anon);
                node.shared().count(pageblock_core::VmEvent::Pswpin, 1);
                self.refault(node, pfn, LruKind::Anon, eviction);
                Touch::SwapIn
            }
            AnonPage::Gone => Touch::Miss,
        }
    }

    /// `workingset_refault()`: the base page at `pfn` came back from the shadow entry
    /// stamped `eviction`; an activation ages the non-resident pages too.
    fn refault(&self, node: &Node, pfn: Pfn, kind: LruKind, eviction: u64) {
        let distance = self.records().nonresident_age - eviction;
        if node.note_refault(pfn, kind, distance) {
            self.records().nonresident_age += 1;
        }
    }

    /// Unmap anonymous page `id` (the process freed it or exited).
    pub fn unmap_anon(&self, node: &Node, cpu: usize, id: u32) {
        let page = std::mem::replace(&mut self.records().anon[id as usize], AnonPage::Gone);
        if let AnonPage::Present { pfn, order } = page {
            self.records().holders.remove(&pfn);
            let freed = node.free_pages(cpu, Pfn(pfn), order);
            debug_assert!(freed.is_ok(), "anon {id} at {pfn:#x}: {freed:?}");
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
                if let FilePage::Evicted { eviction } = page {
                    self.refault(node, pfn, LruKind::File, eviction);
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
