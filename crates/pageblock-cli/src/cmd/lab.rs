//! `pageblock lab seeds`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pageblock_lab::seeds::{self, SeedsConfig};

use crate::cli::SeedsArgs;

/// Run every seed experiment and return the report text.
pub fn seeds(args: &SeedsArgs) -> Result<String, String> {
    let cfg = SeedsConfig { quick: args.quick, seed: args.seed };
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        spinner.set_style(style);
    }
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let report = seeds::run(&cfg, &mut |step| spinner.set_message(step.to_owned()));
    spinner.finish_and_clear();
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(report.render())
}
