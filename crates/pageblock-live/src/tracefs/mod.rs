//! tracefs, the kernel's tracing file system (`/sys/kernel/tracing`): finding or mounting it,
//! changing its state behind a guard that restores it, and reading `trace_pipe`.
//!
//! Every path is relative to a [`Tracefs`] root, so tests point the same code at a temporary
//! directory holding files with the kernel's names and contents.

mod events;
mod journal;
mod mount;
mod pipe;
mod state;
mod stats;
mod value;

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

pub use events::resolve_events;
pub(crate) use journal::Owner;
pub use journal::{FILE_NAME as JOURNAL_FILE, RUN_PATH as JOURNAL_RUN_PATH};
pub(crate) use mount::c_path;
pub use mount::{unmount, Mounted};
pub use pipe::TracePipe;
pub use state::{
    buffer_size_as_found, per_cpu_buffer_kb, restore_journal, set_buffer_size, Session, SessionConfig,
};
pub use stats::{cpu_stats, CpuStats};

/// A tracefs directory: the top-level trace instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The tracefs mounted (or faked) at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Tracefs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The whole text of `rel`.
    pub fn read(&self, rel: &str) -> Result<String, String> {
        let path = self.path(rel);
        let mut text = String::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(text)
    }

    /// The text of `rel` without surrounding white space.
    pub fn read_trimmed(&self, rel: &str) -> Result<String, String> {
        Ok(self.read(rel)?.trim().to_owned())
    }

    /// Truncates `rel` and writes `value` in one `write` (as `echo value > rel` does; the
    /// file must exist). An empty `value` only truncates: that clears `trace` and the pid
    /// lists.
    pub fn write(&self, rel: &str, value: &str) -> Result<(), String> {
        let path = self.path(rel);
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !value.is_empty() {
            file.write_all(value.as_bytes())
                .map_err(|e| format!("writing `{value}` to {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// The names of the entries of directory `rel`, sorted.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, String> {
        let path = self.path(rel);
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))? {
            let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
}

#[cfg(test)]
mod tests;
