//! [`Node`]: the deterministic, single-threaded driver of the allocation path — the
//! simulator the lab runs workloads and traces on.
//!
//! It owns every zone and every CPU's per-CPU lists in `RefCell`s; "taking a lock" is a
//! borrow, and a borrow that is already held is a bug in the path (it panics), the simulated
//! equivalent of a self-deadlock. CPUs are simulated: each call names the CPU it runs on, as
//! the workload or the trace's CPU column decides. It also owns the node's LRU lists
//! ([`crate::vmscan`]), the page mover its owner installs for compaction, and the daemons.
//! Time is simulated too: [`Node::advance_to`] moves the clock, runs the vmstat worker's
//! per-CPU pass every second, as the kernel does (`decay_pcp_high`), and runs kswapd and
//! kcompactd when they are due.

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::sync::Arc;

use crate::compaction::{
    self, kcompactd_pass, kcompactd_work_requested, CompactResult, FolioState, MigrateFail, MigrateMode,
    Mover,
};
use crate::config::{ConfigError, NodeConfig, ZoneConfig, ZoneType};
use crate::gfp::Gfp;
use crate::invariant::VerifyError;
use crate::locks::NodeLocks;
use crate::node::NodeShared;
use crate::page_alloc;
use crate::pcp::PerCpuPages;
use crate::policy::Policy;
use crate::stats::VmEvent;
use crate::thp::{self, ThpDefrag, ThpFault};
use crate::types::Pfn;
use crate::vmscan::kswapd::{kswapd_nap_over, kswapd_run, kswapd_run_time_us, KswapdNext, KSWAPD_NAP_US};
use crate::vmscan::{
    shrink, swap_io, LruKind, LruList, Lruvec, NodeFree, ReclaimCost, ScanControl, SwapDevice, SwapLatency,
    Unmap, KSWAPD_WAKE_DELAY_US, SWAP_CLUSTER_MAX,
};
use crate::zone::alloc::AllocError;
use crate::zone::free::FreeError;
use crate::zone::verify::PageCensus;
use crate::zone::Zone;

/// `sysctl_stat_interval`: how often the vmstat worker runs on each CPU, in microseconds.
pub const STAT_INTERVAL_US: u64 = 1_000_000;

/// The simulator: one whole node (`pg_data_t` with its zones, per-CPU lists, LRU lists,
/// kswapd, kcompactd and a simulated clock) on a single thread, and one of the two drivers of
/// [`NodeLocks`] (the other is the library's `Pgdat`). Despite the short name it is not
/// [`NodeShared`] (the lock-free part every driver shares).
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
    /// The owner of reclaimable memory and the node's LRU lists.
    reclaim: Option<Reclaim>,
    /// When kswapd next looks for work.
    kswapd_due_us: Option<u64>,
    /// Draws the time from a wake-up to kswapd's run (default: [`KSWAPD_WAKE_DELAY_US`]).
    kswapd_wake_delay: Option<Box<dyn FnMut() -> u64>>,
    /// kswapd's nap: when it ends, and the order and zone it checks balance at then.
    kswapd_nap: Option<(u64, u32, ZoneType)>,
    /// The end of kswapd's last run in simulated time, and the highest zone it balanced:
    /// until then those zones keep `ZONE_RECLAIM_ACTIVE` (the run's reclaim happened at its
    /// start; the kernel's takes that long, and its CPU lists cache less meanwhile).
    kswapd_busy: Option<(u64, ZoneType)>,
    /// kcompactd's loop in simulated time.
    kcompactd: KcompactdClock,
    /// The CPUs kswapd and kcompactd run on now.
    daemon_cpus: DaemonCpus,
    /// A daemon was woken (`NodeLocks::wake_daemons`) or ran since the daemons last looked.
    wake_pending: Cell<bool>,
    /// Draws whether the scheduler wants the CPU back when async compaction asks (default:
    /// never).
    need_resched: RefCell<Option<Box<dyn FnMut() -> bool>>>,
}

/// Where the periodic daemons are in their periods, in µs from now: the next vmstat round
/// (at most [`STAT_INTERVAL_US`]) and kcompactd's next timeout (at most
/// [`compaction::PROACTIVE_INTERVAL_US`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaemonPhases {
    /// Until the next vmstat round.
    pub vmstat_us: u64,
    /// Until kcompactd's next timeout.
    pub kcompactd_us: u64,
}

/// The CPUs the daemons run on. The kernel's kswapd and kcompactd are bound to their node,
/// not to a CPU: the scheduler moves them, and the pages kswapd reclaims go to the lists of
/// the CPU it is on at the time (`free_unref_folios`), where that CPU's next allocations find
/// them. A driver that knows where they ran (a trace names the CPU of each of their events)
/// says so with [`Node::set_daemon_cpus`]; otherwise both run on the last CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaemonCpus {
    /// kswapd's CPU.
    pub kswapd: usize,
    /// kcompactd's CPU.
    pub kcompactd: usize,
}

/// kcompactd's loop in simulated time: busy with its last pass until `busy_until_us`, then
/// waiting until `timeout_at_us` (`None`: until woken).
#[derive(Debug)]
struct KcompactdClock {
    busy_until_us: u64,
    /// The wait has begun (its condition was checked when the last pass ended).
    waiting: bool,
    timeout_at_us: Option<u64>,
}

impl KcompactdClock {
    /// At boot kcompactd waits with the default timeout (none without proactiveness).
    fn boot(policy: &Policy) -> KcompactdClock {
        let timeout =
            (policy.sysctls.compaction_proactiveness() > 0).then_some(compaction::PROACTIVE_INTERVAL_US);
        KcompactdClock { busy_until_us: 0, waiting: true, timeout_at_us: timeout }
    }

    /// Does kcompactd's wait end at `now_us`: a wake-up, the timeout, or — when the wait
    /// begins — work requested while the last pass ran (`kcompactd_work_requested` is
    /// checked before sleeping)?
    fn wait_over(&mut self, now_us: u64, woken: bool, requested: bool) -> bool {
        if now_us < self.busy_until_us {
            return false;
        }
        let begins = !self.waiting;
        self.waiting = true;
        woken || (begins && requested) || self.timeout_at_us.is_some_and(|t| now_us >= t)
    }

    /// A pass ran at `now_us`.
    fn ran(&mut self, now_us: u64, pass: compaction::KcompactdPass) {
        self.busy_until_us = now_us + pass.run_time_us();
        self.waiting = false;
        self.timeout_at_us = pass.timeout_us.map(|t| self.busy_until_us + t);
    }
}

/// What reclaim needs: the LRU lists, their cost state, who to tell about evictions, and
/// the swap device.
struct Reclaim {
    lru: RefCell<Lruvec>,
    cost: RefCell<ReclaimCost>,
    unmap: Box<dyn Unmap>,
    swap: RefCell<SwapDevice>,
}

impl Reclaim {
    /// `folio_end_writeback()` for every write completed by `now_us`: to swap, and page
    /// cache the owner's flusher wrote.
    fn end_writeback(&self, now_us: u64) {
        let mut done = self.swap.borrow_mut().complete(now_us);
        done.extend(self.unmap.writeback_completed(now_us));
        let mut lru = self.lru.borrow_mut();
        for pfn in done {
            lru.end_writeback(pfn);
        }
    }
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
        let kcompactd = KcompactdClock::boot(&policy);
        let (shared, zones) = NodeShared::boot(config, policy)?;
        let last_cpu = shared.nr_cpus() - 1;
        let pcp = PerCpuPages::for_node(shared.nr_cpus(), &zones).map(RefCell::new).collect();
        Ok(Node {
            shared: Arc::new(shared),
            zones: zones.into_iter().map(RefCell::new).collect(),
            pcp,
            now_us: 0,
            next_vmstat_us: STAT_INTERVAL_US,
            mover: None,
            reclaim: None,
            kswapd_due_us: None,
            kswapd_wake_delay: None,
            need_resched: RefCell::new(None),
            kswapd_nap: None,
            kswapd_busy: None,
            daemon_cpus: DaemonCpus { kswapd: last_cpu, kcompactd: last_cpu },
            kcompactd,
            wake_pending: Cell::new(true),
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

    /// Free a block on CPU `cpu` (`__free_pages`); a page on an LRU list leaves it. Misuse is
    /// refused and changes nothing. Panics if `cpu` is not below the node's CPU count.
    pub fn free_pages(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.check_cpu(cpu);
        page_alloc::free_pages(self, cpu, pfn, order)?;
        if let Some(r) = &self.reclaim {
            r.lru.borrow_mut().del(pfn.0);
        }
        Ok(())
    }

    /// A huge page fault on CPU `cpu` ([`thp::thp_fault`]) at the pageblock order.
    pub fn thp_fault(&self, cpu: usize, defrag: ThpDefrag, madvised: bool) -> Result<ThpFault, AllocError> {
        self.check_cpu(cpu);
        thp::thp_fault(self, cpu, self.shared.pageblock_order(), defrag, madvised)
    }

    /// Make memory reclaimable: `unmap` is told of every page reclaim takes; pages join the
    /// LRU lists with [`Node::lru_add`]. Anonymous pages are swapped to a block device with
    /// [`SwapLatency::default`] until [`Node::set_swap_device`] says otherwise.
    pub fn set_unmap(&mut self, unmap: Box<dyn Unmap>) {
        self.reclaim = Some(Reclaim {
            lru: Default::default(),
            cost: Default::default(),
            unmap,
            swap: RefCell::new(SwapDevice::block(SwapLatency::default())),
        });
    }

    /// What the scheduler says when async direct compaction asks `need_resched()` between
    /// zones: `draw()` each time (a replay draws at the rate the traced tasks found it set).
    /// By default it is never set.
    pub fn set_need_resched(&mut self, draw: Box<dyn FnMut() -> bool>) {
        *self.need_resched.get_mut() = Some(draw);
    }

    /// The daemons' timing, which a driver may know better than the defaults (a trace's
    /// measured scheduling latency) or not know at all (where in their periods the
    /// periodic ones are when a replay starts). From now on each kswapd wake-up runs it
    /// `wake_delay()` µs later (default: [`KSWAPD_WAKE_DELAY_US`] every time); the next
    /// vmstat round comes `phases.vmstat_us` from now, and kcompactd's next timeout
    /// `phases.kcompactd_us` from now if it is waiting on one.
    pub fn set_daemon_timing(&mut self, wake_delay: Box<dyn FnMut() -> u64>, phases: DaemonPhases) {
        self.kswapd_wake_delay = Some(wake_delay);
        self.next_vmstat_us = self.now_us + phases.vmstat_us.clamp(1, STAT_INTERVAL_US);
        if self.kcompactd.timeout_at_us.is_some() && self.now_us >= self.kcompactd.busy_until_us {
            self.kcompactd.timeout_at_us =
                Some(self.now_us + phases.kcompactd_us.clamp(1, compaction::PROACTIVE_INTERVAL_US));
        }
    }

    /// From now on kswapd and kcompactd run on `cpus` (each taken modulo the node's CPUs).
    pub fn set_daemon_cpus(&mut self, cpus: DaemonCpus) {
        let n = self.shared.nr_cpus();
        self.daemon_cpus = DaemonCpus { kswapd: cpus.kswapd % n, kcompactd: cpus.kcompactd % n };
    }

    /// The CPUs kswapd and kcompactd run on.
    pub fn daemon_cpus(&self) -> DaemonCpus {
        self.daemon_cpus
    }

    /// Swap to `device` from now on (no effect before [`Node::set_unmap`]).
    pub fn set_swap_device(&mut self, device: SwapDevice) {
        if let Some(r) = &self.reclaim {
            *r.swap.borrow_mut() = device;
        }
    }

    /// `folio_add_lru()`: the allocated block at `pfn` holds reclaimable memory of `kind`
    /// (new anonymous and file pages start inactive). False if there are no LRU lists, the
    /// block is not allocated with that order, or it is already on a list.
    pub fn lru_add(&self, pfn: Pfn, order: u32, kind: LruKind) -> bool {
        self.lru_add_young(pfn, order, kind, false)
    }

    /// [`Node::lru_add`] for a page a fault maps into a process (anonymous memory, a mapped
    /// file): its page table entry starts young, so reclaim's first look at it only marks it
    /// and keeps it on the inactive list (`folio_check_references`' `FOLIOREF_KEEP`); a
    /// later look finds it unused and reclaims it unless it was used again.
    pub fn lru_add_mapped(&self, pfn: Pfn, order: u32, kind: LruKind) -> bool {
        self.lru_add_young(pfn, order, kind, true)
    }

    fn lru_add_young(&self, pfn: Pfn, order: u32, kind: LruKind, young: bool) -> bool {
        let (Some(r), Some(z)) = (&self.reclaim, self.shared.zone_of(pfn.0)) else {
            return false;
        };
        if self.shared.zone(z).check_allocated(pfn, order).is_err() {
            return false;
        }
        r.lru.borrow_mut().add(pfn.0, order, z, LruList::inactive(kind), young)
    }

    /// Takes the block at `pfn` off the LRU lists (it stays allocated); false if it was on
    /// none.
    pub fn lru_del(&self, pfn: Pfn) -> bool {
        self.reclaim.as_ref().is_some_and(|r| r.lru.borrow_mut().del(pfn.0).is_some())
    }

    /// The LRU entry of the block at `pfn`, if it is on a list.
    pub fn lru_page(&self, pfn: Pfn) -> Option<crate::vmscan::lru::LruPage> {
        self.reclaim.as_ref()?.lru.borrow().get(pfn.0)
    }

    /// `folio_mark_accessed()`.
    pub fn mark_page_accessed(&self, pfn: Pfn) {
        if let Some(r) = &self.reclaim {
            r.lru.borrow_mut().mark_accessed(pfn.0);
        }
    }

    /// `workingset_refault()`: the page at `pfn` (just added to the LRU as `kind`) was
    /// reclaimed before and is needed again, `refault_distance` evictions and activations
    /// after its eviction; `workingset` is its shadow entry's bit (it was active before
    /// eviction). If the distance fits in the workingset it is activated
    /// (`WORKINGSET_ACTIVATE`, which keeps reclaim out of cache-trim mode): it moves to the
    /// active list, and — if it was active before — makes `kind` costlier to reclaim and is
    /// part of the workingset again. Returns whether it was activated.
    pub fn note_refault(&self, pfn: Pfn, kind: LruKind, refault_distance: u64, workingset: bool) -> bool {
        let Some(r) = &self.reclaim else {
            return false;
        };
        let mut lru = r.lru.borrow_mut();
        let Some(page) = lru.get(pfn.0) else {
            return false;
        };
        let pages = 1u64 << page.order;
        let activated = lru.workingset_test_recent(kind, refault_distance);
        if activated {
            lru.activate(pfn.0);
            if let Some(page) = lru.del(pfn.0) {
                let page = crate::vmscan::lru::LruPage { workingset, ..page };
                lru.put(pfn.0, page, page.list, page.zone as usize);
            }
        }
        r.cost.borrow_mut().note_refault(kind, pages, activated, workingset, lru.lru_pages());
        let ev = if kind == LruKind::Anon {
            VmEvent::WorkingsetRefaultAnon
        } else {
            VmEvent::WorkingsetRefaultFile
        };
        self.shared.count(ev, pages);
        activated
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
        page_alloc::drain_all_pages(self, None);
    }

    /// The simulated clock, in microseconds.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    /// Move the clock to `now_us` (never backwards), running every vmstat worker pass that
    /// falls due on the way, then the daemons: kswapd [`KSWAPD_WAKE_DELAY_US`] after it was
    /// woken and again each time its last run's time ([`kswapd_run_time_us`]) has passed while
    /// the node stays unbalanced (the zones it balanced keep `ZONE_RECLAIM_ACTIVE` that long:
    /// the run's reclaim is done at its start, its length is simulated), its premature-sleep
    /// check [`KSWAPD_NAP_US`] after a balanced run; kcompactd when its wait ends — a wake-up (kswapd's is seen at the next call), work
    /// requested while it was busy, or the timeout its last pass set
    /// ([`compaction::kcompactd_pass`]: 500 ms, 32 s after a proactive run that did not lower
    /// the score) — each pass keeping it busy for [`compaction::KcompactdPass::run_time_us`].
    /// Each daemon runs at most once per call. The daemons run on the last CPU.
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
        if let Some(r) = &self.reclaim {
            r.end_writeback(self.now_us);
        }
        if self.kswapd_busy.is_some_and(|(until, _)| self.now_us >= until) {
            self.set_reclaim_active(false);
        }
        self.run_daemons();
    }

    /// Whether a daemon could act at this step: a wake-up since the daemons last looked
    /// (every path that sets their wake flags from outside goes through
    /// `NodeLocks::wake_daemons`), kswapd due or at its nap's end, kcompactd's wait beginning
    /// or timing out. Most steps have none, and skip the daemons' lock.
    fn daemons_may_act(&self) -> bool {
        self.wake_pending.get()
            || self.kswapd_due_us.is_some()
            || self.kswapd_nap.is_some_and(|(until, _, _)| self.now_us >= until)
            || !self.kcompactd.waiting
            || self.kcompactd.timeout_at_us.is_some_and(|t| self.now_us >= t)
    }

    fn run_daemons(&mut self) {
        if !self.daemons_may_act() {
            return;
        }
        // A run may wake the other daemon for the next step: look again then.
        let ran = self.shared.event(VmEvent::Pageoutrun) + self.shared.event(VmEvent::CompactDaemonWake);
        self.wake_pending.set(false);
        let DaemonCpus { kswapd, kcompactd: kcompactd_cpu } = self.daemon_cpus;
        // kcompactd woken by this kswapd run runs at the next step.
        let woken = self.shared.daemons().kcompactd_woken;
        let kcompactd = self.kcompactd.wait_over(self.now_us, woken, kcompactd_work_requested(&self.shared));
        self.run_kswapd(kswapd);
        if kcompactd {
            let pass = kcompactd_pass(self, kcompactd_cpu);
            self.kcompactd.ran(self.now_us, pass);
        }
        let now_ran = self.shared.event(VmEvent::Pageoutrun) + self.shared.event(VmEvent::CompactDaemonWake);
        if now_ran != ran {
            self.wake_pending.set(true);
        }
    }

    /// kswapd's loop in simulated time: a wake-up during the nap ends it; at the nap's end
    /// the premature-sleep check may keep kswapd awake (no wake-up delay: it never slept).
    fn run_kswapd(&mut self, cpu: usize) {
        if let Some((until, order, idx)) = self.kswapd_nap {
            if self.shared.daemons().kswapd_woken {
                self.kswapd_nap = None;
            } else if self.now_us >= until {
                self.kswapd_nap = None;
                kswapd_nap_over(&self.shared, order, idx);
                self.kswapd_due_us = Some(until);
            }
        }
        if !self.shared.daemons().kswapd_woken {
            return;
        }
        let due = match self.kswapd_due_us {
            Some(due) => due,
            None => {
                let delay = self.kswapd_wake_delay.as_mut().map_or(KSWAPD_WAKE_DELAY_US, |draw| draw());
                *self.kswapd_due_us.insert(self.now_us + delay)
            }
        };
        if self.now_us < due {
            return;
        }
        let run = kswapd_run(self, cpu);
        let busy_until = self.now_us + kswapd_run_time_us(run.scanned, run.folios, run.throttled_us);
        if let Some(idx) = run.highest_zoneidx {
            self.kswapd_busy = Some((busy_until, idx));
            self.set_reclaim_active(true);
        }
        self.kswapd_due_us = None;
        match run.next {
            KswapdNext::Idle => {}
            KswapdNext::Rerun => self.kswapd_due_us = Some(busy_until),
            KswapdNext::Nap { order, idx } => {
                self.kswapd_nap = Some((busy_until + KSWAPD_NAP_US, order, idx));
            }
        }
    }

    /// Set or clear `ZONE_RECLAIM_ACTIVE` on the zones kswapd's last run balanced (`balance_pgdat`'s
    /// `set_reclaim_active`/`clear_reclaim_active`, held over the run's simulated time); clearing
    /// forgets the run.
    fn set_reclaim_active(&mut self, on: bool) {
        let Some((_, idx)) = self.kswapd_busy else {
            return;
        };
        for zone in self.shared.zones() {
            if zone.config().zone_type <= idx && zone.managed_pages() > 0 {
                zone.flags().set_reclaim_active(on);
            }
        }
        if !on {
            self.kswapd_busy = None;
        }
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
        crate::verify::verify_node(self)
    }
}

#[cfg(test)]
impl Node {
    /// Order-0 requests of `gfp` on CPU 0 until refused, taking back what the CPUs cache,
    /// until a round gets nothing (the unit tests' fill; the integration tests have theirs in
    /// `tests/common`). Returns the pages.
    pub(crate) fn fill(&self, gfp: Gfp) -> Vec<Pfn> {
        let mut pages = Vec::new();
        loop {
            let start = pages.len();
            while let Ok(pfn) = self.alloc_pages(0, 0, gfp) {
                pages.push(pfn);
            }
            self.drain_all_pages();
            if pages.len() == start {
                return pages;
            }
        }
    }
}

impl NodeLocks for Node {
    type ZoneGuard<'a> = RefMut<'a, Zone>;
    type PcpGuard<'a> = RefMut<'a, PerCpuPages>;

    fn wake_daemons(&self) {
        self.wake_pending.set(true);
    }

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
        self.mover.as_ref().map(|_| self as &dyn Mover)
    }

    fn need_resched(&self, _cpu: usize) -> bool {
        self.need_resched.borrow_mut().as_mut().is_some_and(|draw| draw())
    }

    fn shrink_node(&self, cpu: usize, sc: &mut ScanControl) {
        let Some(r) = &self.reclaim else {
            return;
        };
        // The reclaimer's clock: writes done by now have rotated their pages.
        let now_us = self.now_us + sc.elapsed_us();
        r.end_writeback(now_us);
        let mut lru = r.lru.borrow_mut();
        let mut cost = r.cost.borrow_mut();
        let free = NodeFree::of(&self.shared);
        let mut out = shrink::PageOut {
            unmap: r.unmap.as_ref(),
            free: &mut |pfn, order| {
                // Reclaimed pages are freed like any other (the owner already let go of them).
                let freed = page_alloc::free_pages(self, cpu, Pfn(pfn), order);
                debug_assert!(freed.is_ok(), "reclaimed {pfn:#x}/{order}: {freed:?}");
            },
            swap: &mut r.swap.borrow_mut(),
            now_us: self.now_us,
            pgdat_writeback: self.shared.daemons().pgdat_writeback,
        };
        shrink::shrink_node(&mut lru, &mut cost, sc, free, &mut out);
    }

    fn reclaim_throttle_writeback(&self, sc: &ScanControl) -> u64 {
        let Some(r) = &self.reclaim else {
            return 0;
        };
        let now_us = self.now_us + sc.elapsed_us();
        r.end_writeback(now_us);
        let mut ends = r.swap.borrow().writes_end_us(SWAP_CLUSTER_MAX);
        ends.extend(r.unmap.writeback_ends_us(SWAP_CLUSTER_MAX));
        swap_io::throttle_us(now_us, ends)
    }

    fn snapshot_refaults(&self) {
        if let Some(r) = &self.reclaim {
            r.cost.borrow_mut().snapshot_refaults();
        }
    }

    fn inactive_lru_pages(&self) -> [u64; 2] {
        self.reclaim.as_ref().map_or([0, 0], |r| {
            let lru = r.lru.borrow();
            let anon = if r.swap.borrow().can_reclaim_anon() { lru.size(LruList::InactiveAnon) } else { 0 };
            [anon, lru.size(LruList::InactiveFile)]
        })
    }

    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        let Some(r) = &self.reclaim else {
            return 0;
        };
        let lru = r.lru.borrow();
        // Anonymous pages count only where they can go somewhere (swap space).
        let anon = [LruList::InactiveAnon, LruList::ActiveAnon];
        let anon = if r.swap.borrow().can_reclaim_anon() { &anon[..] } else { &[] };
        [LruList::InactiveFile, LruList::ActiveFile, LruList::Slab]
            .iter()
            .chain(anon)
            .map(|&l| lru.zone_size(zone, l))
            .sum()
    }

    fn write_pending_pages(&self) -> u64 {
        self.reclaim.as_ref().map_or(0, |r| r.swap.borrow().pages_in_flight() + r.unmap.write_pending())
    }
}

/// The node moves a block through the owner's mover, and keeps its LRU entry with it. A
/// page under swap writeback cannot move; a written page only in the swap cache is the
/// node's to move.
impl Mover for Node {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, mode: MigrateMode) -> Result<(), MigrateFail> {
        let Some(mover) = &self.mover else {
            return Err(MigrateFail::Busy);
        };
        let page = self.reclaim.as_ref().and_then(|r| r.lru.borrow().get(from.0));
        if page.is_some_and(|p| p.writeback) {
            // `migrate_folio_unmap`: only MIGRATE_SYNC waits for writeback, and the
            // simulator cannot wait inside a run; every other mode gets -EBUSY.
            return Err(MigrateFail::Busy);
        }
        if !page.is_some_and(|p| p.swapcache) {
            mover.migrate(from, to, order, mode)?;
        }
        if let (Some(r), Some(z)) = (&self.reclaim, self.shared.zone_of(to.0)) {
            let mut lru = r.lru.borrow_mut();
            if let Some(page) = lru.del(from.0) {
                lru.put(to.0, page, page.list, z);
            }
        }
        Ok(())
    }

    /// The owner splits its record; the LRU entry becomes one per base page, on the same
    /// list (`lru_add_split_folio`). A page under writeback, or one only the swap cache
    /// holds, stays whole.
    fn split(&self, from: Pfn, order: u32) -> bool {
        let Some(mover) = &self.mover else { return false };
        let page = self.reclaim.as_ref().and_then(|r| r.lru.borrow().get(from.0));
        if page.is_some_and(|p| p.writeback || p.swapcache) || !mover.split(from, order) {
            return false;
        }
        if let (Some(r), Some(page)) = (&self.reclaim, page) {
            let mut lru = r.lru.borrow_mut();
            lru.del(from.0);
            for pfn in from.0..from.0 + (1 << order) {
                lru.put(pfn, crate::vmscan::lru::LruPage { order: 0, ..page }, page.list, page.zone as usize);
            }
        }
        true
    }

    fn folio_state(&self, pfn: Pfn, order: u32) -> FolioState {
        self.mover.as_ref().map_or_else(FolioState::default, |m| m.folio_state(pfn, order))
    }

    fn moves_handles_only(&self) -> bool {
        self.mover.as_ref().is_some_and(|m| m.moves_handles_only())
    }
}
