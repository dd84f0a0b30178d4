//! `pageblock lab thp`: seed 004's experiment — huge page success and its costs under every
//! named policy (`vanilla`, `defrag_mode` as merged, `defrag_mode_2026`, `pageblock` and its
//! variants) or the ones `--policy` names, run after run on the same node.
//!
//! Each policy boots its own node (the same machine), attaches the memory's users ([`mm`]),
//! and runs the workload `runs` times in a row without rebooting, so fragmentation builds up
//! as it did over the seed's 15 consecutive kernel builds. Every figure is deterministic:
//! counts of the simulator's vm events per run, and "time" in work units (pages scanned and
//! moved, list probes and merges; see [`work_units`]). Each operation moves the simulated
//! clock by the workload's [`ThpWorkload::op_interval_ns`], so the daemons (kswapd,
//! kcompactd's 500 ms timeout) see the run last as long as the real one.

pub mod kbuild;
pub mod mm;
pub mod page_states;
pub mod run_events;
pub mod table;
pub mod thpscale;

use pageblock_core::named_policy::NamedPolicy;
use pageblock_core::thp::{ThpDefrag, ThpEnabled};
use pageblock_core::{ConfigError, KernelPeriod, Node, NodeConfig, Policy, VmEvent, ZoneType};
use serde::Serialize;

use mm::Mm;
use run_events::EventSnapshot;
pub use run_events::{RunEvents, RUN_EVENTS};

/// A workload of the THP lab.
pub trait ThpWorkload {
    /// A run begins.
    fn start_run(&mut self);
    /// One operation; false once the run is over.
    fn step(&mut self, mm: &Mm, node: &Node, stats: &mut RunStats) -> bool;
    /// Simulated time one operation of the current run takes, in nanoseconds (the clock
    /// is in microseconds; the fraction accumulates).
    fn op_interval_ns(&self) -> u64 {
        crate::sim::OP_INTERVAL_US * 1000
    }
}

/// What a workload measures itself during a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Work units of each huge page fault.
    pub hugealloc_work: Vec<u64>,
    /// Atomic (non-reclaiming) requests made.
    pub atomic_requests: u64,
    /// Atomic requests that failed.
    pub atomic_failures: u64,
    /// Swap-ins that could not be served.
    pub swapin_failures: u64,
}

/// The THP lab's workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpWorkloadKind {
    /// [`kbuild::KbuildThp`].
    KbuildThp,
    /// [`thpscale::Thpscale`].
    Thpscale,
}

impl ThpWorkloadKind {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ThpWorkloadKind::KbuildThp => "kbuild-thp",
            ThpWorkloadKind::Thpscale => "thpscale",
        }
    }

    /// Parse a command-line name.
    pub fn from_name(s: &str) -> Option<ThpWorkloadKind> {
        [ThpWorkloadKind::KbuildThp, ThpWorkloadKind::Thpscale].into_iter().find(|k| k.name() == s)
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ThpLabConfig {
    /// The workload.
    pub workload: ThpWorkloadKind,
    /// The policies, one column each; the first is the baseline.
    pub policies: Vec<NamedPolicy>,
    /// Consecutive runs on each node.
    pub runs: usize,
    /// Small node (CI).
    pub quick: bool,
    /// Seed of the workload.
    pub seed: u64,
    /// `transparent_hugepage/enabled` (kbuild-thp's build; bursts and thpscale madvise).
    pub thp: ThpEnabled,
    /// `transparent_hugepage/defrag`.
    pub defrag: ThpDefrag,
    /// Whose reclaim rules every policy runs under.
    pub kernel: KernelPeriod,
    /// kbuild-thp's compile jobs per build; `None`: [`kbuild::default_jobs`].
    pub jobs: Option<usize>,
}

impl ThpLabConfig {
    /// The machine: 2 GiB (512 MiB with `quick`), 4 CPUs, a PC's zones.
    pub fn node(&self) -> NodeConfig {
        let bytes = if self.quick { 512 << 20 } else { 2 << 30 };
        NodeConfig::x86_64(bytes, 4)
    }

    /// The bound on one run's operations: [`MAX_OPS_PER_PAGE`] per managed page, times the
    /// build's size over the default's.
    fn max_ops(&self, managed: u64) -> u64 {
        let default = kbuild::default_jobs(self.quick);
        let scale = self.jobs.map_or(1, |j| j.div_ceil(default).max(1)) as u64;
        MAX_OPS_PER_PAGE * managed * scale
    }
}

/// One run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunResult {
    /// Operations the run took.
    pub ops: u64,
    /// Simulated time the run took, in seconds.
    pub sim_seconds: f64,
    /// `allocstall_*` summed over zones.
    pub allocstall: u64,
    /// Each vm event counter's increase over the run (the JSON has the [`RUN_EVENTS`], by
    /// name).
    #[serde(flatten)]
    pub events: RunEvents,
    /// Huge page faults.
    pub hugealloc_faults: u64,
    /// Mean work units per huge page fault.
    pub hugealloc_work_mean: f64,
    /// Their standard deviation.
    pub hugealloc_work_stddev: f64,
    /// Atomic requests made.
    pub atomic_requests: u64,
    /// Atomic requests that failed.
    pub atomic_failures: u64,
    /// Whole free pageblocks at the end of the run (`NR_FREE_PAGES_BLOCKS`, in pageblocks).
    pub free_pageblocks_end: u64,
    /// The node's unusable free index at the pageblock order at the end of the run (0..1).
    pub unusable_index_end_fraction: f64,
    /// The largest zone's pageblock map at the end of the run.
    #[serde(skip)]
    pub map: Vec<pageblock_view::BlockKind>,
}

impl RunResult {
    /// Counter `e`'s increase over the run. A counter is named by its [`VmEvent`], so a
    /// misspelt one does not compile (it used to read as 0):
    ///
    /// ```compile_fail
    /// # fn thp_fault_alloc(r: &pageblock_lab::thp::RunResult) -> u64 {
    /// r.get("thp_fault_alloc")
    /// # }
    /// ```
    pub fn get(&self, e: VmEvent) -> u64 {
        self.events.get(e)
    }

    /// THP success in percent: faults served with a huge page.
    pub fn thp_success(&self) -> f64 {
        let alloc = self.get(VmEvent::ThpFaultAlloc) as f64;
        let total = alloc + self.get(VmEvent::ThpFaultFallback) as f64;
        if total == 0.0 {
            0.0
        } else {
            100.0 * alloc / total
        }
    }
}

/// A policy's runs.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyRuns {
    /// The policy's name.
    pub name: &'static str,
    /// Run after run.
    pub runs: Vec<RunResult>,
    /// Each zone's pageblock map after the last run.
    #[serde(skip)]
    pub final_map: Vec<(String, Vec<pageblock_view::BlockKind>)>,
}

/// The whole experiment.
#[derive(Clone, Debug, Serialize)]
pub struct ThpReport {
    /// The workload's name.
    pub workload: &'static str,
    /// Node memory in MiB.
    pub node_mib: u64,
    /// `transparent_hugepage/enabled`.
    pub thp: &'static str,
    /// `transparent_hugepage/defrag`.
    pub defrag: &'static str,
    /// The kernel period (`6.18`, `seed-004`).
    pub kernel: &'static str,
    /// One entry per policy.
    pub policies: Vec<PolicyRuns>,
}

/// The deterministic "time" of the allocator: every unit of work it counts — free-list
/// probes, merge steps, block moves, pageblock scans, pfns the compaction scanners visited,
/// pages moved, pages direct reclaim scanned.
pub fn work_units(node: &Node) -> u64 {
    let s = node.shared();
    [
        VmEvent::WorkFreelistProbe,
        VmEvent::WorkMergeStep,
        VmEvent::WorkBlockMove,
        VmEvent::WorkPagesScanned,
        VmEvent::CompactMigrateScanned,
        VmEvent::CompactFreeScanned,
        VmEvent::PgMigrateSuccess,
        VmEvent::PgMigrateFail,
        VmEvent::PgscanDirect,
    ]
    .into_iter()
    .map(|e| s.event(e))
    .sum()
}

fn snapshot(node: &Node) -> (EventSnapshot, u64) {
    let s = node.shared();
    let allocstall = ZoneType::ALL.into_iter().map(|t| s.counters().allocstall(t)).sum();
    (EventSnapshot::of(s), allocstall)
}

fn mean_stddev(v: &[u64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<u64>() as f64 / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// A bound on a run's length: no workload needs more operations per managed page.
const MAX_OPS_PER_PAGE: u64 = 64;

/// Run one policy: boot, then `runs` runs in a row. `progress(run)` after each.
pub fn run_policy(
    cfg: &ThpLabConfig,
    policy: &NamedPolicy,
    progress: &mut dyn FnMut(usize),
) -> Result<PolicyRuns, ConfigError> {
    let mut node = Node::new(cfg.node(), Policy { kernel: cfg.kernel, ..policy.policy.clone() })?;
    let mm = Mm::attach(&mut node);
    let managed = node.shared().managed_pages();
    let hpage = node.shared().pageblock_order();
    let mut wl: Box<dyn ThpWorkload> = match cfg.workload {
        ThpWorkloadKind::KbuildThp => {
            let jobs = cfg.jobs.unwrap_or(kbuild::default_jobs(cfg.quick));
            Box::new(kbuild::KbuildThp::new(&mm, managed, hpage, (cfg.thp, cfg.defrag), jobs, cfg.seed))
        }
        ThpWorkloadKind::Thpscale => {
            Box::new(thpscale::Thpscale::new(&mm, managed, hpage, cfg.defrag, cfg.seed))
        }
    };
    let mut now_ns = node.now_us() * 1000;
    let mut runs = Vec::with_capacity(cfg.runs);
    for r in 0..cfg.runs {
        let (before, stall0) = snapshot(&node);
        let mut stats = RunStats::default();
        wl.start_run();
        let mut ops = 0;
        let start_ns = now_ns;
        let op_ns = wl.op_interval_ns();
        while ops < cfg.max_ops(managed) {
            now_ns += op_ns;
            node.advance_to(now_ns / 1000);
            if !wl.step(&mm, &node, &mut stats) {
                break;
            }
            ops += 1;
        }
        let (after, stall1) = snapshot(&node);
        let events = after.since(&before);
        let (mean, stddev) = mean_stddev(&stats.hugealloc_work);
        runs.push(RunResult {
            ops,
            sim_seconds: (now_ns - start_ns) as f64 / 1e9,
            allocstall: stall1 - stall0,
            events,
            hugealloc_faults: stats.hugealloc_work.len() as u64,
            hugealloc_work_mean: mean,
            hugealloc_work_stddev: stddev,
            atomic_requests: stats.atomic_requests,
            atomic_failures: stats.atomic_failures,
            free_pageblocks_end: crate::replay::series::free_pageblocks(node.shared()),
            map: crate::block_map::node_block_kinds(&node)
                .into_iter()
                .map(|(_, k)| k)
                .max_by_key(Vec::len)
                .unwrap_or_default(),
            unusable_index_end_fraction: crate::replay::series::unusable_index(node.shared()),
        });
        progress(r + 1);
    }
    if let Err(e) = node.verify() {
        panic!("policy {} left a broken node after {} runs: {e}", policy.name, cfg.runs);
    }
    Ok(PolicyRuns { name: policy.name, runs, final_map: crate::block_map::node_block_kinds(&node) })
}

/// Run every policy.
pub fn run(cfg: &ThpLabConfig, progress: &mut dyn FnMut(&str, usize)) -> Result<ThpReport, ConfigError> {
    let mut policies = Vec::new();
    for p in &cfg.policies {
        policies.push(run_policy(cfg, p, &mut |r| progress(p.name, r))?);
    }
    Ok(ThpReport {
        workload: cfg.workload.name(),
        node_mib: cfg.node().zones.iter().map(|z| z.managed_pages).sum::<u64>() >> 8,
        thp: cfg.thp.name(),
        defrag: cfg.defrag.name(),
        kernel: cfg.kernel.name(),
        policies,
    })
}
