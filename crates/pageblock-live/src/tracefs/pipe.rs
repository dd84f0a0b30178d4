//! `trace_pipe`, read without blocking: the kernel hands out each event once, formatted as
//! text, and removes it from the ring buffer; an empty pipe answers `EAGAIN` instead of
//! blocking (`tracing_wait_pipe` honours `O_NONBLOCK`), so the reader can never hang.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use super::Tracefs;

/// The open `trace_pipe` of a tracefs.
#[derive(Debug)]
pub struct TracePipe {
    file: File,
    path: PathBuf,
}

impl TracePipe {
    /// Opens `trace_pipe` non-blocking.
    pub fn open(fs: &Tracefs) -> Result<Self, String> {
        let path = fs.path("trace_pipe");
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TracePipe { file, path })
    }

    /// Reads what is there into `buf`: the number of bytes, 0 when the pipe is empty right
    /// now (or at its end once tracing is off).
    pub fn read_available(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        loop {
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(0),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading {}: {e}", self.path.display())),
            }
        }
    }
}
