//! Run a workload on a simulated node, deterministically.

use pageblock_core::{ConfigError, Node, NodeConfig, Policy, TraceSink};

use crate::report::RunReport;
use crate::workload::{Workload, WorkloadKind};

/// Simulated time between two workload operations, in microseconds, from the timestamps of
/// the real trace `../shared/traces/linux-6.18-clone-tar-python-thp` (Linux 6.18, 2 CPUs,
/// clone + tar + python with THP): 1,570,998 `mm_page_alloc`, `mm_page_free` and
/// `mm_page_free_batched` events in 21.58 s, i.e. 72,800 events a second on the node, one
/// every 13.7 µs on average (the gaps are bursty: median 1 µs, 90th percentile 21 µs, 99th
/// 159 µs). So the vmstat worker (every second) runs about every 71,000 operations.
pub const OP_INTERVAL_US: u64 = 14;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The machine.
    pub node: NodeConfig,
    /// The allocator policy.
    pub policy: Policy,
    /// The workload, or none for a freshly booted machine.
    pub workload: Option<WorkloadKind>,
    /// Operations to perform.
    pub ops: u64,
    /// Seed of every random choice.
    pub seed: u64,
}

/// A finished run: the node as the workload left it, and what happened.
pub struct Run {
    /// The node after the run (the workload's blocks are still allocated; per-CPU lists
    /// hold what the CPUs cached).
    pub node: Node,
    /// Outcomes.
    pub report: RunReport,
    /// Pages the workload holds at the end.
    pub held_pages: u64,
}

/// How often (in operations) the progress callback is called.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Boot the node and run the workload, calling `progress(ops_done)` every
/// [`PROGRESS_EVERY`] operations and at the end. Kmem events of the run (not of the boot) go
/// to `trace` if given; the sink stays installed on the returned node's hub.
pub fn run(
    spec: &RunSpec,
    trace: Option<Box<dyn TraceSink>>,
    progress: &mut dyn FnMut(u64),
) -> Result<Run, ConfigError> {
    let mut node = Node::new(spec.node.clone(), spec.policy.clone())?;
    node.shared().trace().set_sink(trace);
    let mut report = RunReport::default();
    let mut held_pages = 0;
    if let Some(kind) = spec.workload {
        let shared = node.shared();
        let mut w: Box<dyn Workload> = kind.build(shared.managed_pages(), shared.nr_cpus(), spec.seed);
        for i in 0..spec.ops {
            node.advance_to(i * OP_INTERVAL_US);
            w.step(&node, &mut report);
            if (i + 1) % PROGRESS_EVERY == 0 {
                progress(i + 1);
            }
        }
        held_pages = w.held_pages();
    }
    progress(spec.ops);
    Ok(Run { node, report, held_pages })
}
