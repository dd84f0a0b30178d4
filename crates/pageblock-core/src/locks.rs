//! How the one allocation path reaches what locks guard: a zone (`zone->lock`) and a CPU's
//! per-CPU lists (`pcp->lock`), plus the reclaim and compaction steps of the slow path.
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

use crate::compaction::{CompactPriority, CompactResult, Mover};
use crate::config::ZoneType;
use crate::gfp::{AllocFlags, Gfp};
use crate::node::NodeShared;
use crate::page_alloc::AllocContext;
use crate::pcp::PerCpuPages;
use crate::types::Pfn;
use crate::vmscan::ScanControl;
use crate::zone::Zone;

/// The whole driver interface of the allocation path, not only its locks: what the kernel's
/// locks guard (a zone, a CPU's lists), kswapd wakeups, and the slow path's reclaim and
/// compaction steps (LRU lists, the page mover). Implemented by the simulator
/// ([`crate::Node`]) and the thread-safe library (`pageblock::Pgdat`). Zones are indices into
/// [`NodeShared::zones`]; CPUs are `0..node().nr_cpus()`.
///
/// Compaction and reclaim run shared code ([`crate::compaction`], [`crate::vmscan`]); what
/// they need from the driver is what moves pages ([`NodeLocks::mover`]; without one nothing
/// moves and compaction does not start) and the LRU lists ([`NodeLocks::shrink_node`],
/// [`NodeLocks::zone_reclaimable_pages`]; without them reclaim frees nothing, and the slow
/// path continues as the kernel does in that case).
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

    /// `wakeup_kswapd()`: background reclaim for `zone` should start. The wake-up is recorded
    /// in [`NodeShared::daemons`]; the driver runs kswapd ([`crate::vmscan::kswapd::kswapd_run`]).
    fn wakeup_kswapd(&self, zone: usize, gfp: Gfp, order: u32, highest_zoneidx: ZoneType) {
        let _ = zone;
        crate::vmscan::kswapd::wakeup_kswapd(self, gfp, order, highest_zoneidx);
    }

    /// `try_to_free_pages()`: direct reclaim for `ac`; returns the pages reclaimed.
    fn try_to_free_pages(&self, cpu: usize, ac: &AllocContext) -> u64 {
        crate::vmscan::try_to_free_pages(self, cpu, ac)
    }

    /// `shrink_node()`: one reclaim pass over the node's LRU lists at `sc.priority`
    /// (nothing to reclaim without LRU lists).
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

    /// Pages on the node's inactive anonymous and file lists (none without LRU lists).
    fn inactive_lru_pages(&self) -> [u64; 2] {
        [0, 0]
    }

    /// What moves an allocated block's contents for compaction (`None`: nothing can move).
    fn mover(&self) -> Option<&dyn Mover> {
        None
    }

    /// `try_to_compact_pages()`: direct compaction at `order` for `ac`; returns the result
    /// and a page of `ac`'s order captured for the request, if any.
    fn try_to_compact_pages(
        &self,
        cpu: usize,
        ac: &AllocContext,
        order: u32,
        flags: AllocFlags,
        priority: CompactPriority,
    ) -> (CompactResult, Option<Pfn>) {
        crate::compaction::try_to_compact_pages(self, cpu, ac, order, flags, priority)
    }

    /// `compaction_zonelist_suitable()`: would compaction have a chance if reclaim freed
    /// what it could?
    fn compaction_zonelist_suitable(&self, ac: &AllocContext) -> bool {
        self.mover().is_some() && crate::compaction::compaction_zonelist_suitable(self, ac)
    }

    /// `zone_reclaimable_pages()`: pages reclaim could still free in `zone`.
    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        let _ = zone;
        0
    }
}
