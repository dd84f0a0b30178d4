//! Reclaim meeting dirty page cache and page cache under writeback (`shrink_folio_list`'s
//! dirty and writeback cases): nothing reclaim cannot write is freed, the flusher is nudged,
//! and a completed write brings a marked page back to the inactive tail.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;

use super::lru::{LruKind, LruList, Lruvec};
use super::shrink::{shrink_node, NodeFree, PageOut, ReclaimCost};
use super::{DirtyWriteback, ScanControl, SwapDevice, Unmap, SWAP_CLUSTER_MAX};

/// A page cache owner: which pages are dirty or under writeback, and the flusher's wakes.
#[derive(Default)]
struct Cache {
    dirty: RefCell<HashSet<u64>>,
    writeback: RefCell<HashSet<u64>>,
    flusher_woken: Cell<u32>,
}

impl Unmap for Cache {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        assert!(!self.dirty.borrow().contains(&pfn), "reclaim dropped dirty page {pfn}");
        assert!(!self.writeback.borrow().contains(&pfn), "reclaim dropped page {pfn} under writeback");
        true
    }

    fn folio_check_dirty_writeback(&self, pfn: u64) -> DirtyWriteback {
        DirtyWriteback {
            dirty: self.dirty.borrow().contains(&pfn),
            writeback: self.writeback.borrow().contains(&pfn),
        }
    }

    fn wakeup_flusher_threads(&self, _now_us: u64) {
        self.flusher_woken.set(self.flusher_woken.get() + 1);
        let started: Vec<u64> = self.dirty.borrow_mut().drain().collect();
        self.writeback.borrow_mut().extend(started);
    }
}

const ROOMY: NodeFree = NodeFree { free: 1 << 20, high_wmark: 1024 };

/// `file` inactive file pages, pfns 0.., the first `dirty` of them dirty.
fn page_cache(file: u64, dirty: u64) -> (Lruvec, Cache) {
    let mut lru = Lruvec::default();
    for pfn in 0..file {
        lru.add(pfn, 0, 0, LruList::InactiveFile, false);
    }
    let cache = Cache::default();
    cache.dirty.borrow_mut().extend(0..dirty);
    (lru, cache)
}

/// One kswapd pass at priority 0 (every page scanned); returns what it reclaimed.
fn pass(lru: &mut Lruvec, cache: &Cache) -> ScanControl {
    let mut sc = ScanControl { priority: 0, ..ScanControl::new(1 << 20, 0, 0, true) };
    let mut swap = SwapDevice::synchronous();
    let mut out =
        PageOut { unmap: cache, free: &mut |_, _| {}, swap: &mut swap, now_us: 0, pgdat_writeback: false };
    shrink_node(lru, &mut ReclaimCost::default(), &mut sc, ROOMY, &mut out);
    sc
}

/// Regression: reclaim dropped dirty page cache as if clean (6.18 cannot write it from
/// reclaim; it activates the page with `PG_reclaim` and leaves it to the flusher).
#[test]
fn dirty_page_cache_is_activated_with_pg_reclaim_not_freed() {
    let (mut lru, cache) = page_cache(2 * SWAP_CLUSTER_MAX, SWAP_CLUSTER_MAX / 2);
    let sc = pass(&mut lru, &cache);
    assert_eq!(sc.nr_reclaimed, 2 * SWAP_CLUSTER_MAX - SWAP_CLUSTER_MAX / 2, "only clean pages go");
    assert_eq!(sc.stat.pgactivate, SWAP_CLUSTER_MAX / 2);
    assert_eq!(lru.size(LruList::ActiveFile), SWAP_CLUSTER_MAX / 2);
    assert!(lru.get(0).is_some_and(|p| p.reclaim && p.list == LruList::ActiveFile));
    assert_eq!(cache.flusher_woken.get(), 0, "no batch was all dirty");
}

#[test]
fn a_batch_of_nothing_but_unqueued_dirty_pages_wakes_the_flusher() {
    let (mut lru, cache) = page_cache(SWAP_CLUSTER_MAX, SWAP_CLUSTER_MAX);
    let sc = pass(&mut lru, &cache);
    assert_eq!((sc.nr_reclaimed, cache.flusher_woken.get()), (0, 1));
    // Met again under writeback: activated again (the first look at a marked page by kswapd
    // on an unflagged node counts `nr_writeback`), still not freed.
    for pfn in 0..SWAP_CLUSTER_MAX {
        lru.end_writeback(pfn);
    }
    cache.writeback.borrow_mut().clear();
    cache.writeback.borrow_mut().insert(0);
    let again = pass(&mut lru, &cache);
    assert_eq!(again.nr.writeback, 1);
    assert_eq!(again.nr_reclaimed, SWAP_CLUSTER_MAX - 1, "written pages rotated to the tail are freed");
}

/// Regression: a page reclaim marked stayed on the active list when its write completed;
/// `folio_rotate_reclaimable` moves it to the inactive tail, active or not.
#[test]
fn a_completed_write_brings_a_marked_page_to_the_inactive_tail_from_the_active_list() {
    let (mut lru, cache) = page_cache(4, 1);
    let mut unmarked = Lruvec::default();
    unmarked.add(9, 0, 0, LruList::ActiveFile, false);
    pass(&mut lru, &cache);
    assert_eq!(lru.get(0).map(|p| p.list), Some(LruList::ActiveFile));
    cache.dirty.borrow_mut().clear();
    lru.add(7, 0, 0, LruList::InactiveFile, false);
    lru.end_writeback(0);
    unmarked.end_writeback(9);
    assert_eq!(unmarked.get(9).map(|p| p.list), Some(LruList::ActiveFile), "an unmarked page stays");
    let (pfn, page) = lru.pop_tail(LruList::InactiveFile).expect("a page at the tail");
    assert_eq!((pfn, page.reclaim), (0, false), "the written page is next to go, its mark spent");
}
