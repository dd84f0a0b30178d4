//! A recording's hold on tracefs: every control file it changes is saved first, in the
//! recording's journal on disk, and the [`Session`] writes them all back, in reverse order,
//! when it is restored or dropped (on success, on error and after a signal alike). After a
//! SIGKILL, [`restore_journal`] writes them back from the journal.
//!
//! What cannot be restored: the ring buffer's contents (resizing and clearing it discard
//! them) and a boot-time buffer that was never expanded (`7 (expanded: 1408)` comes back as
//! `1408`, the size the next tracer would get anyway).

use std::path::{Path, PathBuf};

use super::journal::{self, Journal, JournalState, Saved};
use super::value::{self, BufferSize};
use super::Tracefs;

/// Trace options that shape the text lines, and the kernel's defaults, which parsers of
/// the recording (and the shared traces) expect.
const FORMAT_OPTIONS: [(&str, &str); 7] = [
    ("bin", "0"),
    ("raw", "0"),
    ("hex", "0"),
    ("context-info", "1"),
    ("irq-info", "1"),
    ("record-tgid", "0"),
    ("latency-format", "0"),
];

/// The clock the recording uses: microsecond timestamps (counter clocks print integers).
const CLOCK: &str = "local";

/// Files that restrict which events are recorded, cleared for the recording.
const PID_FILES: [&str; 2] = ["set_event_pid", "set_event_notrace_pid"];

/// What a recording asks of tracefs.
#[derive(Clone, Debug)]
pub struct SessionConfig<'a> {
    /// `SYSTEM/EVENT` directories under `events/` to enable.
    pub events: &'a [String],
    /// Ring buffer size per CPU, KiB.
    pub buffer_size_kb: u64,
    /// Take over tracefs even if someone else is tracing.
    pub force: bool,
    /// Where to keep the journal of what to write back, the well-known copy first.
    pub journal: &'a [PathBuf],
    /// Whether the recording mounted this tracefs.
    pub mounted_here: bool,
}

/// The changed tracefs, restored by [`Session::restore`] or on drop.
#[derive(Debug)]
pub struct Session {
    fs: Tracefs,
    /// What to write back, on disk too; taken by the restore.
    journal: Option<Journal>,
}

impl Session {
    /// Refuses if a journal is in the way (another recording, or a dead one's) or someone
    /// else is tracing (unless `force`), then saves (in the journal) and changes the state: tracing off, tracer `nop`, the default text format and clock, no pid lists
    /// or filters on the events, the buffer size, the events enabled, the buffer cleared.
    /// Tracing stays off until [`Session::tracing_on`]. On error everything changed so far
    /// is restored.
    pub fn start(fs: &Tracefs, cfg: &SessionConfig<'_>) -> Result<Session, String> {
        let journal = Journal::claim(cfg.journal, fs, cfg.mounted_here)?;
        let mut s = Session { fs: fs.clone(), journal: Some(journal) };
        check_idle(fs, cfg.force)?;
        s.change("tracing_on", "0")?;
        s.change_if_differs("current_tracer", "nop")?;
        for (option, default) in FORMAT_OPTIONS {
            let rel = format!("options/{option}");
            if fs.exists(&rel) {
                s.change_if_differs(&rel, default)?;
            }
        }
        s.set_clock()?;
        s.clear_restrictions(cfg.events)?;
        s.set_buffer_size(cfg.buffer_size_kb)?;
        for event in cfg.events {
            s.change_if_differs(&format!("events/{event}/enable"), "1")?;
        }
        fs.write("trace", "")?;
        Ok(s)
    }

    /// Starts writing events to the ring buffer.
    pub fn tracing_on(&mut self) -> Result<(), String> {
        self.change("tracing_on", "1")
    }

    /// Stops writing events to the ring buffer.
    pub fn tracing_off(&mut self) -> Result<(), String> {
        self.change("tracing_on", "0")
    }

    /// Writes every saved value back (see `write_back`) and removes the journal; a
    /// failed restore keeps the journal for `pageblock record --restore`. Restoring twice
    /// does nothing the second time.
    pub fn restore(&mut self) -> Result<(), String> {
        let Some(journal) = self.journal.take() else { return Ok(()) };
        match write_back(&self.fs, journal.saved()) {
            Ok(()) => {
                journal.remove();
                Ok(())
            }
            Err(e) => Err(format!("{e}; the journal {} keeps what to restore", journal_paths(&journal))),
        }
    }

    /// Saves `rel`'s restore value in the journal, on disk, unless it is saved already
    /// (the first value is the one found).
    fn save(&mut self, rel: &str, value: String) -> Result<(), String> {
        let journal = self.journal.as_mut().ok_or("tracefs changed after its restore")?;
        journal.save(Saved { rel: rel.to_owned(), value })
    }

    fn change(&mut self, rel: &str, value: &str) -> Result<(), String> {
        let now = self.fs.read_trimmed(rel)?;
        self.save(rel, now)?;
        self.fs.write(rel, value)
    }

    fn change_if_differs(&mut self, rel: &str, value: &str) -> Result<(), String> {
        if self.fs.read_trimmed(rel)? == value {
            return Ok(());
        }
        self.change(rel, value)
    }

    fn set_clock(&mut self) -> Result<(), String> {
        let text = self.fs.read("trace_clock")?;
        let now =
            value::current_clock(&text).ok_or_else(|| format!("no current clock in `{}`", text.trim()))?;
        if now != CLOCK {
            self.save("trace_clock", now.to_owned())?;
            self.fs.write("trace_clock", CLOCK)?;
        }
        Ok(())
    }

    /// Clears the event pid lists and the filters of `events`, which would hide events.
    fn clear_restrictions(&mut self, events: &[String]) -> Result<(), String> {
        for rel in PID_FILES {
            if !self.fs.exists(rel) {
                continue;
            }
            let pids = value::pid_list(&self.fs.read(rel)?);
            if !pids.is_empty() {
                self.save(rel, pids)?;
                self.fs.write(rel, "")?;
            }
        }
        for event in events {
            let rel = format!("events/{event}/filter");
            let text = self.fs.read(&rel)?;
            if value::filter_is_set(&text) {
                self.save(&rel, value::filter_restore(&text))?;
                self.fs.write(&rel, "0")?;
            }
        }
        Ok(())
    }

    /// Saves the buffer size (per CPU when the CPUs differ) and sets `kb` on every CPU.
    fn set_buffer_size(&mut self, kb: u64) -> Result<(), String> {
        for (rel, old) in buffer_size_as_found(&self.fs)? {
            self.save(&rel, old)?;
        }
        set_buffer_size(&self.fs, kb)
    }
}

/// The files and values that write the ring buffers' size back as found: `buffer_size_kb`,
/// or each CPU's when the CPUs differ (an unexpanded boot-time buffer comes back at its
/// expanded size: expansion cannot be undone, and is what the next tracer gets anyway).
pub fn buffer_size_as_found(fs: &Tracefs) -> Result<Vec<(String, String)>, String> {
    match BufferSize::parse(&fs.read("buffer_size_kb")?)?.restore_kb() {
        Some(old) => Ok(vec![("buffer_size_kb".to_owned(), old.to_string())]),
        None => fs
            .list("per_cpu")?
            .into_iter()
            .map(|cpu| {
                let rel = format!("per_cpu/{cpu}/buffer_size_kb");
                let old = fs.read_trimmed(&rel)?;
                Ok((rel, old))
            })
            .collect(),
    }
}

/// Each CPU's ring buffer, KiB (`per_cpu/cpuN/buffer_size_kb`, which prints the size
/// itself even while the top-level file prints `X` or an unexpanded size).
pub fn per_cpu_buffer_kb(fs: &Tracefs) -> Result<Vec<u64>, String> {
    fs.list("per_cpu")?
        .into_iter()
        .map(|cpu| {
            let rel = format!("per_cpu/{cpu}/buffer_size_kb");
            let text = fs.read_trimmed(&rel)?;
            text.parse::<u64>().map_err(|_| format!("{rel}: `{text}` is no size"))
        })
        .collect()
}

/// Sizes every CPU's ring buffer to `kb` KiB, unless it is that size already: rewriting the
/// size it has allocates nothing, but the check keeps the file untouched.
pub fn set_buffer_size(fs: &Tracefs, kb: u64) -> Result<(), String> {
    if BufferSize::parse(&fs.read("buffer_size_kb")?)? != BufferSize::Kb(kb) {
        fs.write("buffer_size_kb", &kb.to_string())?;
    }
    Ok(())
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("pageblock: {e}");
        }
    }
}

/// Writes `saved` back, newest first, with tracing off during the restore and back to its
/// old value last. Tries every file even if one fails; the error lists all that failed.
fn write_back(fs: &Tracefs, saved: &[Saved]) -> Result<(), String> {
    let mut errors = Vec::new();
    if saved.iter().any(|s| s.rel == "tracing_on") {
        if let Err(e) = fs.write("tracing_on", "0") {
            errors.push(e);
        }
    }
    for s in saved.iter().rev() {
        if let Err(e) = fs.write(&s.rel, &s.value) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("tracefs not fully restored: {}", errors.join("; ")))
    }
}

/// Restores what the dead recording of the journal at `path` changed in `fs` and removes
/// its journal; refuses while that recording runs. Returns the journal.
pub fn restore_journal(fs: &Tracefs, path: &Path) -> Result<JournalState, String> {
    let state = journal::load(path)?;
    if state.owner.is_running() {
        return Err(format!(
            "pageblock record pid {} is still recording; it restores tracefs when it ends",
            state.owner.pid
        ));
    }
    write_back(fs, &state.saved)?;
    journal::remove_copies(&state);
    Ok(state)
}

fn journal_paths(journal: &Journal) -> String {
    journal.paths().iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and ")
}

/// Refuses when someone else is tracing: a tracer other than `nop`, or tracing on with
/// events enabled. With `force`, says what it takes over.
fn check_idle(fs: &Tracefs, force: bool) -> Result<(), String> {
    let tracer = fs.read_trimmed("current_tracer")?;
    let on = fs.read_trimmed("tracing_on")? == "1";
    let set_event = fs.read("set_event")?;
    let enabled: Vec<&str> = set_event.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut busy = Vec::new();
    if tracer != "nop" {
        busy.push(format!("current_tracer is {tracer}"));
    }
    if on && !enabled.is_empty() {
        let more = if enabled.len() > 3 { ", ..." } else { "" };
        let first: Vec<&str> = enabled.iter().take(3).copied().collect();
        busy.push(format!("tracing is on, enabled events: {}{more}", first.join(", ")));
    }
    if busy.is_empty() {
        return Ok(());
    }
    let what = busy.join("; ");
    if !force {
        return Err(format!(
            "someone else is tracing ({what}); pass --force to take tracefs over (it is restored afterwards)"
        ));
    }
    eprintln!("pageblock record: --force: taking tracefs over ({what})");
    Ok(())
}
