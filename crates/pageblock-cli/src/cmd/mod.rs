//! One module per subcommand.

pub mod bench;
pub mod demo;
pub mod lab;
pub mod show;
pub mod trace;

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use pageblock_core::TraceSink;
use pageblock_lab::sim::{self, Run, RunSpec};
use pageblock_lab::trace_writer::FtraceWriter;

type TraceFile = FtraceWriter<BufWriter<File>>;

/// Run `spec` with a progress bar on stderr (when it is a terminal), writing the run's kmem
/// events as ftrace text to `trace` if given.
pub fn run_with_progress(spec: &RunSpec, label: &str, trace: Option<&Path>) -> Result<Run, String> {
    let sink: Option<Box<dyn TraceSink>> = match trace {
        None => None,
        Some(path) => {
            let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(Box::new(TraceFile::new(BufWriter::new(file), spec.zone.clone())))
        }
    };
    let bar = crate::progress::bar(spec.ops, label);
    let run = sim::run(spec, sink, &mut |done| bar.set_position(done)).map_err(|e| e.to_string());
    bar.finish_and_clear();
    let mut run = run?;
    if let (Some(path), Some(mut sink)) = (trace, run.zone.take_trace_sink()) {
        if let Some(writer) = sink.as_any().downcast_mut::<TraceFile>() {
            writer.finish().map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(run)
}
