//! Closed-loop replay: the trace supplies the workload's demand, the simulation supplies the
//! kernel's decisions. This is the memory's owner the simulated node calls back when its own
//! reclaim takes a page ([`Unmap`]) or its compaction moves one ([`Mover`]), and the rules
//! that tell the workload's frees from the kernel's.
//!
//! What each inference rests on:
//!
//! * **Who a traced allocation belongs to**, from its gfp mask alone ([`MemoryUser::of`]):
//!   a movable request with `__GFP_ZERO` is an anonymous fault (`vma_alloc_zeroed_movable_folio`
//!   zeroes; the page cache does not), a movable one with `__GFP_NOMEMALLOC` an anonymous
//!   (m)THP (`GFP_TRANSHUGE_LIGHT` has it, the page cache's masks do not: the shared trace's
//!   order-9 requests are `GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE`), any other movable one
//!   page cache, `__GFP_RECLAIMABLE` reclaimable slab, the rest kernel memory no reclaim can
//!   take (page tables, unmovable slab, buffers).
//! * **Which frees are the kernel's**: a free made by kswapd (reclaim) or kcompactd (the
//!   source of a migration), told by the task's comm, or made by a task between its own
//!   `mm_compaction_begin` and `mm_compaction_end` (direct compaction's migration sources) or
//!   its own `mm_vmscan_direct_reclaim_begin` and `_end` (direct reclaim; `lab real` records
//!   these, older recordings lack them and their direct reclaim's frees are replayed as the
//!   workload's). The window is the task's, told by its pid whatever CPU it runs on
//!   (`pageblock_trace`'s reader marks the records): counted per CPU, a burst's unmap that
//!   ran while another task compacted on its CPU was taken for migration sources (803k pages
//!   of C10's first `defrag_mode=0` run, which the simulation then held to the end). These
//!   frees are not replayed: the simulation keeps the page and its own reclaim
//!   and compaction decide. Except for pages allocated before the trace began: the
//!   simulation does not know whose they are (they are on no LRU list of it), so it cannot
//!   reclaim them, and the kernel's free of such a page is replayed — where the
//!   simulation's compaction put it (else every page the kernel reclaimed from the memory
//!   the workload found would stay allocated in the simulation for good).
//! * **Where a migrated page went**: the kernel allocates a migration target without an
//!   `mm_page_alloc` event, so the workload's later free of the target names a pfn the trace
//!   never allocated. The starting state already places an allocated page at every pfn the
//!   trace frees without allocating (it cannot tell a target from a page allocated before
//!   the trace), and such a free takes that page first. Failing that, the simulation's copy
//!   of a migrated page, kept in a pool by order, is freed instead. A migrated page that was
//!   allocated before the trace is freed where it was, as the kernel freed it (next rule's
//!   exception), and its target is the page the starting state placed.
//! * **Which pages compaction may move**: those the replay made (and the migrated copies),
//!   and the pages allocated before the trace that sit in Movable pageblocks (the kernel
//!   moves page cache, anonymous and mlocked memory alike); [`super::start_pages`] remembers
//!   where those went. Other pages from before the trace (kernel memory) are pinned. A
//!   replayed page cache page says so ([`FolioState::file`]): a compaction for a request
//!   without `__GFP_FS` (readahead's `GFP_NOFS`) may not isolate it. A page from before the
//!   trace reads as anonymous (its user is unknown), so such a compaction may move it.
//! * **A page the simulation reclaimed** that the workload frees later: nothing to free.
//!   The workload would have faulted it back in first, which the trace cannot show (the real
//!   kernel had not reclaimed it); these are counted, a lower bound of the refaults the
//!   simulation's reclaim would have caused.

use std::cell::RefCell;
use std::rc::Rc;

use pageblock_core::compaction::{FolioState, MigrateFail, MigrateMode, Mover};
use pageblock_core::pfn_table::PfnTable;
use pageblock_core::vmscan::{LruKind, Unmap};
use pageblock_core::{Gfp, Pfn};
use serde::Serialize;

use super::start_pages::StartPages;

/// Who a traced allocation belongs to, as reclaim sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryUser {
    /// Anonymous memory (swapped out by reclaim).
    Anon,
    /// Page cache (dropped by reclaim).
    File,
    /// Reclaimable slab (freed by the shrinkers).
    Slab,
    /// Kernel memory reclaim cannot take.
    Kernel,
}

impl MemoryUser {
    /// The user of an allocation with `gfp` (see the module's first rule).
    pub fn of(gfp: Gfp) -> MemoryUser {
        if gfp.contains(Gfp::MOVABLE) {
            if gfp.contains(Gfp::ZERO) || gfp.contains(Gfp::NOMEMALLOC) {
                MemoryUser::Anon
            } else {
                MemoryUser::File
            }
        } else if gfp.contains(Gfp::RECLAIMABLE) {
            MemoryUser::Slab
        } else {
            MemoryUser::Kernel
        }
    }

    /// Its LRU list kind, if reclaim can take it.
    pub fn lru(self) -> Option<LruKind> {
        match self {
            MemoryUser::Anon => Some(LruKind::Anon),
            MemoryUser::File => Some(LruKind::File),
            MemoryUser::Slab => Some(LruKind::Slab),
            MemoryUser::Kernel => None,
        }
    }
}

/// What closed-loop replay did that open-loop replay does not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClosedLoopCounts {
    /// Frees by kswapd, not replayed (the simulation's reclaim decides).
    pub reclaim_frees_skipped: u64,
    /// Frees of migration sources (kcompactd, direct compaction), not replayed.
    pub migration_frees_skipped: u64,
    /// The kernel's reclaim and migration frees of pages allocated before the trace,
    /// replayed: the simulation has no owner for them to reclaim or move them itself.
    pub start_frees_replayed: u64,
    /// Workload frees of a pfn the trace never allocated that took a migrated page from the
    /// pool.
    pub migrated_pages_freed: u64,
    /// Pages the simulation's reclaim took.
    pub pages_reclaimed: u64,
    /// Of those, pages the workload freed later (it would have faulted them back first).
    pub reclaimed_then_freed: u64,
    /// Pages the simulation's compaction moved.
    pub pages_moved: u64,
    /// Of those, pages allocated before the trace (see [`super::start_pages`]).
    pub start_pages_moved: u64,
    /// Large folios compaction split for want of a free block of their order to move into.
    pub folios_split: u64,
}

/// A replayed block compaction moved: traced head, simulated head before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// The traced head pfn.
    pub traced: u64,
    /// The simulated head it was at.
    pub from: u64,
    /// Where it is now.
    pub to: u64,
}

/// What compaction did to a replayed block, for the engine's map, in the order it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compacted {
    /// Moved whole.
    Moved(Moved),
    /// Split into base pages where it was (`split_folio_to_list`, for want of a free block
    /// of its order).
    Split {
        /// The traced head pfn.
        traced: u64,
        /// The simulated head pfn.
        sim: u64,
        /// The order it had.
        order: u32,
    },
}

/// A replayed page the owner knows: its traced head, and whether it is page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    traced: u64,
    file: bool,
}

/// A pool entry's flag bit (beside `order + 1`): the page is page cache.
const POOL_FILE: u8 = 0x80;

/// The owner's records, shared between the engine and the node's callbacks.
#[derive(Debug, Default)]
struct Records {
    /// Simulated head pfn → traced head pfn, for pages reclaim or compaction may act on.
    /// (Tables by pfn: reclaim reads them in LRU order, random in pfn.)
    traced_of: PfnTable<Option<Held>>,
    /// Simulated head pfn → order + 1 of pages kept after the kernel migrated them (the
    /// pool; 0: none), with [`POOL_FILE`] for page cache.
    migrated: PfnTable<u8>,
    /// The pool by order: simulated head pfns (stale entries skipped when taken).
    pool: Vec<Vec<u64>>,
    /// (traced head, simulated head) of pages reclaim took, for the engine to forget.
    reclaimed: Vec<(u64, u64)>,
    /// What compaction did to replayed pages.
    compacted: Vec<Compacted>,
    /// The pages allocated before the trace (the engine's too).
    start: Rc<RefCell<StartPages>>,
    counts: ClosedLoopCounts,
}

impl Records {
    /// What the owner knew of simulated page `sim`, forgotten.
    fn take_traced(&mut self, sim: u64) -> Option<Held> {
        self.traced_of.get_mut(sim)?.take()
    }

    /// The order of pooled page `sim` and whether it is page cache, taken out of the
    /// pool's index.
    fn take_migrated(&mut self, sim: u64) -> Option<(u32, bool)> {
        let v = std::mem::take(self.migrated.get_mut(sim)?);
        (v != 0).then(|| (u32::from(v & !POOL_FILE) - 1, v & POOL_FILE != 0))
    }

    /// Pool page `sim` holds a block of `order` (at most `MAX_PAGE_ORDER`, far below 127).
    fn set_migrated(&mut self, sim: u64, order: u32, file: bool) {
        debug_assert!(order < 127);
        *self.migrated.entry(sim) = (order as u8 + 1) | if file { POOL_FILE } else { 0 };
    }

    /// Page `sim`, a block of `order`, joins the pool.
    fn pool_add(&mut self, sim: u64, order: u32, file: bool) {
        self.set_migrated(sim, order, file);
        let o = order as usize;
        if self.pool.len() <= o {
            self.pool.resize(o + 1, Vec::new());
        }
        self.pool[o].push(sim);
    }
}

/// A handle on the records (what the node holds as its [`Unmap`] and [`Mover`]).
#[derive(Clone, Debug, Default)]
pub struct Owner(Rc<RefCell<Records>>);

impl Owner {
    /// The owner of the replayed pages, and mover of `start`'s movable ones.
    pub fn new(start: Rc<RefCell<StartPages>>) -> Owner {
        Owner(Rc::new(RefCell::new(Records { start, ..Records::default() })))
    }

    /// A page the engine replayed (`file`: page cache): reclaim and compaction may act on
    /// it.
    pub fn track(&self, sim: u64, traced: u64, file: bool) {
        *self.0.borrow_mut().traced_of.entry(sim) = Some(Held { traced, file });
    }

    /// The engine freed the page: forget it.
    pub fn untrack(&self, sim: u64) {
        self.0.borrow_mut().take_traced(sim);
    }

    /// The kernel freed a traced page itself (reclaim: `migrated` false; a migration
    /// source: true). The simulation keeps its copy, `page` (simulated head, order), if it
    /// still holds one; a migrated one joins the pool.
    pub fn kernel_freed(&self, page: Option<(u64, u32)>, migrated: bool) {
        let mut r = self.0.borrow_mut();
        if !migrated {
            r.counts.reclaim_frees_skipped += 1;
        } else {
            r.counts.migration_frees_skipped += 1;
        }
        let Some((sim, order)) = page else { return };
        let file = r.take_traced(sim).is_some_and(|h| h.file);
        if migrated {
            r.pool_add(sim, order, file);
        }
    }

    /// The kernel's reclaim or migration freed a page allocated before the trace: replayed.
    pub fn kernel_freed_from_start(&self) {
        self.0.borrow_mut().counts.start_frees_replayed += 1;
    }

    /// A migrated page of `order` from the pool, taken out of it, for a workload free the
    /// trace cannot place.
    pub fn take_migrated(&self, order: u32) -> Option<u64> {
        let mut r = self.0.borrow_mut();
        while let Some(sim) = r.pool.get_mut(order as usize).and_then(Vec::pop) {
            if r.take_migrated(sim).is_some_and(|(o, _)| o == order) {
                r.counts.migrated_pages_freed += 1;
                return Some(sim);
            }
        }
        None
    }

    /// The workload freed a page the simulation had reclaimed.
    pub fn freed_after_reclaim(&self) {
        self.0.borrow_mut().counts.reclaimed_then_freed += 1;
    }

    /// Pages reclaim took since the last call: (traced head, simulated head). The engine
    /// acts on one only if the traced block is still simulated there (a lost free may have
    /// let the trace allocate the same head again meanwhile).
    pub fn take_reclaimed(&self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.0.borrow_mut().reclaimed)
    }

    /// What compaction did to replayed pages since the last call, in order.
    pub fn take_compacted(&self) -> Vec<Compacted> {
        std::mem::take(&mut self.0.borrow_mut().compacted)
    }

    /// Whether anything waits in [`Owner::take_reclaimed`] or [`Owner::take_compacted`].
    pub fn has_news(&self) -> bool {
        let r = self.0.borrow();
        !r.reclaimed.is_empty() || !r.compacted.is_empty()
    }

    /// The counts so far.
    pub fn counts(&self) -> ClosedLoopCounts {
        self.0.borrow().counts
    }
}

impl Unmap for Owner {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        let mut r = self.0.borrow_mut();
        r.counts.pages_reclaimed += 1;
        if let Some(h) = r.take_traced(pfn) {
            r.reclaimed.push((h.traced, pfn));
        }
        r.take_migrated(pfn);
        true
    }
}

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut r = self.0.borrow_mut();
        r.counts.pages_moved += 1 << order;
        if let Some(h) = r.take_traced(from.0) {
            *r.traced_of.entry(to.0) = Some(h);
            r.compacted.push(Compacted::Moved(Moved { traced: h.traced, from: from.0, to: to.0 }));
        } else if r.start.borrow_mut().moved(from.0, to.0) {
            r.counts.start_pages_moved += 1;
        }
        if let Some((o, file)) = r.take_migrated(from.0) {
            r.pool_add(to.0, o, file);
        }
        Ok(())
    }

    /// A replayed block becomes as many replayed base pages, a pooled one as many pooled
    /// base pages. A page from before the trace moves only as a base page: never split.
    fn split(&self, from: Pfn, order: u32) -> bool {
        let mut r = self.0.borrow_mut();
        let pages = 1u64 << order;
        if let Some(h) = r.take_traced(from.0) {
            for i in 0..pages {
                *r.traced_of.entry(from.0 + i) = Some(Held { traced: h.traced + i, file: h.file });
            }
            r.compacted.push(Compacted::Split { traced: h.traced, sim: from.0, order });
            r.counts.folios_split += 1;
            return true;
        }
        let Some((_, file)) = r.take_migrated(from.0) else { return false };
        for i in 0..pages {
            r.pool_add(from.0 + i, 0, file);
        }
        r.counts.folios_split += 1;
        true
    }

    /// A replayed page (or a migrated copy) is page cache or anonymous as its user; a
    /// movable one from before the trace reads as anonymous. A page that is neither
    /// (kernel memory, a balloon's) cannot be moved: it reads as pinned.
    fn folio_state(&self, pfn: Pfn, order: u32) -> FolioState {
        let r = self.0.borrow();
        let file = match (r.traced_of.peek(pfn.0), r.migrated.peek(pfn.0)) {
            (Some(h), _) => h.file,
            (None, v) if v != 0 => v & POOL_FILE != 0,
            _ if r.start.borrow().may_move(pfn.0, order) => false,
            _ => return FolioState { pinned: true, ..FolioState::default() },
        };
        FolioState { file, ..FolioState::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_come_from_the_gfp_mask() {
        let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
        assert_eq!(MemoryUser::of(anon), MemoryUser::Anon);
        assert_eq!(MemoryUser::of(Gfp::HIGHUSER_MOVABLE), MemoryUser::File);
        assert_eq!(MemoryUser::of(Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::WRITE.0)), MemoryUser::File);
        assert_eq!(MemoryUser::of(Gfp::TRANSHUGE), MemoryUser::Anon);
        assert_eq!(MemoryUser::of(Gfp::TRANSHUGE_LIGHT), MemoryUser::Anon);
        assert_eq!(MemoryUser::of(Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0)), MemoryUser::Slab);
        assert_eq!(MemoryUser::of(Gfp::KERNEL), MemoryUser::Kernel);
        assert_eq!(MemoryUser::of(Gfp::ATOMIC), MemoryUser::Kernel);
    }

    /// A split replayed block is as many replayed base pages, each with its traced pfn; a
    /// split pooled block, as many pooled base pages; a page the owner does not know of
    /// stays whole.
    #[test]
    fn a_split_block_becomes_base_pages_the_engine_hears_of() {
        let o = Owner::default();
        o.track(0x200, 0x7000, true);
        assert!(o.split(Pfn(0x200), 2));
        assert_eq!(o.take_compacted(), vec![Compacted::Split { traced: 0x7000, sim: 0x200, order: 2 }]);
        assert_eq!(o.folio_state(Pfn(0x203), 0), FolioState { file: true, ..FolioState::default() });
        o.migrate(Pfn(0x203), Pfn(0x900), 0, MigrateMode::SyncLight).unwrap();
        assert_eq!(
            o.take_compacted(),
            vec![Compacted::Moved(Moved { traced: 0x7003, from: 0x203, to: 0x900 })]
        );
        o.kernel_freed(Some((0x400, 3)), true);
        assert!(o.split(Pfn(0x400), 3));
        assert_eq!(o.take_migrated(3), None, "the pooled block is no more");
        assert_eq!(o.take_migrated(0), Some(0x407), "its pages are");
        assert!(!o.split(Pfn(0x800), 1), "nothing known there");
        assert_eq!(o.counts().folios_split, 2);
    }

    #[test]
    fn reclaim_and_migration_are_reported_to_the_engine() {
        let o = Owner::default();
        o.track(100, 7000, false);
        o.track(200, 8000, true);
        assert!(Mover::migrate(&o, Pfn(200), Pfn(300), 0, MigrateMode::Async).is_ok());
        assert_eq!(o.take_compacted(), vec![Compacted::Moved(Moved { traced: 8000, from: 200, to: 300 })]);
        assert!(o.try_to_unmap(100, 0, LruKind::Anon, false));
        assert_eq!(o.take_reclaimed(), vec![(7000, 100)]);
        assert!(!o.has_news());
        assert_eq!((o.counts().pages_reclaimed, o.counts().pages_moved), (1, 1));
    }

    #[test]
    fn a_migrated_page_waits_in_the_pool_and_follows_compaction() {
        let o = Owner::default();
        o.track(100, 7000, true);
        o.kernel_freed(Some((100, 0)), true);
        assert!(Mover::migrate(&o, Pfn(100), Pfn(400), 0, MigrateMode::Async).is_ok());
        assert_eq!(o.take_migrated(1), None, "no page of that order");
        assert_eq!(o.take_migrated(0), Some(400), "where compaction put it");
        assert_eq!(o.take_migrated(0), None);
        o.track(500, 9000, false);
        o.kernel_freed(Some((500, 0)), true);
        assert!(o.try_to_unmap(500, 0, LruKind::File, false));
        assert_eq!(o.take_migrated(0), None, "reclaim took it from the pool");
        assert!(o.take_reclaimed().is_empty(), "it had no traced identity left");
    }

    /// Regression: the owner said every page was anonymous, so a `GFP_NOFS` request's
    /// compaction (readahead's) isolated page cache the kernel's may not.
    #[test]
    fn page_cache_reads_as_file_wherever_it_moves() {
        let o = Owner::default();
        o.track(100, 7000, true);
        o.track(200, 8000, false);
        assert!(Mover::folio_state(&o, Pfn(100), 0).file);
        assert!(!Mover::folio_state(&o, Pfn(200), 0).file);
        assert!(Mover::migrate(&o, Pfn(100), Pfn(300), 0, MigrateMode::Async).is_ok());
        assert!(Mover::folio_state(&o, Pfn(300), 0).file, "moved page cache stays page cache");
        o.kernel_freed(Some((300, 0)), true);
        assert!(Mover::folio_state(&o, Pfn(300), 0).file, "and in the pool");
        assert!(Mover::migrate(&o, Pfn(300), Pfn(400), 0, MigrateMode::Async).is_ok());
        let s = Mover::folio_state(&o, Pfn(400), 0);
        assert!(s.file && !s.pinned, "a pooled copy moved keeps its kind");
        assert!(Mover::folio_state(&o, Pfn(999), 0).pinned, "an unknown page is pinned");
    }
}
