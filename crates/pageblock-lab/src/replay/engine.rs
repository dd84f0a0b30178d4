//! The replay loop: the trace's requests, in order, against one policy.
//!
//! * `mm_page_alloc` is a request (order, gfp, CPU, time). A success is remembered
//!   ([`PfnMap`]); a request the kernel failed is made too, and if the simulation serves it,
//!   the block is given back at once (nobody in the trace holds it).
//! * `mm_page_free` frees what the traced block became: the whole block, or a piece of it
//!   (split first), or — for a page allocated before the trace began — the page itself,
//!   which the starting state left allocated (several of its pages are first gathered into
//!   the freed block). `mm_page_free_batched` follows an `mm_page_free` of the same page and
//!   is not a second free.
//! * Everything else (refills, drains, fallbacks, compaction, lost events) is the kernel's
//!   own doing: counted on the trace's side, and made anew by the simulation.
//!
//! In closed loop ([`Loop::Closed`], see [`super::closed_loop`]) the frees the kernel decided
//! (kswapd's, direct reclaim's, migration sources') are not replayed: the simulation keeps those pages, and its
//! own reclaim and compaction act on the pages the trace's allocations made (on the LRU lists
//! by their user, movable by its compaction).
//!
//! Time is the trace's: the clock advances with each record's timestamp, so the vmstat worker
//! decays per-CPU caches every traced second. A gap of more than [`MAX_GAP_US`] between two
//! records counts as that much (the decay is long over by then, and a damaged or hostile
//! timestamp must not make the simulation live through years, one vmstat round per second);
//! a timestamp earlier than the latest so far counts as no time (the clock never goes back).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use pageblock_core::trace::{TraceContext, TraceEvent, TraceSink};
use pageblock_core::unstable::ZoneInternals;
use pageblock_core::vmscan::LruKind;
use pageblock_core::{DaemonCpus, Gfp, Node, NodeLocks, Pfn, VmEvent, ZoneType};
use serde::Serialize;

use super::closed_loop::{ClosedLoopCounts, Compacted, MemoryUser, Owner};
use super::fallback::{Caller, Fallbacks, FaultAttempt, ThpFallbacks, ThpFaults};
use super::load::{request_name, LoadedTrace};
use super::pfnmap::{Mapped, PfnMap};
use super::reclaim_looks::ReclaimLooks;
use super::series::Series;
use super::start_pages::StartPages;
use super::thp_settings::{Attempt, ThpWhatIf, ThpWhatIfCounts};
use super::zone_samples::SimSamples;
use crate::thp::run_events::EventSnapshot;
use pageblock_trace::{RecordKind, Task};

/// Whether the trace's frees are all replayed, or only the workload's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loop {
    /// Every free when the trace says (the kernel's reclaim and migration included).
    #[default]
    Open,
    /// Only the workload's frees; the simulation's reclaim and compaction decide the rest.
    Closed,
}

/// What the simulation did differently from the trace (in JSON without `failed_requests`,
/// which the policy's result reports itself).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// Requests replayed (`mm_page_alloc` events).
    pub requests: u64,
    /// Requests the kernel served and the simulation failed, its caller's fallback included.
    #[serde(skip)]
    pub failed_requests: u64,
    /// Huge page requests.
    pub huge: HugeRequests,
    /// Requests the kernel served that the simulation refused and their callers made up
    /// otherwise (a huge page fault's retry, base pages).
    pub fallbacks: Fallbacks,
    /// Requests the kernel failed and the simulation served.
    pub served_failed_requests: u64,
    /// Frees of pages that were neither allocated in the trace nor allocated at its start
    /// (a lost event, or a starting state that had to put a free block there).
    pub unmatched_frees: u64,
    /// Frees of a bigger block than the one the trace allocated at that pfn.
    pub order_mismatches: u64,
    /// Blocks the trace allocated twice without a free in between (a lost free).
    pub lost_frees: u64,
    /// Pages of offline memory the trace freed: memory onlined during the trace.
    pub pages_onlined: u64,
    /// Requests that reached the OOM killer in the simulation (`pgalloc_oom`): from the
    /// first on, the simulation has left the kernel's path (the kernel would have killed a
    /// task), and the requests the kernel served are not made up any more.
    pub oom_requests: u64,
    /// Huge page faults that fell back, by kind, in the simulation and the traced kernel.
    pub thp_fallbacks: ThpFallbacks,
    /// What `--thp-enabled`/`--thp-defrag` changed (absent without them).
    #[serde(skip_serializing_if = "ThpWhatIfCounts::is_none")]
    pub thp_what_if: ThpWhatIfCounts,
}

/// The trace's huge page requests (pageblock-order allocations for anonymous memory, a THP
/// fault's attempts): how many the kernel served and how many the simulation did at the
/// traced mask (the faults' outcome, retry and fallback included, is `thp_fault_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HugeRequests {
    /// Requests (`mm_page_alloc` events, failed ones included).
    pub requests: u64,
    /// Served by the traced kernel.
    pub served_by_kernel: u64,
    /// Served by the simulation.
    pub served: u64,
}

/// The simulated kernel's own events, counted as the trace counts the real one's.
#[derive(Debug, Default)]
pub struct EventCounts {
    /// `mm_page_alloc` (failed ones included).
    pub page_alloc: u64,
    /// `mm_page_free`.
    pub page_free: u64,
    /// `mm_page_alloc_zone_locked`.
    pub zone_locked: u64,
    /// ... of which `percpu_refill=1`.
    pub zone_locked_refill: u64,
    /// `mm_page_pcpu_drain`.
    pub pcpu_drain: u64,
    /// `mm_page_alloc_extfrag`.
    pub extfrag: u64,
    /// ... with `fragmenting=1`.
    pub extfrag_fragmenting: u64,
    /// ... with `change_ownership=1`.
    pub extfrag_change_ownership: u64,
    /// ... by kind ([`fallback_kind`]).
    pub extfrag_kinds: BTreeMap<String, u64>,
    pageblock_order: u32,
}

/// A fallback's kind as the report names it: `Unmovable from Movable, claimed` (the
/// pageblock changed owner) or `..., stolen` (pages taken, the block kept its type).
pub fn fallback_kind(alloc: &str, fallback: &str, change_ownership: bool) -> String {
    format!("{alloc} from {fallback}, {}", if change_ownership { "claimed" } else { "stolen" })
}

impl TraceSink for EventCounts {
    fn emit(&mut self, _: TraceContext, ev: &TraceEvent) {
        match *ev {
            TraceEvent::PageAlloc { .. } => self.page_alloc += 1,
            TraceEvent::PageFree { .. } => self.page_free += 1,
            TraceEvent::PageAllocZoneLocked { percpu_refill, .. } => {
                self.zone_locked += 1;
                self.zone_locked_refill += u64::from(percpu_refill);
            }
            TraceEvent::PagePcpuDrain { .. } => self.pcpu_drain += 1,
            TraceEvent::PageAllocExtfrag {
                fallback_order,
                change_ownership,
                alloc_migratetype,
                fallback_migratetype,
                ..
            } => {
                let kind =
                    fallback_kind(alloc_migratetype.name(), fallback_migratetype.name(), change_ownership);
                *self.extfrag_kinds.entry(kind).or_default() += 1;
                self.extfrag += 1;
                self.extfrag_fragmenting += u64::from(fallback_order < self.pageblock_order);
                self.extfrag_change_ownership += u64::from(change_ownership);
            }
        }
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// The outcome of one replay.
pub struct Replayed {
    /// The machine at the end.
    pub node: Node,
    /// Differences from the trace.
    pub divergence: Divergence,
    /// The simulation's own events.
    pub events: EventCounts,
    /// Huge-page availability over time.
    pub series: Series,
    /// Direct compaction attempts asked for during the replay ([`VmEvent::CompactAttempt`]).
    pub compact_attempts: u64,
    /// Reclaim's looks at the inactive lists during the replay.
    pub reclaim_looks: ReclaimLooks,
    /// Pages allocated during the replay (`pgalloc_*`).
    pub pgalloc_pages: u64,
    /// Pages freed during the replay (`pgfree`).
    pub pgfree_pages: u64,
    /// What closed loop did (`None` in open loop).
    pub closed_loop: Option<ClosedLoopCounts>,
    /// The requests the kernel served that failed here without a fallback (no caller of
    /// theirs has one: kernel memory, slab, atomic requests), by order and mask.
    pub failed_without_fallback: BTreeMap<String, u64>,
    /// Base pages the balloon took before the replay.
    pub balloon_pages: u64,
    /// The simulation's direct reclaim runs (`allocstall`) by the request that stalled
    /// (`order N MASK`).
    pub direct_reclaims: BTreeMap<String, u64>,
    /// The simulation's direct compaction attempts by the request that asked.
    pub direct_compactions: BTreeMap<String, u64>,
    /// Of those, the zone compactions that passed the suitability checks and scanned
    /// ([`VmEvent::CompactDirectBegin`]), by request.
    pub direct_compaction_runs: BTreeMap<String, u64>,
    /// Seconds the loop took.
    pub seconds: f64,
    /// The simulation's zones at the times `lab real` sampled the kernel's.
    pub zone_samples: SimSamples,
}

/// Samples taken over a replay.
const SAMPLES: usize = 2000;

/// The most simulated time one record moves the clock on: a minute.
pub const MAX_GAP_US: u64 = 60_000_000;

/// The replay's clock: the trace's time, with gaps of more than [`MAX_GAP_US`] shortened
/// and steps back ignored, so that it advances by at most that much per record.
#[derive(Debug, Default)]
struct Clock {
    /// The latest timestamp so far.
    latest_us: Option<u64>,
    /// Simulated time since the first record.
    now_us: u64,
}

impl Clock {
    /// The simulated time of a record stamped `time_us`.
    fn at(&mut self, time_us: u64) -> u64 {
        let latest = self.latest_us.get_or_insert(time_us);
        let step = time_us.saturating_sub(*latest).min(MAX_GAP_US);
        *latest = time_us.max(*latest);
        self.now_us += step;
        self.now_us
    }
}

/// How one replay runs, beyond the trace and the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Open or closed loop.
    pub mode: Loop,
    /// Base pages a balloon takes first ([`super::balloon`]).
    pub balloon: u64,
    /// The huge page faults under other THP settings ([`super::thp_settings`]).
    pub thp: Option<ThpWhatIf>,
    /// The machine can swap ([`super::swap_space`]); without, the simulation's reclaim
    /// leaves anonymous memory alone.
    pub swap: bool,
}

/// Closed loop's owner of `node`'s memory: told of what its reclaim takes and its
/// compaction moves; without `swap`, reclaim leaves anonymous memory alone.
fn own(node: &mut Node, start: &Rc<RefCell<StartPages>>, swap: bool) -> Owner {
    let owner = Owner::new(Rc::clone(start));
    node.set_unmap(Box::new(owner.clone()));
    node.set_mover(Box::new(owner.clone()));
    if !swap {
        node.set_swap_device(pageblock_core::vmscan::SwapDevice::none());
    }
    owner
}

/// Replay `t` on `node` (booted in the trace's starting state) as `setup` says, calling
/// `progress(records)` now and then.
pub fn replay(t: &LoadedTrace, mut node: Node, setup: Setup, progress: &mut dyn FnMut(u64)) -> Replayed {
    let Setup { mode, balloon, thp: thp_what_if, swap } = setup;
    let started = std::time::Instant::now();
    let start = Rc::new(RefCell::new(StartPages::of(&node)));
    let owner = (mode == Loop::Closed).then(|| own(&mut node, &start, swap));
    let shared = std::sync::Arc::clone(node.shared());
    let pbo = shared.pageblock_order();
    // After the starting state is read (a traced free never reaches a balloon page), before
    // anything is counted.
    let balloon_pages = super::balloon::inflate(&node, balloon);
    shared.trace().set_sink(Some(Box::new(EventCounts { pageblock_order: pbo, ..EventCounts::default() })));
    let events0 = EventSnapshot::of(&shared);
    let nr_cpus = shared.nr_cpus();
    let mut r = Run {
        map: PfnMap::new(shared.max_order()),
        node,
        start,
        div: Divergence::default(),
        owner,
        thp: ThpFaults::new(nr_cpus),
        thp_what_if,
        pbo,
        oom_before: shared.event(VmEvent::PgAllocOom),
        failed_without_fallback: BTreeMap::new(),
        direct_reclaims: BTreeMap::new(),
        direct_compactions: BTreeMap::new(),
        direct_compaction_runs: BTreeMap::new(),
    };
    // A balloon that could not take what was asked ends the replay before it starts: the
    // caller reports it.
    let records = if balloon_pages < balloon { &t.records[..0] } else { &t.records[..] };
    let every = (records.len() / SAMPLES).max(1);
    let mut series = Series::default();
    let mut clock = Clock::default();
    let snaps = &t.snapshots;
    let mut zone_samples =
        SimSamples::new(snaps.buddyinfo_samples.as_ref(), snaps.pagetypeinfo_samples.as_ref());
    for (i, rec) in records.iter().enumerate() {
        let now_us = clock.at(rec.time_us);
        r.node.advance_to(now_us);
        // The zones as the kernel's were sampled: at the trace's own times.
        zone_samples.catch_up(rec.time_us, &shared);
        // What the daemons (just now) and the last allocation's reclaim and compaction did,
        // before this record reads the map.
        r.sync_owner();
        // The simulated CPU the traced one replays on (`--cpus` may fold them).
        let cpu = usize::from(rec.cpu) % nr_cpus;
        // The kernel's daemons run where the scheduler put them; the simulated ones follow
        // the CPU of their last traced event (their reclaim frees to that CPU's lists).
        match rec.task {
            Task::Kswapd => r.node.set_daemon_cpus(DaemonCpus { kswapd: cpu, ..r.node.daemon_cpus() }),
            Task::Kcompactd => r.node.set_daemon_cpus(DaemonCpus { kcompactd: cpu, ..r.node.daemon_cpus() }),
            _ => {}
        }
        match rec.kind {
            RecordKind::Alloc { order, gfp, failed, .. } => {
                let gfp = t.gfps.get(gfp).unwrap_or_default();
                r.alloc(cpu, rec.pfn, u32::from(order), gfp, failed);
            }
            RecordKind::Free { order } => match r.kernels_free(rec.task) {
                Some(migrated) => r.kernel_free(cpu, rec.pfn, u32::from(order), migrated),
                None => r.free(cpu, rec.pfn, u32::from(order)),
            },
            _ => {}
        }
        if i % every == 0 {
            series.sample(&shared, i as u64, now_us);
            progress(i as u64);
        }
    }
    r.thp.finish(&r.node);
    r.div.thp_fallbacks = r.thp.fallbacks;
    r.div.oom_requests = shared.event(VmEvent::PgAllocOom) - r.oom_before;
    series.sample(&shared, records.len() as u64, clock.now_us);
    progress(records.len() as u64);
    let ran = EventSnapshot::of(&shared).since(&events0);
    let mut sink = shared.trace().take_sink();
    let events = sink
        .as_mut()
        .and_then(|s| s.as_any().downcast_mut::<EventCounts>())
        .map(std::mem::take)
        .unwrap_or_default();
    Replayed {
        closed_loop: r.owner.as_ref().map(Owner::counts),
        divergence: r.div,
        failed_without_fallback: r.failed_without_fallback,
        direct_reclaims: r.direct_reclaims,
        direct_compactions: r.direct_compactions,
        direct_compaction_runs: r.direct_compaction_runs,
        events,
        series,
        zone_samples,
        compact_attempts: ran.get(VmEvent::CompactAttempt),
        reclaim_looks: ReclaimLooks::simulated(&ran),
        pgalloc_pages: ran.get(VmEvent::PgAlloc),
        pgfree_pages: ran.get(VmEvent::PgFree),
        node: r.node,
        balloon_pages,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// What a caller's fallback made of a request the simulation refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MadeUp {
    /// A block of the request's order (a huge page fault's retry).
    Whole,
    /// Base pages instead.
    BasePages,
    /// Nothing: the request failed.
    No,
}

/// The state of a replay in progress.
struct Run {
    node: Node,
    map: PfnMap,
    /// The pages allocated before the trace began and not yet freed by it.
    start: Rc<RefCell<StartPages>>,
    div: Divergence,
    /// Closed loop's owner of the replayed pages (`None`: open loop).
    owner: Option<Owner>,
    /// Huge page faults in progress.
    thp: ThpFaults,
    /// The faults under other THP settings (`None`: as traced).
    thp_what_if: Option<ThpWhatIf>,
    /// The pageblock order (a huge page's).
    pbo: u32,
    /// Requests that had reached the OOM killer before the replay (`pgalloc_oom`).
    oom_before: u64,
    /// See [`Replayed::failed_without_fallback`].
    failed_without_fallback: BTreeMap<String, u64>,
    /// See [`Replayed::direct_reclaims`].
    direct_reclaims: BTreeMap<String, u64>,
    /// See [`Replayed::direct_compactions`].
    direct_compactions: BTreeMap<String, u64>,
    /// See [`Replayed::direct_compaction_runs`].
    direct_compaction_runs: BTreeMap<String, u64>,
}

impl Run {
    fn alloc(&mut self, cpu: usize, traced: u64, order: u32, gfp: Gfp, failed: bool) {
        self.div.requests += 1;
        let caller = Caller::of(order, gfp, self.pbo);
        let Some(what_if) =
            self.thp_what_if.filter(|_| matches!(caller, Caller::ThpFirst | Caller::ThpRetry))
        else {
            return self.request(cpu, traced, (order, gfp), (gfp, failed), caller);
        };
        let first_served = self.thp.served_so_far(cpu);
        match what_if.attempt(caller, gfp, !failed, first_served, &mut self.div.thp_what_if) {
            Attempt::Ask(caller, asked) => self.request(cpu, traced, (order, asked), (gfp, failed), caller),
            Attempt::BasePages { fault } => {
                let base = Caller::ThpFirst.base_pages(gfp).unwrap_or_default();
                let made = self.base_pages(cpu, traced, order, base);
                self.div.failed_requests += u64::from(made == MadeUp::No);
                self.end_attempt(cpu, fault, gfp, !failed);
            }
            Attempt::Nothing { fault } => self.end_attempt(cpu, fault, gfp, !failed),
        }
    }

    /// The simulation's `alloc_pages`, counting the direct reclaim runs (one `allocstall`
    /// each), the direct compaction attempts and the zone compactions that ran, against the
    /// request.
    fn alloc_pages(&mut self, cpu: usize, order: u32, gfp: Gfp) -> Option<Pfn> {
        // (`allocstall` over every zone, direct compaction attempts, zone compactions run.)
        let counted = |node: &Node| {
            let shared = node.shared();
            let stalls = ZoneType::ALL.iter().map(|&t| shared.counters().allocstall(t)).sum::<u64>();
            (stalls, shared.event(VmEvent::CompactAttempt), shared.event(VmEvent::CompactDirectBegin))
        };
        let before = counted(&self.node);
        let got = self.node.alloc_pages(cpu, order, gfp).ok();
        let after = counted(&self.node);
        for (by, made) in [
            (&mut self.direct_reclaims, after.0 - before.0),
            (&mut self.direct_compactions, after.1 - before.1),
            (&mut self.direct_compaction_runs, after.2 - before.2),
        ] {
            if made > 0 {
                *by.entry(request_name(order, gfp)).or_default() += made;
            }
        }
        got
    }

    /// A huge page fault attempt the what-if did not make: a fault's retry ends it (a
    /// fallback unless its first attempt was served); an attempt that is no fault any more
    /// ends the fault in progress on `cpu`.
    fn end_attempt(&mut self, cpu: usize, fault: bool, gfp: Gfp, kernel_served: bool) {
        let caller = if fault { Caller::ThpRetry } else { Caller::Other };
        let attempt = FaultAttempt { caller, gfp, traced_gfp: gfp, served: false, kernel_served };
        self.thp.request(&self.node, cpu, attempt);
    }

    /// The request of a traced block `traced` of `order` with `gfp` by `caller`; the traced
    /// request had mask `traced_gfp` (another under a THP what-if) and the kernel `failed` or
    /// served it.
    fn request(
        &mut self,
        cpu: usize,
        traced: u64,
        (order, gfp): (u32, Gfp),
        (traced_gfp, failed): (Gfp, bool),
        caller: Caller,
    ) {
        let got = self.alloc_pages(cpu, order, gfp);
        if matches!(caller, Caller::ThpFirst | Caller::ThpRetry) {
            let h = &mut self.div.huge;
            h.requests += 1;
            h.served_by_kernel += u64::from(!failed);
            h.served += u64::from(got.is_some());
        }
        let served = match (got, failed) {
            (Some(p), true) => {
                self.div.served_failed_requests += 1;
                let _ = self.node.free_pages(cpu, p, order);
                true
            }
            (Some(p), false) => {
                self.hold(cpu, traced, p, order, gfp);
                true
            }
            (None, true) => false,
            (None, false) => self.fall_back(cpu, traced, order, gfp, caller),
        };
        self.thp.request(
            &self.node,
            cpu,
            FaultAttempt { caller, gfp, traced_gfp, served, kernel_served: !failed },
        );
    }

    /// The kernel served this request and the simulation did not: its caller's fallback
    /// ([`super::fallback`]). Returns whether the request got a block of its order.
    fn fall_back(&mut self, cpu: usize, traced: u64, order: u32, gfp: Gfp, caller: Caller) -> bool {
        let made = self.make_up(cpu, traced, order, gfp, caller);
        self.div.failed_requests += u64::from(made == MadeUp::No);
        if caller == Caller::Other {
            *self.failed_without_fallback.entry(request_name(order, gfp)).or_default() += 1;
        }
        made == MadeUp::Whole
    }

    fn make_up(&mut self, cpu: usize, traced: u64, order: u32, gfp: Gfp, caller: Caller) -> MadeUp {
        let Some(base) = caller.base_pages(gfp) else { return MadeUp::No };
        // Past the OOM killer the simulation has left the kernel's path (the kernel would
        // have killed a task and got its memory back); every fallback would fail the same
        // way, each after a full round of reclaim.
        if self.node.shared().event(VmEvent::PgAllocOom) > self.oom_before {
            self.div.fallbacks.after_oom += 1;
            return MadeUp::No;
        }
        if let Some(retry) = Caller::thp_retry(gfp).filter(|_| caller == Caller::ThpFirst) {
            if let Some(p) = self.alloc_pages(cpu, order, retry) {
                self.div.fallbacks.thp_retries_served += 1;
                self.hold(cpu, traced, p, order, retry);
                return MadeUp::Whole;
            }
        }
        self.base_pages(cpu, traced, order, base)
    }

    /// The base pages of traced block `traced` of `order`, with `base`; the caller stops at
    /// the first refusal (readahead stops; a fault fails).
    fn base_pages(&mut self, cpu: usize, traced: u64, order: u32, base: Gfp) -> MadeUp {
        let mut got = 0;
        for at in (0..1u64 << order).map_while(|k| traced.checked_add(k)) {
            let Some(p) = self.alloc_pages(cpu, 0, base) else { break };
            self.hold(cpu, at, p, 0, base);
            got += 1;
        }
        let f = &mut self.div.fallbacks;
        f.base_page_requests += 1;
        f.base_pages += got;
        if got < 1u64 << order {
            f.base_pages_refused += 1;
            return MadeUp::No;
        }
        MadeUp::BasePages
    }

    /// The simulation's block `p` of `order` stands for traced block `traced` from now on
    /// (on the LRU lists of its user, in closed loop).
    fn hold(&mut self, cpu: usize, traced: u64, p: Pfn, order: u32, gfp: Gfp) {
        // What the allocation's own reclaim and compaction did, before the map is read.
        self.sync_owner();
        if let Some((sim, o)) = self.map.insert(traced, p.0, order) {
            // The trace never freed the block that was here: free it for the trace.
            self.div.lost_frees += 1;
            self.release(cpu, sim, u32::from(o));
        }
        if let Some(owner) = &self.owner {
            let user = MemoryUser::of(gfp);
            if let Some(kind) = user.lru() {
                // An anonymous page is mapped by the fault that made it; page cache the trace
                // cannot tell mapped from read, and takes for read.
                let added = if user == MemoryUser::Anon {
                    self.node.lru_add_mapped(p, order, kind)
                } else {
                    self.node.lru_add(p, order, kind)
                };
                if added {
                    owner.track(p.0, traced, kind == LruKind::File);
                }
            }
        }
    }

    /// Frees simulated block `sim` the trace held, telling closed loop's owner.
    fn release(&mut self, cpu: usize, sim: u64, order: u32) {
        if let Some(owner) = &self.owner {
            owner.untrack(sim);
        }
        let _ = self.node.free_pages(cpu, Pfn(sim), order);
    }

    /// In closed loop, whether a free by `task` is the kernel's own: `Some(true)` for a
    /// migration source, `Some(false)` for reclaim; `None`: the workload's (replayed). The
    /// reader told direct reclaim and compaction by the freeing task's own window.
    fn kernels_free(&self, task: Task) -> Option<bool> {
        self.owner.as_ref()?;
        match task {
            Task::Kswapd | Task::DirectReclaim => Some(false),
            Task::Kcompactd | Task::DirectCompaction => Some(true),
            Task::Other => None,
        }
    }

    /// The kernel freed traced page `traced` itself: the simulation keeps its copy (on its
    /// lists; a migrated one in the pool for the workload's free of the target). A page
    /// from before the trace is freed as the kernel freed it (the simulation cannot reclaim
    /// or move it itself).
    fn kernel_free(&mut self, cpu: usize, traced: u64, order: u32, migrated: bool) {
        let Some(owner) = self.owner.clone() else { return };
        match self.map.take_containing(traced) {
            Some(m) => owner.kernel_freed(Some((m.sim, m.order)), migrated),
            None if self.free_from_start(cpu, traced, order) => owner.kernel_freed_from_start(),
            None => owner.kernel_freed(None, migrated),
        }
    }

    /// Applies what the simulation's reclaim and compaction did to the replayed pages (each
    /// report only if the traced block is still the simulated block it names).
    fn sync_owner(&mut self) {
        let Some(owner) = self.owner.as_ref().filter(|o| o.has_news()) else { return };
        for c in owner.take_compacted() {
            match c {
                Compacted::Moved(m) => self.map.moved(m.traced, m.from, m.to),
                Compacted::Split { traced, sim, order } => self.map.split(traced, sim, order),
            };
        }
        for (traced, sim) in owner.take_reclaimed() {
            self.map.reclaimed_at(traced, sim);
        }
    }

    fn free(&mut self, cpu: usize, traced: u64, order: u32) {
        let Some(m) = self.map.take_containing(traced) else {
            if let Some(owner) = self.owner.as_ref().filter(|_| self.map.take_reclaimed(traced)) {
                owner.freed_after_reclaim();
                return;
            }
            self.free_preexisting(cpu, traced, order);
            return;
        };
        if let Some(owner) = &self.owner {
            owner.untrack(m.sim);
        }
        if order > m.order && traced == m.traced && self.join(cpu, m, order) {
            return;
        }
        let misfit =
            order > m.order || (order == m.order && traced != m.traced) || !Pfn(traced).is_aligned(order);
        if misfit {
            self.div.order_mismatches += 1;
            let _ = self.node.free_pages(cpu, Pfn(m.sim), m.order);
            return;
        }
        let sim = if order < m.order {
            // The allocation was split (split_page, a folio split): free one piece.
            self.split(m, order);
            self.map.take_containing(traced).map_or(m.sim + (traced - m.traced), |piece| piece.sim)
        } else {
            m.sim
        };
        let _ = self.node.free_pages(cpu, Pfn(sim), order);
    }

    /// Put back every piece but the first (the caller still holds it).
    fn remember_all_but_first(&mut self, pieces: &[Mapped]) {
        for p in &pieces[1..] {
            self.map.insert(p.traced, p.sim, p.order);
        }
    }

    /// A free of `order` at the head of remembered piece `m` of a smaller order: the pieces
    /// of a split the kernel frees as one block again, or base pages the simulation gave a
    /// caller for a block it refused ([`super::fallback`]). If every piece of the block is
    /// remembered, frees them: joined if they are contiguous in the simulation, else one by
    /// one. Otherwise leaves the other pieces remembered and returns false (the caller still
    /// holds `m`).
    fn join(&mut self, cpu: usize, m: Mapped, order: u32) -> bool {
        let step = 1u64 << m.order;
        let mut pieces = vec![m];
        let mut contiguous = true;
        for off in (step..1u64 << order).step_by(step as usize) {
            // A traced block cannot reach past the last pfn: no piece is there.
            let at = m.traced.checked_add(off);
            match at.and_then(|at| self.map.take_containing(at)) {
                Some(p) if Some(p.traced) == at && p.order == m.order => {
                    contiguous &= p.sim == m.sim + off;
                    pieces.push(p);
                }
                other => {
                    pieces.extend(other);
                    self.remember_all_but_first(&pieces);
                    return false;
                }
            }
        }
        if !contiguous {
            for p in pieces {
                self.release(cpu, p.sim, p.order);
            }
            return true;
        }
        let Some(z) = self.node.shared().zone_of(m.sim) else { return false };
        if !self.node.lock_zone(z).adopt_allocated(m.sim, order) {
            self.remember_all_but_first(&pieces);
            return false;
        }
        let _ = self.node.free_pages(cpu, Pfn(m.sim), order);
        true
    }

    /// Split a remembered block into pieces of `order`, remembering every piece (that a
    /// traced pfn can name: a block placed at the very top of the pfn space has none past it).
    fn split(&mut self, m: Mapped, order: u32) {
        let Some(z) = self.node.shared().zone_of(m.sim) else { return };
        // The pieces leave the LRU lists: reclaim must not take the block whole any more.
        self.node.lru_del(Pfn(m.sim));
        if !self.node.lock_zone(z).split_page(m.sim, m.order, order) {
            return;
        }
        for k in 0..1u64 << (m.order - order) {
            let off = k << order;
            if let Some(at) = m.traced.checked_add(off) {
                self.map.insert(at, m.sim + off, order);
            }
        }
    }

    /// A page the trace did not allocate: it was allocated when the trace began, and the
    /// starting state left it allocated at the same pfn (several such pages are gathered
    /// into the block the trace frees); in closed loop, failing that, a page the kernel
    /// migrated.
    fn free_preexisting(&mut self, cpu: usize, pfn: u64, order: u32) {
        let size = 1u64 << order.min(63);
        // Memory being onlined: the kernel frees it into the buddy lists page block by block.
        if self.node.shared().zone_of(pfn).is_some_and(|z| self.node.zone(z).is_offline(pfn, size))
            && pageblock_core::memory_hotplug::online_pages(&self.node, cpu, pfn, size).is_ok()
        {
            self.div.pages_onlined += size;
            return;
        }
        if self.free_from_start(cpu, pfn, order) {
            return;
        }
        // Closed loop: the target of a page the kernel migrated (allocated without an event)
        // is the simulation's copy of that page.
        match self.owner.as_ref().and_then(|o| o.take_migrated(order)) {
            Some(sim) => {
                let _ = self.node.free_pages(cpu, Pfn(sim), order);
            }
            None => self.div.unmatched_frees += 1,
        }
    }

    /// Frees block `pfn` of `order` if every page of it is a page allocated before the trace
    /// and not freed since: in one piece where it was, else page by page where the
    /// simulation's compaction put each. Returns whether it did.
    fn free_from_start(&mut self, cpu: usize, pfn: u64, order: u32) -> bool {
        let size = 1u64 << order.min(63);
        let Some(places) = self.start.borrow().places(pfn, size) else { return false };
        let in_place = places.iter().zip(pfn..).all(|(&q, p)| q == p);
        if in_place {
            let Some(z) = self.node.shared().zone_of(pfn) else { return false };
            if !(self.node.lock_zone(z).adopt_allocated(pfn, order)
                && self.node.free_pages(cpu, Pfn(pfn), order).is_ok())
            {
                return false;
            }
            let mut start = self.start.borrow_mut();
            for p in pfn..pfn + size {
                start.freed(p, p);
            }
            return true;
        }
        let mut all = true;
        for (&q, p) in places.iter().zip(pfn..) {
            // Each page from before the trace is an order-0 block.
            let freed = self.node.free_pages(cpu, Pfn(q), 0).is_ok();
            if freed {
                self.start.borrow_mut().freed(p, q);
            }
            all &= freed;
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the clock jumped to each timestamp, and a trace whose second record was
    /// stamped years after its first ran one vmstat round per simulated second.
    #[test]
    fn the_clock_follows_the_trace_but_never_jumps_more_than_a_minute() {
        let mut c = Clock::default();
        let times = [5_000_000, 5_500_000, 5_200_000, 7_000_000, u64::MAX, 1, u64::MAX];
        let got: Vec<u64> = times.iter().map(|&t| c.at(t)).collect();
        let jumped = 2_000_000 + MAX_GAP_US;
        assert_eq!(got, [0, 500_000, 500_000, 2_000_000, jumped, jumped, jumped]);
    }
}
