//! A recording's journal: the tracefs state it found and must write back, kept on disk as
//! JSON from before its first change until its restore. A recording that dies without
//! restoring (SIGKILL, a crash) leaves the journal behind: `pageblock record --restore` writes
//! that state back, and the next recording names the dead one instead of blaming "someone
//! else".
//!
//! The journal has copies: a well-known one per machine ([`RUN_PATH`], created exclusively,
//! so it also keeps two recordings from taking tracefs at once) and one in the recording's
//! directory ([`FILE_NAME`]). A clean restore removes them all.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Tracefs;
use crate::state_file::{claim_copies, remove_own_copies, replace};

/// The well-known copy (`/run` is emptied at boot, when tracefs is reset anyway).
pub const RUN_PATH: &str = "/run/pageblock/record.state";
/// The copy's name in a recording's directory.
pub const FILE_NAME: &str = "record.state";

/// One saved control file: where, and the value that writes its old state back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The file, relative to the tracefs root.
    pub rel: String,
    /// What to write to it.
    pub value: String,
}

/// A process, told apart from a later one with the same pid by its start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn this_process() -> Result<Owner, String> {
        let pid = std::process::id();
        let start_time = start_time(pid).ok_or("cannot read this process's start time in /proc/self/stat")?;
        Ok(Owner { pid, start_time })
    }

    /// Whether the process still runs (a zombie does not).
    pub fn is_running(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }
}

/// Field 22 of `/proc/PID/stat` unless field 3 says the process is dead (`Z`, `X`); fields
/// are counted after the command name, which is in parentheses and may hold anything.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X")) {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// What a journal file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalState {
    /// The recording.
    pub owner: Owner,
    /// The tracefs it changed.
    pub tracefs: PathBuf,
    /// Whether it mounted that tracefs (then the restore unmounts it).
    pub mounted_here: bool,
    /// Every copy of the journal.
    pub copies: Vec<PathBuf>,
    /// What to write back, oldest first.
    pub saved: Vec<Saved>,
}

/// The journal of this process's recording.
#[derive(Debug)]
pub struct Journal {
    state: JournalState,
}

impl Journal {
    /// Creates every copy (each must not exist yet) holding an empty journal. Refuses when
    /// the first copy exists: another recording is running, or one died without restoring.
    pub fn claim(copies: &[PathBuf], fs: &Tracefs, mounted_here: bool) -> Result<Journal, String> {
        let state = JournalState {
            owner: Owner::this_process()?,
            tracefs: fs.root().to_owned(),
            mounted_here,
            copies: copies.to_vec(),
            saved: Vec::new(),
        };
        claim_copies(copies, &to_json(&state)?, |path| refusal(path, fs))?;
        Ok(Journal { state })
    }

    /// Adds `saved` (unless its file is saved already: the first value is the one found)
    /// and rewrites every copy, each replaced whole.
    pub fn save(&mut self, saved: Saved) -> Result<(), String> {
        if self.state.saved.iter().any(|s| s.rel == saved.rel) {
            return Ok(());
        }
        self.state.saved.push(saved);
        let json = to_json(&self.state)?;
        for path in &self.state.copies {
            replace(path, &json)?;
        }
        Ok(())
    }

    /// What to write back, oldest first.
    pub fn saved(&self) -> &[Saved] {
        &self.state.saved
    }

    /// Where the copies are.
    pub fn paths(&self) -> &[PathBuf] {
        &self.state.copies
    }

    /// Removes every copy: the state is restored.
    pub fn remove(self) {
        remove_copies(&self.state);
    }
}

/// The journal at `path`.
pub fn load(path: &Path) -> Result<JournalState, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a pageblock record journal: {e}", path.display()))
}

/// Removes the copies of `state` that are still its own.
pub fn remove_copies(state: &JournalState) {
    remove_own_copies(&state.copies, |path| load(path).is_ok_and(|other| other.owner == state.owner));
}

/// Why a recording cannot start while the journal at `path` exists.
fn refusal(path: &Path, fs: &Tracefs) -> String {
    match load(path) {
        Ok(other) if other.owner.is_running() => {
            format!("another pageblock record (pid {}) is recording; wait until it ends", other.owner.pid)
        }
        Ok(other) => {
            let left = if fs.read_trimmed("tracing_on").as_deref() == Ok("1") {
                "tracing on"
            } else {
                "tracefs changed"
            };
            format!(
                "a pageblock record (pid {}, no longer running) left {left}; run `pageblock record --restore`",
                other.owner.pid
            )
        }
        Err(e) => format!("{e}; remove it if no pageblock record is running"),
    }
}

fn to_json(state: &JournalState) -> Result<String, String> {
    serde_json::to_string_pretty(state).map(|j| j + "\n").map_err(|e| e.to_string())
}
