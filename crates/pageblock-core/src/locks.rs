//! How the one allocation path reaches what locks guard: a zone (`zone->lock`) and a CPU's
//! per-CPU lists (`pcp->lock`), plus the hooks reclaim and compaction need from the owner
//! of the memory.
//!
//! [`crate::page_alloc`] is written once against this trait; two drivers implement it:
//!
//! * [`crate::Node`], the deterministic simulator: a single thread, the "locks" are
//!   `RefCell` borrows, the CPU is whichever the workload or the trace names;
//! * `pageblock::Allocator`, the thread-safe library: a mutex per zone, a spinlock per CPU's
//!   lists, `try_lock` where the kernel trylocks.
//!
//! A result from the lab is therefore a result about the library's code path too.
//!
//! Lock order (as in the kernel): a CPU's per-CPU lock, then a zone lock; never two zone
//! locks or two per-CPU locks at once.

use std::ops::DerefMut;

use crate::mover::Mover;
use crate::node::NodeShared;
use crate::pcp::PerCpuPages;
use crate::scan_control::ScanControl;
use crate::zone::Zone;

/// The driver interface of the allocation path, as primitives: what the kernel's locks guard
/// (a zone, a CPU's lists), the daemons' wake-up, and what reclaim and compaction need from
/// the owner of the memory (the LRU lists, the page mover). Implemented by the simulator
/// ([`crate::Node`]) and the thread-safe library (`pageblock::Pgdat`). Zones are indices into
/// [`NodeShared::zones`]; CPUs are `0..node().nr_cpus()`.
///
/// The slow path's steps are written once over this trait, as free functions in their own
/// modules: kswapd's wake-up ([`crate::vmscan::kswapd::wakeup_kswapd`]), direct reclaim
/// ([`crate::vmscan::try_to_free_pages`]), direct compaction
/// ([`crate::compaction::try_to_compact_pages`]). What they need from the driver is what
/// moves pages ([`NodeLocks::mover`]; without one nothing moves and compaction does not
/// start) and the LRU lists ([`NodeLocks::shrink_node`], [`NodeLocks::zone_reclaimable_pages`];
/// without them reclaim frees nothing, and the slow path continues as the kernel does in that
/// case). This module imports no algorithm: the trait sits below them all.
pub trait NodeLocks {
    /// A held zone lock.
    type ZoneGuard<'a>: DerefMut<Target = Zone>
    where
        Self: 'a;
    /// A held per-CPU lock.
    type PcpGuard<'a>: DerefMut<Target = PerCpuPages>
    where
        Self: 'a;

    /// The node's lock-free half.
    fn node(&self) -> &NodeShared;

    /// `spin_lock(&zone->lock)`.
    fn lock_zone(&self, zone: usize) -> Self::ZoneGuard<'_>;

    /// `spin_trylock(&zone->lock)`: `None` if another thread holds it (async compaction then
    /// counts the run contended). By default the lock is taken: a single-threaded driver
    /// never finds it held.
    fn trylock_zone(&self, zone: usize) -> Option<Self::ZoneGuard<'_>> {
        Some(self.lock_zone(zone))
    }

    /// `pcp_spin_trylock()`: `None` if another thread holds it (the request then goes to the
    /// buddy lists, the free straight to the zone).
    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<Self::PcpGuard<'_>>;

    /// `spin_lock(&pcp->lock)`, for drains.
    fn lock_pcp(&self, cpu: usize, zone: usize) -> Self::PcpGuard<'_>;

    /// Start the daemons whose wake-up [`NodeShared::daemons`] records as pending (the end of
    /// [`crate::vmscan::kswapd::wakeup_kswapd`]). By default nothing: the simulator runs them
    /// itself when they are due; the library wakes its daemon threads.
    fn wake_daemons(&self) {}

    /// `current->flags & PF_MEMALLOC`: the calling thread is itself reclaiming (a shrinker
    /// that allocates), so direct reclaim would recurse and does nothing. By default never:
    /// the simulator's reclaim allocates nothing.
    fn in_reclaim(&self) -> bool {
        false
    }

    /// `need_resched()`: the scheduler wants the CPU `cpu`'s task is running on back. Async
    /// direct compaction then leaves the zones it has not tried yet. By default never: a
    /// thread of the library has no kernel scheduler to ask, and a simulation only knows
    /// how often the traced tasks found it set (`Node::set_need_resched`).
    fn need_resched(&self, cpu: usize) -> bool {
        let _ = cpu;
        false
    }

    /// `shrink_node()`: one reclaim pass over the node's LRU lists at `sc.priority`
    /// (nothing to reclaim without LRU lists). A hook rather than shared code because the
    /// two drivers reclaim genuinely different memory: the simulator's LRU lists of its
    /// workload's pages, the library's caller-registered shrinkers.
    fn shrink_node(&self, cpu: usize, sc: &mut ScanControl) {
        let _ = (cpu, sc);
    }

    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` for the reclaimer `sc`: how long it
    /// sleeps waiting for swap writes, in microseconds (none without a swap device).
    fn reclaim_throttle_writeback(&self, sc: &ScanControl) -> u64 {
        let _ = sc;
        0
    }

    /// `snapshot_refaults()`: a reclaim invocation ended; remember the workingset
    /// activations seen so far (nothing to remember without LRU lists).
    fn snapshot_refaults(&self) {}

    /// Pages on the node's inactive anonymous and file lists (none without LRU lists; no
    /// anonymous ones without swap space).
    fn inactive_lru_pages(&self) -> [u64; 2] {
        [0, 0]
    }

    /// What moves an allocated block's contents for compaction (`None`: nothing can move).
    fn mover(&self) -> Option<&dyn Mover> {
        None
    }

    /// `zone_reclaimable_pages()`: pages reclaim could still free in `zone` (anonymous
    /// pages only with swap space).
    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        let _ = zone;
        0
    }

    /// `NR_ZONE_WRITE_PENDING` over the node: pages dirty or under writeback, to swap or
    /// to a file (none without LRU lists).
    fn write_pending_pages(&self) -> u64 {
        0
    }
}

/// Take zone `zone`'s lock on behalf of `cpu` (events under it are stamped with `cpu`).
#[inline]
pub(crate) fn lock_zone<L: NodeLocks + ?Sized>(l: &L, zone: usize, cpu: usize) -> L::ZoneGuard<'_> {
    let mut guard = l.lock_zone(zone);
    guard.set_cpu(cpu);
    guard
}
