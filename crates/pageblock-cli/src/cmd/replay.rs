//! `pageblock replay TRACE`: a real kernel trace's requests through the simulator under
//! each `--policy`, side by side, with the fidelity table for the traced kernel's own policy.

use crate::meta::RunMeta;
use indicatif::ProgressBar;
use pageblock_core::named_policy::{policy_named, NamedPolicy};
use pageblock_lab::replay::{self, Stage};

use crate::cli::ReplayArgs;

/// Policies replayed when none is named.
const DEFAULT_POLICIES: [&str; 2] = ["vanilla", "defrag_mode"];

/// The named policies [`DEFAULT_POLICIES`].
fn default_policies() -> Vec<NamedPolicy> {
    DEFAULT_POLICIES.iter().map(|n| policy_named(n).expect("a shipped policy")).collect()
}

/// Replay and return the report's text.
pub fn run(args: &ReplayArgs) -> Result<String, String> {
    let mut policies = crate::spec::named_policies(&args.policies, default_policies)?;
    let kernel = crate::spec::kernel_period(args.kernel);
    for p in &mut policies {
        p.policy.kernel = kernel;
        crate::spec::write_sysctls(&mut p.policy, &args.sysctls)?;
    }
    let json = crate::output::create_output(args.json.as_deref())?;
    let html = crate::output::create_output(args.html.as_deref())?;
    // Bytes while reading (the file's size is known once it is open), records while replaying.
    let (mut reading, mut replaying): (Option<ProgressBar>, Option<ProgressBar>) = (None, None);
    let mode = match (args.open_loop, args.closed_loop) {
        (true, _) => Some(replay::engine::Loop::Open),
        (_, true) => Some(replay::engine::Loop::Closed),
        _ => None,
    };
    let pages = |bytes: u64| bytes / pageblock_core::types::PAGE_SIZE;
    let seeds = args.seeds;
    let options = replay::Options {
        skip_bad: args.skip_bad,
        mode,
        balloon_pages: args.balloon.map_or(0, pages),
        mem_pages: args.mem.map(pages),
        zoneinfo: args.zoneinfo.clone(),
        thp_enabled: args.thp_enabled,
        thp_defrag: args.thp_defrag,
        cpus: args.cpus,
        swap: args.swap,
        after_dir: args.after_dir.clone(),
        seeds,
        first_seed: args.seed,
        clear_skip_hints: args.clear_skip_hints,
    };
    let report = replay::run(&args.trace, &policies, options, &mut |stage| match stage {
        Stage::Loading { bytes, total } => {
            reading.get_or_insert_with(|| crate::progress::bytes_bar(total, "reading")).set_position(bytes);
        }
        Stage::Replaying { policy, seed, done, total } => {
            if let Some(bar) = reading.take() {
                bar.finish_and_clear();
            }
            let label = if seeds > 1 { format!("{policy} (seed {seed})") } else { policy.to_owned() };
            let bar = replaying.get_or_insert_with(|| crate::progress::bar(total, &label));
            if bar.length() != Some(total) || bar.message() != label {
                bar.set_message(label);
                bar.set_length(total);
            }
            bar.set_position(done);
        }
    });
    for bar in reading.iter().chain(&replaying) {
        bar.finish_and_clear();
    }
    let report = report?;
    if let Some(cut) = &report.trace.truncated {
        eprintln!("pageblock: warning: {cut}");
    }
    if let Some(out) = json {
        out.write_json(&RunMeta::of_this_process().with(&report))?;
    }
    if let Some(out) = html {
        out.write_text(&report.html())?;
    }
    Ok(report.render())
}
