//! [`Pgdat`]: the node the library's threads share — zones behind mutexes, per-CPU lists
//! behind spinlocks, the arena, the movable handles, the shrinkers and the daemons' wait
//! queues — and its [`NodeLocks`] implementation, through which the one allocation path
//! (`pageblock_core::page_alloc`) reaches all of them.
//!
//! What the slow path asks of a driver, and what this one answers:
//!
//! * `wake_daemons`: after a wake-up is recorded (shared code), wake the kswapd thread — or
//!   the kcompactd thread, when the node is balanced and only a block is missing;
//! * `mover`: the movable-handle table ([`crate::movable`]) while any handle is live;
//!   compaction then moves (and, in an arena, copies) handle-owned blocks;
//! * `shrink_node` / `zone_reclaimable_pages`: the registered shrinkers
//!   ([`crate::shrinker`]);
//! * `in_reclaim`: true inside a shrinker (`PF_MEMALLOC`), so direct reclaim never recurses
//!   into itself.
//!
//! Lock order: a CPU's per-CPU lock, then a zone lock (never two of a kind). The shrinker
//! registry's read lock and the handle table's slot states are taken with no allocator lock
//! held; the daemons' wait-queue mutexes are leaf locks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use pageblock_core::mover::Mover;
use pageblock_core::pcp::PerCpuPages;
use pageblock_core::scan_control::ScanControl;
use pageblock_core::{ConfigError, NodeConfig, NodeLocks, NodeShared, Policy, Zone};

use crate::arena::Arena;
use crate::daemons::WaitQueue;
use crate::movable::MovableTable;
use crate::shrinker::Shrinkers;
use crate::sync::{SpinGuard, SpinLock};

/// The node shared by every thread of an [`crate::Allocator`] and its daemons.
pub struct Pgdat {
    pub(crate) shared: NodeShared,
    zones: Box<[Mutex<Zone>]>,
    /// At [`NodeShared::pcp_index`].
    pcp: Box<[SpinLock<PerCpuPages>]>,
    /// `nr_cpus - 1` when the slot count is a power of two (slot = ticket & mask).
    cpu_mask: Option<usize>,
    pub(crate) arena: Option<Arena>,
    zone_lock_acquisitions: AtomicU64,
    /// Movable handles: built on the first movable allocation.
    pub(crate) movable: std::sync::OnceLock<MovableTable>,
    pub(crate) shrinkers: Shrinkers,
    /// kswapd's and kcompactd's wait queues (`pgdat->kswapd_wait`, `kcompactd_wait`).
    pub(crate) kswapd_wait: WaitQueue,
    pub(crate) kcompactd_wait: WaitQueue,
    /// Set while the daemon threads are asked to exit.
    pub(crate) daemons_stop: AtomicBool,
    /// Whether daemon threads are running (wake-ups notify them only then).
    pub(crate) daemons_running: AtomicBool,
}

impl Pgdat {
    pub(crate) fn boot(
        config: NodeConfig,
        policy: Policy,
        arena: Option<Arena>,
    ) -> Result<Pgdat, ConfigError> {
        let (shared, zones) = NodeShared::boot(config, policy)?;
        let nr_cpus = shared.nr_cpus();
        let pcp = PerCpuPages::for_node(nr_cpus, &zones).map(SpinLock::new).collect();
        Ok(Pgdat {
            shared,
            zones: zones.into_iter().map(Mutex::new).collect(),
            pcp,
            cpu_mask: nr_cpus.is_power_of_two().then_some(nr_cpus - 1),
            arena,
            zone_lock_acquisitions: AtomicU64::new(0),
            movable: std::sync::OnceLock::new(),
            shrinkers: Shrinkers::default(),
            kswapd_wait: WaitQueue::default(),
            kcompactd_wait: WaitQueue::default(),
            daemons_stop: AtomicBool::new(false),
            daemons_running: AtomicBool::new(false),
        })
    }

    /// The slot the calling thread uses (a mask, not a division, for power-of-two counts).
    #[inline]
    pub(crate) fn this_cpu(&self) -> usize {
        let ticket = crate::cpu::thread_ticket();
        match self.cpu_mask {
            Some(mask) => ticket & mask,
            None => ticket % self.shared.nr_cpus(),
        }
    }

    /// The zone count.
    pub(crate) fn nr_zones(&self) -> usize {
        self.zones.len()
    }

    /// How many times a zone lock has been taken.
    pub(crate) fn zone_lock_acquisitions(&self) -> u64 {
        self.zone_lock_acquisitions.load(Ordering::Relaxed)
    }

    /// Wake the daemon threads whose wake-up is pending in [`NodeShared::daemons`].
    pub(crate) fn kick_daemons(&self) {
        if !self.daemons_running.load(Ordering::Acquire) {
            return;
        }
        let (kswapd, kcompactd) = {
            let d = self.shared.daemons();
            (d.kswapd_woken, d.kcompactd_woken)
        };
        if kswapd {
            self.kswapd_wait.wake();
        }
        if kcompactd {
            self.kcompactd_wait.wake();
        }
    }
}

impl NodeLocks for Pgdat {
    type ZoneGuard<'a> = MutexGuard<'a, Zone>;
    type PcpGuard<'a> = SpinGuard<'a, PerCpuPages>;

    #[inline]
    fn node(&self) -> &NodeShared {
        &self.shared
    }

    fn lock_zone(&self, zone: usize) -> MutexGuard<'_, Zone> {
        self.zone_lock_acquisitions.fetch_add(1, Ordering::Relaxed);
        // A panic under the zone lock is a broken invariant (a bug); poison adds nothing.
        self.zones[zone].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn trylock_zone(&self, zone: usize) -> Option<MutexGuard<'_, Zone>> {
        let guard = match self.zones[zone].try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.zone_lock_acquisitions.fetch_add(1, Ordering::Relaxed);
        Some(guard)
    }

    #[inline]
    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<SpinGuard<'_, PerCpuPages>> {
        self.pcp[self.shared.pcp_index(cpu, zone)].try_lock()
    }

    fn lock_pcp(&self, cpu: usize, zone: usize) -> SpinGuard<'_, PerCpuPages> {
        self.pcp[self.shared.pcp_index(cpu, zone)].lock()
    }

    fn wake_daemons(&self) {
        self.kick_daemons();
    }

    fn in_reclaim(&self) -> bool {
        crate::shrinker::in_reclaim()
    }

    fn shrink_node(&self, cpu: usize, sc: &mut ScanControl) {
        crate::shrinker::shrink_slab(self, cpu, sc);
    }

    fn mover(&self) -> Option<&dyn Mover> {
        self.movable.get().filter(|t| t.live() > 0).map(|_| self as &dyn Mover)
    }

    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        // Shrinkers are node-wide; their pages are counted once, in the highest zone.
        if zone + 1 == self.zones.len() {
            self.shrinkers.count_objects()
        } else {
            0
        }
    }
}
