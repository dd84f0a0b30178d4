//! From typed arguments to a validated run specification.

use pageblock_core::{Policy, ZoneConfig};
use pageblock_lab::sim::RunSpec;
use pageblock_lab::workload::WorkloadKind;

use pageblock_core::free_area::FreeAreaLayout;

use crate::cli::{FreeAreaLayoutArg, RunArgs};

/// Operations a workload performs when `--ops` is not given.
pub const DEFAULT_OPS: u64 = 1_000_000;
/// Operations of `pageblock demo`: enough for the zone to fill, drain and refill once.
pub const DEMO_OPS: u64 = 4_000_000;

/// Build the run specification, or say what is wrong with the arguments.
pub fn run_spec(args: &RunArgs, workload: Option<&str>, default_ops: u64) -> Result<RunSpec, String> {
    let workload = match workload {
        None => None,
        Some(name) => Some(WorkloadKind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = WorkloadKind::ALL.iter().map(|w| w.name()).collect();
            format!("unknown workload `{name}`; known: {}", known.join(", "))
        })?),
    };
    let zone = ZoneConfig {
        nr_cpus: args.cpus,
        max_order: args.max_order,
        pageblock_order: args.pageblock_order,
        config_cma: args.cma.is_some(),
        cma_pages: args.cma.unwrap_or(0) / pageblock_core::types::PAGE_SIZE,
        ..ZoneConfig::normal(args.mem)
    };
    let policy = Policy {
        min_free_kbytes: args.min_free_kbytes,
        watermark_scale_factor: args.watermark_scale_factor,
        watermark_boost_factor: args.watermark_boost_factor,
        defrag_mode: args.defrag_mode,
        rmqueue_mode_memory: !args.no_rmqueue_mode_memory,
        buddy_prefetch: args.buddy_prefetch,
        free_area_layout: match args.free_area_layout {
            FreeAreaLayoutArg::Plain => FreeAreaLayout::Plain,
            FreeAreaLayoutArg::Counts => FreeAreaLayout::Counts,
            FreeAreaLayoutArg::PerList => FreeAreaLayout::PerList,
        },
        ..Policy::default()
    };
    zone.validate().map_err(|e| format!("zone: {e}"))?;
    policy.validate().map_err(|e| e.to_string())?;
    Ok(RunSpec { zone, policy, workload, ops: args.ops.unwrap_or(default_ops), seed: args.seed })
}
