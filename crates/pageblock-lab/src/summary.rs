//! A run's summary, as `pageblock demo` prints it after the pagetypeinfo before and after.

use std::fmt::Write as _;

use pageblock_core::{show, MigrateType, VmEvent};

use crate::report::RunReport;
use crate::sim::Run;

/// The summary `demo` prints after a run of `workload`: requests by order, failures,
/// fallbacks, pageblocks per type with the mixed ones, memory use, and `verify`.
pub fn summary(out: &mut String, run: &Run, workload: &str) {
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
