//! One module per subcommand.

pub mod demo;
pub mod show;

use pageblock_lab::sim::{self, Run, RunSpec};

/// Run `spec` with a progress bar on stderr (when it is a terminal).
pub fn run_with_progress(spec: &RunSpec, label: &str) -> Result<Run, String> {
    let bar = crate::progress::bar(spec.ops, label);
    let run = sim::run(spec, &mut |done| bar.set_position(done)).map_err(|e| e.to_string());
    bar.finish_and_clear();
    run
}
