//! `pageblock demo`: the main job on a built-in default. A 16 GiB zone boots, the `fragment`
//! workload runs, and the user sees /proc/pagetypeinfo before and after with a summary.

use std::fmt::Write as _;

use pageblock_core::{show, Node};
use pageblock_lab::summary::summary;

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
