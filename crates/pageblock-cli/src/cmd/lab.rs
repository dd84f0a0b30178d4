//! `pageblock lab seeds`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pageblock_lab::seeds::{self, SeedsConfig};

use crate::cli::SeedsArgs;

/// Run every seed experiment and return the report text.
pub fn seeds(args: &SeedsArgs) -> Result<String, String> {
    let cfg = SeedsConfig { quick: args.quick, seed: args.seed };
    let json = super::create_output(args.json.as_deref())?;
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        spinner.set_style(style);
    }
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let report = seeds::run(&cfg, &mut |step| spinner.set_message(step.to_owned()));
    spinner.finish_and_clear();
    if let Some(out) = json {
        out.write_json(&report)?;
    }
    Ok(report.render())
}
