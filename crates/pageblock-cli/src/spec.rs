//! From typed arguments to a validated run specification.

use pageblock_core::named_policy::{policy_named, NamedPolicy};
use pageblock_core::{
    BulkFree, FreeAreaLayout, KernelPeriod, MemmapLayout, NodeConfig, PcpBatch, Policy, Sysctl, ZoneConfig,
};
use pageblock_formats::zoneinfo::ZoneInfo;
use pageblock_lab::sim::RunSpec;
use pageblock_lab::workload::WorkloadKind;

use crate::cli::{BulkFreeArg, FreeAreaLayoutArg, KernelArg, PolicyArgs, RunArgs, ZonesArg};

/// Operations a workload performs when `--ops` is not given.
pub const DEFAULT_OPS: u64 = 1_000_000;
/// Operations of `pageblock demo`: enough for the zone to fill, drain and refill once.
pub const DEMO_OPS: u64 = 4_000_000;
/// Bytes of this process's memory one simulated page can cost beside its memmap entry: its
/// share of pageblock bits and per-CPU buffers, and what a workload keeps per block it holds.
pub const HOST_BYTES_PER_PAGE_BESIDE_MEMMAP: u64 = 8;

/// Build the run specification and say which named policy it started from (the policy
/// flags, where given, change it), or say what is wrong with the arguments.
pub fn run_spec(
    args: &RunArgs,
    workload: Option<&str>,
    default_ops: u64,
) -> Result<(RunSpec, NamedPolicy), String> {
    let workload =
        match workload {
            None if args.ops.is_some() => return Err(
                "--ops needs --workload: without a workload the zone is freshly booted and no operation runs"
                    .into(),
            ),
            None => None,
            Some(name) => Some(WorkloadKind::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = WorkloadKind::ALL.iter().map(|w| w.name()).collect();
                format!("unknown workload `{name}`; known: {}", known.join(", "))
            })?),
        };
    let node = node_config(args)?;
    let named = one_policy(&args.policies)?;
    let policy = changed_by_flags(named.policy.clone(), args)?;
    let spec = RunSpec { node, policy, workload, ops: args.ops.unwrap_or(default_ops), seed: args.seed };
    Ok((spec, named))
}

/// `policy` with the policy flags applied: each sysctl flag written as `sysctl -w` would be
/// (a value its handler refuses is an error naming it), each switch flag set.
fn changed_by_flags(mut policy: Policy, args: &RunArgs) -> Result<Policy, String> {
    if args.defrag_mode {
        policy.sysctls.write(Sysctl::DefragMode, 1).map_err(|e| e.to_string())?;
    }
    write_sysctls(&mut policy, &args.sysctls)?;
    if let Some(batch) = args.pcp_batch {
        policy.boot.pcp_batch = Some(PcpBatch::new(batch).map_err(|e| e.to_string())?);
    }
    policy.seed_patches.rmqueue_mode_memory &= !args.no_rmqueue_mode_memory;
    policy.speed_only.buddy_prefetch |= args.buddy_prefetch;
    if let Some(arg) = args.bulk_free {
        policy.speed_only.bulk_free = match arg {
            BulkFreeArg::TwoPass => BulkFree::TwoPass,
            BulkFreeArg::SinglePass => BulkFree::SinglePass,
            BulkFreeArg::Pipelined => BulkFree::Pipelined,
        };
    }
    if let Some(arg) = args.free_area_layout {
        policy.seed_patches.free_area_layout = match arg {
            FreeAreaLayoutArg::Plain => FreeAreaLayout::Plain,
            FreeAreaLayoutArg::Counts => FreeAreaLayout::Counts,
            FreeAreaLayoutArg::PerList => FreeAreaLayout::PerList,
        };
    }
    policy.kernel = args.kernel.map_or(policy.kernel, kernel_period);
    Ok(policy)
}

/// Writes the sysctl flags given in `args` into `policy`, as `sysctl -w` would: a value the
/// handler refuses is an error naming it.
pub fn write_sysctls(policy: &mut Policy, args: &crate::cli::SysctlArgs) -> Result<(), String> {
    let writes = [
        (Sysctl::MinFreeKbytes, args.min_free_kbytes),
        (Sysctl::WatermarkScaleFactor, args.watermark_scale_factor.map(u64::from)),
        (Sysctl::WatermarkBoostFactor, args.watermark_boost_factor.map(u64::from)),
        (Sysctl::PercpuPagelistHighFraction, args.percpu_pagelist_high_fraction.map(u64::from)),
    ];
    for (sysctl, value) in writes {
        if let Some(value) = value {
            policy.sysctls.write(sysctl, value).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The policies `--policy` names (repeated or comma-separated), in order, or `default()`
/// when none is named; an unknown name is refused with the list of known ones.
pub fn named_policies(
    args: &PolicyArgs,
    default: impl FnOnce() -> Vec<NamedPolicy>,
) -> Result<Vec<NamedPolicy>, String> {
    if args.policy.is_empty() {
        return Ok(default());
    }
    args.policy.iter().map(|name| policy_named(name)).collect()
}

/// The one policy of a command that runs on a single policy (`show`, `demo`, `lab seeds`):
/// `vanilla` unless `--policy` names another.
pub fn one_policy(args: &PolicyArgs) -> Result<NamedPolicy, String> {
    let mut named = named_policies(args, || vec![policy_named("vanilla").expect("vanilla is shipped")])?;
    if named.len() > 1 {
        let names: Vec<&str> = named.iter().map(|p| p.name).collect();
        return Err(format!(
            "this command runs one policy, not {} ({}): give --policy once, or compare policies with `pageblock replay` or `pageblock lab thp`",
            named.len(),
            names.join(", ")
        ));
    }
    Ok(named.remove(0))
}

/// The kernel period `--kernel` names.
pub fn kernel_period(arg: KernelArg) -> KernelPeriod {
    match arg {
        KernelArg::Linux6_18 => KernelPeriod::Linux6_18,
        KernelArg::Seed004 => KernelPeriod::Seed004,
    }
}

/// The simulated machine, validated, and refused if this host cannot hold it.
fn node_config(args: &RunArgs) -> Result<NodeConfig, String> {
    let mut node = match (&args.zoneinfo, args.zones) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let zi = ZoneInfo::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            pageblock_lab::machine::node_from_zoneinfo(&zi, &|_| Default::default())
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        (None, ZonesArg::X86_64) => NodeConfig::x86_64(args.mem, args.cpus),
        (None, ZonesArg::Normal) => {
            NodeConfig::single(ZoneConfig { nr_cpus: args.cpus, ..ZoneConfig::normal(args.mem) })
        }
    };
    let memmap_layout = match args.struct_page_bytes {
        Some(bytes) => crate::cmd::memmap_records(bytes)?,
        None => MemmapLayout::Split,
    };
    for z in &mut node.zones {
        z.memmap_layout = memmap_layout;
        z.max_order = args.max_order;
        z.pageblock_order = args.pageblock_order;
        z.config_cma = args.cma.is_some();
    }
    if let (Some(cma), Some(top)) = (args.cma, node.zones.last_mut()) {
        top.cma_pages = cma / pageblock_core::types::PAGE_SIZE;
    }
    if args.zoneinfo.is_none() && node.managed_pages() == 0 {
        return Err(mem_too_small(args));
    }
    node.validate().map_err(|e| format!("machine: {e}"))?;
    check_host_memory(&node)?;
    Ok(node)
}

/// Why `--mem` gives a machine without a managed page: its size and the layout's minimum.
fn mem_too_small(args: &RunArgs) -> String {
    let bytes = args.mem;
    let unit =
        if bytes > 0 && bytes < 1 << 20 { " (a number without a unit is bytes: 16G is 16 GiB)" } else { "" };
    let minimum = match args.zones {
        ZonesArg::X86_64 => "more than 1 MiB (the x86-64 layout leaves the first MiB to the firmware)",
        ZonesArg::Normal => "at least one 4 KiB page",
    };
    format!("--mem is {bytes} bytes{unit}: a machine needs {minimum}")
}

/// Refuse, before anything is allocated, a machine whose metadata would not fit in the
/// memory this host has available (instead of an abort in the middle of building it).
fn check_host_memory(node: &NodeConfig) -> Result<(), String> {
    let per_page = HOST_BYTES_PER_PAGE_BESIDE_MEMMAP
        + node.zones.first().map_or(0, |z| u64::from(z.memmap_layout.bytes_per_page()));
    let needed = node.managed_pages().saturating_mul(per_page);
    let Some(available) = pageblock_live::meminfo::mem_available_bytes() else {
        return Ok(());
    };
    if needed > available {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(format!(
            "a machine of {} pages needs about {:.1} GiB of memory to simulate ({per_page} bytes per page); \
             this host has {:.1} GiB available",
            node.managed_pages(),
            gib(needed),
            gib(available)
        ));
    }
    Ok(())
}
