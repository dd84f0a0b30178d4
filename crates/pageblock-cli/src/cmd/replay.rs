//! `pageblock replay TRACE`: a real kernel trace's requests through the simulator under
//! each `--policy`, side by side, with the fidelity table for `vanilla`.

use pageblock_lab::replay::{self, NamedPolicy, Stage};

use crate::cli::ReplayArgs;

/// Policies replayed when none is named.
const DEFAULT_POLICIES: [&str; 2] = ["vanilla", "defrag_mode"];

/// Replay and return the report's text.
pub fn run(args: &ReplayArgs) -> Result<String, String> {
    let names: Vec<&str> = if args.policy.is_empty() {
        DEFAULT_POLICIES.to_vec()
    } else {
        args.policy.iter().map(String::as_str).collect()
    };
    let policies = names.iter().map(|n| replay::policy_named(n)).collect::<Result<Vec<NamedPolicy>, _>>()?;
    let json = super::create_output(args.json.as_deref())?;
    let bar = crate::progress::bar(0, "reading");
    let report = replay::run(&args.trace, &policies, args.skip_bad, &mut |stage| match stage {
        Stage::Loading { bytes, total } => {
            bar.set_length(total.unwrap_or(bytes));
            bar.set_position(bytes);
        }
        Stage::Replaying { policy, done, total } => {
            if bar.length() != Some(total) || bar.message() != policy {
                bar.set_message(policy.to_owned());
                bar.set_length(total);
            }
            bar.set_position(done);
        }
    });
    bar.finish_and_clear();
    let report = report?;
    if let Some(out) = json {
        out.write_json(&report)?;
    }
    Ok(report.render())
}
