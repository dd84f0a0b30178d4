//! Moving events from `trace_pipe` to the trace file while the command runs, so the ring
//! buffer never has to hold a whole run, then draining what is left once tracing is off.
//!
//! One thread does it all: read the pipe until it is empty, check the command and pending
//! signals, sleep a little when there was nothing to read. Nothing here blocks, so a quiet
//! pipe can never hang the recorder. While the command runs, the thread runs at a higher
//! priority than the command ([`super::priority`]) so that a busy workload cannot starve it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

use super::priority::{ThreadNice, READER_NICE};
use super::signals::Signals;
use super::writer::{TraceSummary, TraceWriter};
use super::Progress;
use crate::tracefs::{Session, TracePipe, Tracefs};

/// Pause when the pipe is empty: at 100 reads a second the 64 MiB per-CPU buffer has
/// ample room in between.
const IDLE: Duration = Duration::from_millis(10);

/// Reads between two looks at the command (the kernel hands out at most a page or two
/// per read).
const MAX_READS: usize = 256;

/// The pipe, the file, and the first error on the way (after which the stream stops).
pub struct Stream {
    pipe: TracePipe,
    writer: TraceWriter<File>,
    path: PathBuf,
    buf: Vec<u8>,
    failure: Option<String>,
    progress: Box<dyn Progress>,
}

impl Stream {
    /// Opens `trace_pipe` and creates the trace file at `path`, the stream's progress shown
    /// on `progress`.
    pub fn open(fs: &Tracefs, path: &Path, progress: Box<dyn Progress>) -> Result<Self, String> {
        let pipe = TracePipe::open(fs)?;
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let writer = TraceWriter::new(file).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Stream { pipe, writer, path: path.to_owned(), buf: vec![0; 64 << 10], failure: None, progress })
    }

    /// Moves what the pipe holds into the file (at most [`MAX_READS`] reads), then ends the
    /// zstd frame if it is due (so a killed recording leaves a readable file): the bytes
    /// moved. After a failure it moves nothing.
    fn pump(&mut self) -> usize {
        let mut moved = 0;
        for _ in 0..MAX_READS {
            if self.failure.is_some() {
                break;
            }
            let n = match self.pipe.read_available(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    self.failure = Some(e);
                    break;
                }
            };
            if let Err(e) = self.writer.write(&self.buf[..n]) {
                self.failure = Some(format!("writing {}: {e}", self.path.display()));
            }
            moved += n;
        }
        if let (None, Err(e)) = (&self.failure, self.writer.end_frame_if_due(std::time::Instant::now())) {
            self.failure = Some(format!("writing {}: {e}", self.path.display()));
        }
        self.progress.update(self.writer.text_bytes(), self.writer.compressed_bytes());
        moved
    }

    /// Streams until `child` exits and returns its status, passing signals sent to the
    /// recorder on to it, the thread at [`READER_NICE`] meanwhile. If the file cannot be
    /// written, tracing stops (the command runs on; the failure is reported by
    /// [`Stream::finish`]).
    pub fn until_exit(
        &mut self,
        child: &mut Child,
        session: &mut Session,
        signals: &Signals,
    ) -> Result<ExitStatus, String> {
        let _nice = match ThreadNice::set(READER_NICE) {
            Ok(g) => Some(g),
            Err(e) => {
                self.progress.note(&format!(
                    "pageblock record: the reader stays at its priority ({e}); a busy workload may overrun the ring buffer"
                ));
                None
            }
        };
        loop {
            signals.forward_to(child.id());
            if let Some(status) = child.try_wait().map_err(|e| format!("waiting for COMMAND: {e}"))? {
                return Ok(status);
            }
            let failed_before = self.failure.is_some();
            let moved = self.pump();
            if let (false, Some(e)) = (failed_before, &self.failure) {
                self.progress.note(&format!("pageblock: recording stopped: {e}; waiting for COMMAND to end"));
                if let Err(e) = session.tracing_off() {
                    eprintln!("pageblock: {e}");
                }
            }
            if moved == 0 {
                std::thread::sleep(IDLE);
            }
        }
    }

    /// Reads the pipe empty once tracing is off. Events being committed on another CPU
    /// as tracing stopped may arrive just after the first empty read, so it looks twice.
    pub fn drain(&mut self) {
        while self.pump() > 0 {}
        std::thread::sleep(IDLE);
        while self.pump() > 0 {}
    }

    /// Ends the zstd frame and syncs the file; any failure on the way is the error.
    pub fn finish(self) -> Result<TraceSummary, String> {
        self.progress.finish();
        drop(self.pipe);
        if let Some(e) = self.failure {
            return Err(e);
        }
        let shown = self.path.display();
        let (file, summary) = self.writer.finish().map_err(|e| format!("writing {shown}: {e}"))?;
        file.sync_all().map_err(|e| format!("writing {shown}: {e}"))?;
        Ok(summary)
    }
}
