//! A recording's hold on tracefs: every control file it changes is saved first, and the
//! [`Session`] writes them all back, in reverse order, when it is restored or dropped (on
//! success, on error and after a signal alike).
//!
//! What cannot be restored: the ring buffer's contents (resizing and clearing it discard
//! them) and a boot-time buffer that was never expanded (`7 (expanded: 1408)` comes back as
//! `1408`, the size the next tracer would get anyway).

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
}

/// One saved control file: where, and the value that writes its old state back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Saved {
    rel: String,
    value: String,
}

/// The changed tracefs, restored by [`Session::restore`] or on drop.
#[derive(Debug)]
pub struct Session {
    fs: Tracefs,
    /// What to write back, oldest first; emptied by the restore.
    saved: Vec<Saved>,
}

impl Session {
    /// Refuses if someone else is tracing (unless `force`), then saves and changes the
    /// state: tracing off, tracer `nop`, the default text format and clock, no pid lists
    /// or filters on the events, the buffer size, the events enabled, the buffer cleared.
    /// Tracing stays off until [`Session::tracing_on`]. On error everything changed so far
    /// is restored.
    pub fn start(fs: &Tracefs, cfg: &SessionConfig<'_>) -> Result<Session, String> {
        check_idle(fs, cfg.force)?;
        let mut s = Session { fs: fs.clone(), saved: Vec::new() };
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

    /// Writes every saved value back, newest first, with tracing off during the restore
    /// and back to its old value last. Tries every file even if one fails; the error lists
    /// all that failed. Restoring twice does nothing the second time.
    pub fn restore(&mut self) -> Result<(), String> {
        let saved = std::mem::take(&mut self.saved);
        let mut errors = Vec::new();
        if saved.iter().any(|s| s.rel == "tracing_on") {
            if let Err(e) = self.fs.write("tracing_on", "0") {
                errors.push(e);
            }
        }
        for s in saved.iter().rev() {
            if let Err(e) = self.fs.write(&s.rel, &s.value) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("tracefs not fully restored: {}", errors.join("; ")))
        }
    }

    /// Saves `rel`'s restore value unless it is saved already (the first value is the
    /// one found).
    fn save(&mut self, rel: &str, value: String) {
        if !self.saved.iter().any(|s| s.rel == rel) {
            self.saved.push(Saved { rel: rel.to_owned(), value });
        }
    }

    fn change(&mut self, rel: &str, value: &str) -> Result<(), String> {
        let now = self.fs.read_trimmed(rel)?;
        self.save(rel, now);
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
            self.save("trace_clock", now.to_owned());
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
                self.save(rel, pids);
                self.fs.write(rel, "")?;
            }
        }
        for event in events {
            let rel = format!("events/{event}/filter");
            let text = self.fs.read(&rel)?;
            if value::filter_is_set(&text) {
                self.save(&rel, value::filter_restore(&text));
                self.fs.write(&rel, "0")?;
            }
        }
        Ok(())
    }

    /// Saves the buffer size (per CPU when the CPUs differ) and sets `kb` on every CPU.
    fn set_buffer_size(&mut self, kb: u64) -> Result<(), String> {
        let now = BufferSize::parse(&self.fs.read("buffer_size_kb")?)?;
        match now.restore_kb() {
            Some(old) => self.save("buffer_size_kb", old.to_string()),
            None => {
                for cpu in self.fs.list("per_cpu")? {
                    let rel = format!("per_cpu/{cpu}/buffer_size_kb");
                    let old = self.fs.read_trimmed(&rel)?;
                    self.save(&rel, old);
                }
            }
        }
        if now != BufferSize::Kb(kb) {
            self.fs.write("buffer_size_kb", &kb.to_string())?;
        }
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("pageblock: {e}");
        }
    }
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
