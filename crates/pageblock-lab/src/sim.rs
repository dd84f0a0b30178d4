//! Run a workload against a simulated zone, deterministically.

use pageblock_core::{ConfigError, Policy, TraceSink, Zone, ZoneConfig};

use crate::report::RunReport;
use crate::workload::{Workload, WorkloadKind};

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The zone.
    pub zone: ZoneConfig,
    /// The allocator policy.
    pub policy: Policy,
    /// The workload, or none for a freshly booted zone.
    pub workload: Option<WorkloadKind>,
    /// Operations to perform.
    pub ops: u64,
    /// Seed of every random choice.
    pub seed: u64,
}

/// A finished run: the zone as the workload left it, and what happened.
pub struct Run {
    /// The zone after the run (the workload's blocks are still allocated).
    pub zone: Zone,
    /// Outcomes.
    pub report: RunReport,
    /// Pages the workload holds at the end.
    pub held_pages: u64,
}

/// How often (in operations) the progress callback is called.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Build the zone and run the workload, calling `progress(ops_done)` every
/// [`PROGRESS_EVERY`] operations and at the end. Kmem events of the run (not of the boot) go
/// to `trace` if given; the sink stays installed in the returned zone.
pub fn run(
    spec: &RunSpec,
    trace: Option<Box<dyn TraceSink>>,
    progress: &mut dyn FnMut(u64),
) -> Result<Run, ConfigError> {
    let mut zone = Zone::new(spec.zone.clone(), spec.policy.clone())?;
    zone.set_trace_sink(trace);
    let mut report = RunReport::default();
    let mut held_pages = 0;
    if let Some(kind) = spec.workload {
        let mut w: Box<dyn Workload> = kind.build(&zone, spec.seed);
        for i in 0..spec.ops {
            w.step(&mut zone, &mut report);
            if (i + 1) % PROGRESS_EVERY == 0 {
                progress(i + 1);
            }
        }
        held_pages = w.held_pages();
    }
    progress(spec.ops);
    Ok(Run { zone, report, held_pages })
}
