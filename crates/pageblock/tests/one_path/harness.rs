//! [`Harness`]: a driver wrapped so that both drivers see the same world — trylocks that fail
//! on a seeded schedule (another CPU holds the lock) and the node's LRU lists.
//!
//! It forwards the lock primitives and the mover to the driver it wraps and runs every
//! composite step of the slow path (direct reclaim, compaction, kswapd's wake-up) through the
//! shared code with itself as the driver, so a failed trylock or a reclaimed page reaches the
//! same call sites in both. The LRU lists are the harness's own: the simulator keeps them in
//! `Node` (its `set_unmap`), the library has none (its owners of memory register shrinkers,
//! a different back-end), so the one comparable reclaim is the shared LRU model on the
//! driver's locks.

use std::cell::{Cell, RefCell};

use pageblock::Pfn;
use pageblock_core::mover::Mover;
use pageblock_core::page_alloc;
use pageblock_core::vmscan::shrink::{self, PageOut};
use pageblock_core::vmscan::{
    LruKind, LruList, Lruvec, NodeFree, ReclaimCost, ScanControl, SwapDevice, Unmap,
};
use pageblock_core::{NodeLocks, NodeShared};

use crate::common::Rng;

/// The wrapped driver `L`.
pub struct Harness<'a, L> {
    inner: &'a L,
    /// A trylock fails when this stream's next number is below `fail_per_256` (of 256).
    contention: Option<(RefCell<Rng>, u64)>,
    /// Trylocks failed so far.
    pub failed: Cell<u64>,
    lru: RefCell<Lruvec>,
    cost: RefCell<ReclaimCost>,
    swap: RefCell<SwapDevice>,
    evicted: Evicted,
}

/// The pages reclaim took, in order, until the owner collects them.
#[derive(Default)]
struct Evicted(RefCell<Vec<u64>>);

impl Unmap for Evicted {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        self.0.borrow_mut().push(pfn);
        true
    }
}

impl<'a, L: NodeLocks> Harness<'a, L> {
    /// `inner` with uncontended locks, or with trylocks failing `fail_per_256` times in 256
    /// on the stream `seed`.
    pub fn new(inner: &'a L, contention: Option<(u64, u64)>) -> Harness<'a, L> {
        Harness {
            inner,
            contention: contention.map(|(seed, p)| (RefCell::new(Rng(seed)), p)),
            failed: Cell::new(0),
            lru: Default::default(),
            cost: Default::default(),
            swap: RefCell::new(SwapDevice::synchronous()),
            evicted: Evicted::default(),
        }
    }

    /// Does this trylock find the lock held?
    fn contended(&self) -> bool {
        let Some((rng, per_256)) = &self.contention else {
            return false;
        };
        let held = rng.borrow_mut().next() % 256 < *per_256;
        self.failed.set(self.failed.get() + u64::from(held));
        held
    }

    /// `folio_add_lru()` for the allocated block `pfn`/`order`.
    pub fn lru_add(&self, pfn: Pfn, order: u32, kind: LruKind) {
        let zone = self.node().zone_of(pfn.0).expect("an allocated block lies in a zone");
        assert!(self.lru.borrow_mut().add(pfn.0, order, zone, LruList::inactive(kind), false));
    }

    /// The owner frees a block: it leaves the LRU lists.
    pub fn lru_del(&self, pfn: Pfn) {
        self.lru.borrow_mut().del(pfn.0);
    }

    /// The pages reclaim took since the last call (their owner forgets them).
    pub fn take_evicted(&self) -> Vec<u64> {
        std::mem::take(&mut self.evicted.0.borrow_mut())
    }
}

impl<L: NodeLocks> NodeLocks for Harness<'_, L> {
    type ZoneGuard<'b>
        = L::ZoneGuard<'b>
    where
        Self: 'b;
    type PcpGuard<'b>
        = L::PcpGuard<'b>
    where
        Self: 'b;

    fn node(&self) -> &NodeShared {
        self.inner.node()
    }

    fn lock_zone(&self, zone: usize) -> Self::ZoneGuard<'_> {
        self.inner.lock_zone(zone)
    }

    fn trylock_zone(&self, zone: usize) -> Option<Self::ZoneGuard<'_>> {
        if self.contended() {
            return None;
        }
        self.inner.trylock_zone(zone)
    }

    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<Self::PcpGuard<'_>> {
        if self.contended() {
            return None;
        }
        self.inner.trylock_pcp(cpu, zone)
    }

    fn lock_pcp(&self, cpu: usize, zone: usize) -> Self::PcpGuard<'_> {
        self.inner.lock_pcp(cpu, zone)
    }

    fn mover(&self) -> Option<&dyn Mover> {
        self.inner.mover()
    }

    fn need_resched(&self, cpu: usize) -> bool {
        self.inner.need_resched(cpu)
    }

    fn shrink_node(&self, cpu: usize, sc: &mut ScanControl) {
        let mut lru = self.lru.borrow_mut();
        let mut out = PageOut {
            unmap: &self.evicted,
            free: &mut |pfn, order| page_alloc::free_pages(self, cpu, Pfn(pfn), order).unwrap(),
            swap: &mut self.swap.borrow_mut(),
            now_us: 0,
            pgdat_writeback: self.node().daemons().pgdat_writeback,
        };
        let free = NodeFree::of(self.node());
        shrink::shrink_node(&mut lru, &mut self.cost.borrow_mut(), sc, free, &mut out);
    }

    fn snapshot_refaults(&self) {
        self.cost.borrow_mut().snapshot_refaults();
    }

    fn inactive_lru_pages(&self) -> [u64; 2] {
        let lru = self.lru.borrow();
        [lru.size(LruList::InactiveAnon), lru.size(LruList::InactiveFile)]
    }

    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        let lru = self.lru.borrow();
        let lists = [
            LruList::InactiveAnon,
            LruList::ActiveAnon,
            LruList::InactiveFile,
            LruList::ActiveFile,
            LruList::Slab,
        ];
        lists.into_iter().map(|l| lru.zone_size(zone, l)).sum()
    }
}
