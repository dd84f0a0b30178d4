//! `pageblock lab seeds`, `pageblock lab thp`.

use crate::meta::RunMeta;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pageblock_lab::seeds::{self, SeedsConfig};

use crate::cli::{SeedsArgs, ThpArgs};

/// Run every seed experiment and return the report text.
pub fn seeds(args: &SeedsArgs) -> Result<String, String> {
    let policy = crate::spec::one_policy(&args.policies)?;
    let cfg = SeedsConfig { quick: args.quick, seed: args.seed, only: args.only, policy };
    let json = crate::output::create_output(args.json.as_deref())?;
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        spinner.set_style(style);
    }
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let report = seeds::run(&cfg, &mut |step| spinner.set_message(step.to_owned()));
    spinner.finish_and_clear();
    if let Some(out) = json {
        out.write_json(&RunMeta::of_this_process().seed(args.seed).quick(args.quick).with(&report))?;
    }
    Ok(format!("lab seeds on policy `{}`\n\n{}", cfg.policy.name, report.render()))
}

/// Run the THP lab and return the report text.
pub fn thp(args: &ThpArgs) -> Result<String, String> {
    use pageblock_core::thp::{ThpDefrag, ThpEnabled};
    use pageblock_lab::thp::{self, ThpLabConfig, ThpWorkloadKind};

    let workload = ThpWorkloadKind::from_name(&args.workload)
        .ok_or_else(|| format!("unknown workload `{}`; known: kbuild-thp, thpscale", args.workload))?;
    let defrag = ThpDefrag::from_name(&args.defrag).ok_or_else(|| {
        format!(
            "unknown THP defrag setting `{}`; known: always, defer, defer+madvise, madvise, never",
            args.defrag
        )
    })?;
    // `never` would turn the workloads' MADV_HUGEPAGE bursts into base-page faults, which
    // the lab's workloads do not model (a burst that falls back maps one base page).
    let thp = ThpEnabled::from_name(&args.thp)
        .filter(|&e| e != ThpEnabled::Never)
        .ok_or_else(|| format!("unknown THP setting `{}`; known: always, madvise", args.thp))?;
    let policies = crate::spec::named_policies(&args.policies, pageblock_core::named_policy::policies)?;
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    if args.jobs.is_some() && workload != ThpWorkloadKind::KbuildThp {
        return Err("--jobs applies to kbuild-thp only".into());
    }
    let cfg = ThpLabConfig {
        workload,
        policies,
        runs: args.runs,
        quick: args.quick,
        seed: args.seed,
        thp,
        defrag,
        kernel: crate::spec::kernel_period(args.kernel),
        jobs: args.jobs.map(|j| j as usize),
    };
    let json = crate::output::create_output(args.json.as_deref())?;
    let html = crate::output::create_output(args.html.as_deref())?;
    let total = (cfg.runs * cfg.policies.len()) as u64;
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut done = 0;
    let report = thp::run(&cfg, &mut |name, _| {
        done += 1;
        bar.set_message(name.to_owned());
        bar.set_position(done);
    })
    .map_err(|e| e.to_string());
    bar.finish_and_clear();
    let report = report?;
    if let Some(out) = json {
        out.write_json(&RunMeta::of_this_process().seed(args.seed).quick(args.quick).with(&report))?;
    }
    if let Some(out) = html {
        out.write_text(&report.html())?;
    }
    Ok(report.render())
}
