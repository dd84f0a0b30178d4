//! [`Node`]: the deterministic, single-threaded driver of the allocation path — the
//! simulator the lab runs workloads and traces on.
//!
//! It owns every zone and every CPU's per-CPU lists in `RefCell`s; "taking a lock" is a
//! borrow, and a borrow that is already held is a bug in the path (it panics), the simulated
//! equivalent of a self-deadlock. CPUs are simulated: each call names the CPU it runs on, as
//! the workload or the trace's CPU column decides. Time is simulated too:
//! [`Node::advance_to`] moves the clock and runs the vmstat worker's per-CPU pass every
//! second, as the kernel does (`decay_pcp_high`).

use std::cell::{Ref, RefCell, RefMut};
use std::sync::Arc;

use crate::alloc::AllocError;
use crate::compaction::{self, CompactResult, Mover};
use crate::config::{ConfigError, NodeConfig, Policy, ZoneConfig};
use crate::free::FreeError;
use crate::gfp::Gfp;
use crate::locks::NodeLocks;
use crate::node::NodeShared;
use crate::page_alloc;
use crate::pcp::PerCpuPages;
use crate::types::Pfn;
use crate::verify::{PageCensus, VerifyError};
use crate::zone::Zone;

/// `sysctl_stat_interval`: how often the vmstat worker runs on each CPU, in microseconds.
pub const STAT_INTERVAL_US: u64 = 1_000_000;

/// A simulated node.
///
/// ```
/// use pageblock_core::{Gfp, Node, NodeConfig, Policy};
///
/// let node = Node::new(NodeConfig::x86_64(1 << 30, 2), Policy::default()).unwrap();
/// let pfn = node.alloc_pages(0, 3, Gfp::KERNEL).unwrap();
/// node.free_pages(1, pfn, 3).unwrap();
/// assert!(node.free_pages(0, pfn, 3).is_err(), "a double free is refused");
/// node.verify().unwrap();
/// ```
pub struct Node {
    shared: Arc<NodeShared>,
    zones: Box<[RefCell<Zone>]>,
    /// At [`NodeShared::pcp_index`].
    pcp: Box<[RefCell<PerCpuPages>]>,
    now_us: u64,
    next_vmstat_us: u64,
    /// Moves allocated blocks for compaction: the owner of the memory installs it.
    mover: Option<Box<dyn Mover>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("shared", &self.shared)
            .field("now_us", &self.now_us)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Boot a node.
    pub fn new(config: NodeConfig, policy: Policy) -> Result<Node, ConfigError> {
        let (shared, zones) = NodeShared::boot(config, policy)?;
        let pcp = PerCpuPages::for_node(shared.nr_cpus(), &zones).map(RefCell::new).collect();
        Ok(Node {
            shared: Arc::new(shared),
            zones: zones.into_iter().map(RefCell::new).collect(),
            pcp,
            now_us: 0,
            next_vmstat_us: STAT_INTERVAL_US,
            mover: None,
        })
    }

    /// Boot a node with one zone.
    pub fn single_zone(zone: ZoneConfig, policy: Policy) -> Result<Node, ConfigError> {
        Node::new(NodeConfig::single(zone), policy)
    }

    /// The lock-free half (configuration, counters, trace hub).
    pub fn shared(&self) -> &Arc<NodeShared> {
        &self.shared
    }

    /// Allocate 2^`order` pages on CPU `cpu` (`alloc_pages`). Panics if `cpu` is not below
    /// the node's CPU count.
    pub fn alloc_pages(&self, cpu: usize, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        self.check_cpu(cpu);
        page_alloc::alloc_pages(self, cpu, order, gfp)
    }

    /// Free a block on CPU `cpu` (`__free_pages`). Misuse is refused and changes nothing.
    /// Panics if `cpu` is not below the node's CPU count.
    pub fn free_pages(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.check_cpu(cpu);
        page_alloc::free_pages(self, cpu, pfn, order)
    }

    fn check_cpu(&self, cpu: usize) {
        assert!(cpu < self.shared.nr_cpus(), "CPU {cpu} of a {}-CPU node", self.shared.nr_cpus());
    }

    /// Let compaction move allocated blocks through `mover` (which updates whoever holds
    /// their pfns). Without a mover compaction never starts.
    pub fn set_mover(&mut self, mover: Box<dyn Mover>) {
        self.mover = Some(mover);
    }

    /// `echo 1 > /proc/sys/vm/compact_memory`: compact every zone whole, synchronously, on
    /// CPU `cpu`. Returns each zone's result (empty without a mover).
    pub fn compact_memory(&self, cpu: usize) -> Vec<CompactResult> {
        self.check_cpu(cpu);
        compaction::compact_node(self, cpu, false)
    }

    /// `drain_all_pages()`.
    pub fn drain_all_pages(&self) {
        page_alloc::drain_all_pages(self);
    }

    /// The simulated clock, in microseconds.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    /// Move the clock to `now_us` (never backwards), running every vmstat worker pass that
    /// falls due on the way.
    pub fn advance_to(&mut self, now_us: u64) {
        self.now_us = self.now_us.max(now_us);
        while self.next_vmstat_us <= self.now_us {
            self.shared.trace().set_time_us(self.next_vmstat_us);
            for cpu in 0..self.shared.nr_cpus() {
                page_alloc::vmstat_update(self, cpu);
            }
            self.next_vmstat_us += STAT_INTERVAL_US;
        }
        self.shared.trace().set_time_us(self.now_us);
    }

    /// Zone `i` (borrowed: do not hold it across an allocation).
    pub fn zone(&self, i: usize) -> Ref<'_, Zone> {
        self.zones[i].borrow()
    }

    /// CPU `cpu`'s lists for zone `i`.
    pub fn pcp(&self, cpu: usize, i: usize) -> Ref<'_, PerCpuPages> {
        self.pcp[self.shared.pcp_index(cpu, i)].borrow()
    }

    /// Check every invariant of every zone and every CPU's lists; returns the node's census.
    pub fn verify(&self) -> Result<PageCensus, VerifyError> {
        let mut total = PageCensus::default();
        for (i, zone) in self.zones.iter().enumerate() {
            let zone = zone.borrow();
            let census = zone.verify()?;
            let mut cached = 0;
            for cpu in 0..self.shared.nr_cpus() {
                cached += self.pcp(cpu, i).verify(zone.shared())?;
            }
            if census.pcp != cached {
                return Err(VerifyError(format!(
                    "zone {}: {} pages are per-CPU in the memmap, the lists hold {cached}",
                    zone.config().zone_type.name(),
                    census.pcp
                )));
            }
            total = total + census;
        }
        Ok(total)
    }
}

impl NodeLocks for Node {
    type ZoneGuard<'a> = RefMut<'a, Zone>;
    type PcpGuard<'a> = RefMut<'a, PerCpuPages>;

    #[inline]
    fn node(&self) -> &NodeShared {
        &self.shared
    }

    #[inline]
    fn lock_zone(&self, zone: usize) -> RefMut<'_, Zone> {
        self.zones[zone].borrow_mut()
    }

    #[inline]
    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<RefMut<'_, PerCpuPages>> {
        // One thread: the lock is never contended.
        Some(self.lock_pcp(cpu, zone))
    }

    #[inline]
    fn lock_pcp(&self, cpu: usize, zone: usize) -> RefMut<'_, PerCpuPages> {
        self.pcp[self.shared.pcp_index(cpu, zone)].borrow_mut()
    }

    fn mover(&self) -> Option<&dyn Mover> {
        self.mover.as_deref()
    }
}
