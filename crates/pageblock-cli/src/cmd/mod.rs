//! One module per subcommand.

pub mod bench;
pub mod demo;
pub mod exporter;
pub mod inspect;
pub mod lab;
pub mod record;
pub mod replay;
pub mod show;
pub mod trace;

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use pageblock_core::TraceSink;
use pageblock_lab::sim::{self, Run, RunSpec};
use pageblock_lab::trace_writer::FtraceWriter;

type TraceFile = FtraceWriter<BufWriter<File>>;

/// An output file opened (created, truncated) before the work that fills it starts, so a
/// path that cannot be written fails in milliseconds instead of after a long run.
pub struct OutputFile {
    path: std::path::PathBuf,
    file: File,
}

impl OutputFile {
    /// Create `path` now.
    pub fn create(path: &Path) -> Result<OutputFile, String> {
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(OutputFile { path: path.to_owned(), file })
    }

    /// Write `value` as pretty JSON and make sure it reached the file.
    pub fn write_json(self, value: &impl serde::Serialize) -> Result<(), String> {
        let json =
            serde_json::to_string_pretty(value).map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.write_text(&(json + "\n"))
    }

    /// Write `text` and make sure it reached the file.
    pub fn write_text(mut self, text: &str) -> Result<(), String> {
        use std::io::Write as _;
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        self.file.write_all(text.as_bytes()).map_err(|e| err(&e))?;
        self.file.sync_all().map_err(|e| err(&e))
    }
}

/// [`OutputFile::create`] for an optional path.
pub fn create_output(path: Option<&Path>) -> Result<Option<OutputFile>, String> {
    path.map(OutputFile::create).transpose()
}

/// Run `spec` with a progress bar on stderr (when it is a terminal), writing the run's kmem
/// events as ftrace text to `trace` if given.
pub fn run_with_progress(spec: &RunSpec, label: &str, trace: Option<&Path>) -> Result<Run, String> {
    let sink: Option<Box<dyn TraceSink>> = match trace {
        None => None,
        Some(path) => {
            let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(Box::new(TraceFile::new(BufWriter::new(file), &spec.node)))
        }
    };
    let bar = crate::progress::bar(spec.ops, label);
    let run = sim::run(spec, sink, &mut |done| bar.set_position(done)).map_err(|e| e.to_string());
    bar.finish_and_clear();
    let run = run?;
    if let (Some(path), Some(mut sink)) = (trace, run.node.shared().trace().take_sink()) {
        if let Some(writer) = sink.as_any().downcast_mut::<TraceFile>() {
            writer.finish().map_err(|e| format!("{}: {e}", path.display()))?;
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
