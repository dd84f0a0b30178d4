//! `pageblock demo`: the main job on a built-in default. A 16 GiB zone boots, the `fragment`
//! workload runs, and the user sees /proc/pagetypeinfo before and after with a summary.

use std::fmt::Write as _;

use pageblock_core::{show, MigrateType, Node, VmEvent};
use pageblock_lab::report::RunReport;
use pageblock_lab::sim::Run;

use crate::cli::DemoArgs;
use crate::spec::{run_spec, DEMO_OPS};

/// Run the demo and return everything it prints.
pub fn run(args: &DemoArgs) -> Result<String, String> {
    let workload = args.run.workload.as_deref().unwrap_or("fragment");
    let (spec, named) = run_spec(&args.run, Some(workload), DEMO_OPS)?;
    let fresh = Node::new(spec.node.clone(), spec.policy.clone()).map_err(|e| e.to_string())?;
    let mut out = String::new();
    let gib = spec.node.managed_pages() as f64 * 4096.0 / (1u64 << 30) as f64;
    let zones: Vec<&str> = spec.node.zones.iter().map(|z| z.zone_type.name()).collect();
    let _ = writeln!(
        out,
        "pageblock demo: {gib:.1} GiB managed in zones {}, {} CPUs, policy `{}`{}, workload `{workload}`, {} operations, RNG seed {}\n",
        zones.join(" + "),
        fresh.shared().nr_cpus(),
        named.name,
        if spec.policy == named.policy { "" } else { " changed by its flags" },
        spec.ops,
        spec.seed
    );
    let _ = writeln!(
        out,
        "== /proc/pagetypeinfo after boot ==\n{}",
        show::pagetypeinfo_by_policy(&fresh).render()
    );
    let run = super::run_with_progress(&spec, workload, args.run.trace.as_deref())?;
    let _ = writeln!(
        out,
        "== /proc/pagetypeinfo after `{workload}` ==\n{}",
        show::pagetypeinfo_by_policy(&run.node).render()
    );
    summary(&mut out, &run, workload);
    Ok(out)
}

fn summary(out: &mut String, run: &Run, workload: &str) {
    let node = run.node.shared();
    let ev = |e: VmEvent| node.event(e);
    let _ = writeln!(out, "== summary ==");
    requests(out, &run.report);
    let failed: u64 = run.report.orders().into_iter().map(|o| run.report.by_order(o).failures()).sum();
    let oom = ev(VmEvent::PgAllocOom);
    if failed > 0 {
        let _ = writeln!(
        out,
        "failed requests: {failed}, of which {oom} reached the OOM killer, which the simulation does not have: \
         the request fails where the kernel would kill a process (`{}` fills the zone to its watermarks at each \
         peak); the other {} may fail without it (atomic and costly-order requests)",
        workload,
        failed.saturating_sub(oom)
    );
    }
    let _ = writeln!(
        out,
        "fallbacks: {} (fragmenting {}, took ownership {}); whole-block claims {}, partial claims {} (rejected {}), steals {}",
        ev(VmEvent::Extfrag),
        ev(VmEvent::ExtfragFragmenting),
        ev(VmEvent::ExtfragChangeOwnership),
        ev(VmEvent::ClaimWholeBlock),
        ev(VmEvent::ClaimPartialBlock),
        ev(VmEvent::ClaimFail),
        ev(VmEvent::Steal),
    );
    for z in node.zones() {
        let cfg = z.config();
        let types = show::reported_migratetypes(cfg.config_cma);
        let blocks = show::pageblock_counts(z);
        let mixed = show::mixed_block_counts(z);
        let per_type: Vec<String> = types
            .iter()
            .zip(blocks.iter().zip(&mixed))
            .filter(|(mt, (b, _))| **b > 0 || mt.is_mergeable())
            .map(|(mt, (b, m))| format!("{} {b} ({m} mixed)", mt.name()))
            .collect();
        let _ = writeln!(out, "pageblocks, zone {:>6}: {}", cfg.zone_type.name(), per_type.join(", "));
    }
    let managed = node.managed_pages();
    let pct = |p: u64| p as f64 * 100.0 / managed as f64;
    let buddy = show::buddyinfo(node);
    let mut per_order = vec![0u64; node.max_order() as usize + 1];
    for z in &buddy.zones {
        for (o, n) in z.nr_free.iter().enumerate() {
            per_order[o] += n;
        }
    }
    let largest = per_order.iter().rposition(|&n| n > 0);
    let unusable = pageblock_formats::extfrag::unusable_free_index(&per_order, node.pageblock_order());
    let _ = writeln!(
        out,
        "memory: workload holds {:.1}%, free {:.1}%, per-CPU lists {:.1}%; largest free order {}; {:.1}% of free memory is in blocks smaller than a pageblock",
        pct(run.held_pages),
        pct(node.nr_free_pages()),
        pct(node.nr_pcp_pages()),
        largest.map_or("none".to_owned(), |o| o.to_string()),
        unusable as f64 / 10.0,
    );
    let check = match run.node.verify() {
        Ok(_) => "all invariants hold".to_owned(),
        Err(e) => format!("FAILED: {e}"),
    };
    let _ = writeln!(out, "verify: {check}");
}

fn requests(out: &mut String, report: &RunReport) {
    let _ = writeln!(out, "requests ({} operations):", report.ops);
    for order in report.orders() {
        let all = report.by_order(order);
        let by_type: Vec<String> = [MigrateType::Movable, MigrateType::Unmovable, MigrateType::Reclaimable]
            .iter()
            .filter_map(|mt| {
                report.allocs.get(&(order, *mt)).map(|o| format!("{} {}", mt.name(), o.attempts))
            })
            .collect();
        let _ = writeln!(
            out,
            "  order {order:>2}: {:>9} requests, {:>6} failed ({:6.2}% success)  [{}]",
            all.attempts,
            all.failures(),
            all.success_percent(),
            by_type.join(", ")
        );
    }
}
