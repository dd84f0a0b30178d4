//! One module per subcommand.

pub mod bench;
pub mod demo;
pub mod exporter;
pub mod inspect;
pub mod lab;
pub mod real;
pub mod record;
pub mod replay;
pub mod show;
pub mod trace;

use std::path::Path;

use pageblock_core::TraceSink;
use pageblock_lab::sim::{self, Run, RunSpec};
use pageblock_trace::writer::FtraceWriter;

use crate::output::{create_output, TextStream};

type TraceFile = FtraceWriter<TextStream>;

/// Run `spec` with a progress bar on stderr (when it is a terminal), writing the run's kmem
/// events as ftrace text to `trace` if given.
pub fn run_with_progress(spec: &RunSpec, label: &str, trace: Option<&Path>) -> Result<Run, String> {
    let out = create_output(trace)?;
    let sink: Option<Box<dyn TraceSink>> = match &out {
        None => None,
        Some(out) => Some(Box::new(TraceFile::new(TextStream::new(out)?, &spec.node))),
    };
    let bar = crate::progress::bar(spec.ops, label);
    let run = sim::run(spec, sink, &mut |done| bar.set_position(done)).map_err(|e| e.to_string());
    bar.finish_and_clear();
    let run = run?;
    if let (Some(out), Some(mut sink)) = (out, run.node.shared().trace().take_sink()) {
        if let Some(writer) = sink.as_any().downcast_mut::<TraceFile>() {
            let err = |e: std::io::Error| format!("{}: {e}", out.path().display());
            writer.finish().map_err(err)?;
            writer.get_mut().complete().map_err(err)?;
            out.commit()?;
        }
    }
    Ok(run)
}

/// `--struct-page-bytes N`: the kernel's memmap shape with N-byte records, or why not.
pub fn memmap_records(bytes: u32) -> Result<pageblock_core::MemmapLayout, String> {
    let layout = pageblock_core::MemmapLayout::Records(bytes);
    if layout.is_valid() {
        Ok(layout)
    } else {
        Err(pageblock_core::ConfigError::StructPageBytes(bytes).to_string())
    }
}
