//! ftrace text lines (`/sys/kernel/tracing/trace`, `trace_pipe`) and `perf script` lines.
//!
//! The ftrace line prefix is printed by `trace_print_context()` (and the flag characters by
//! `trace_print_lat_fmt()`) in `kernel/trace/trace_output.c`:
//!
//! ```text
//! "%16s-%-7d "   comm, pid            (comm right-aligned in 16, pid left-aligned in 7)
//! ["(%7d) "]     tgid                 (options/record-tgid only; "(-------) " if unknown)
//! "[%03d] "      cpu
//! "%c%c%c%c%c"   irq-info flags        (options/irq-info only; 4 chars before ~5.14)
//! " %5lu.%06lu: " timestamp           (secs.usecs)
//! "%s: "          event name, then the event's TP_printk output (the payload)
//! ```
//!
//! Real example: `         python3-4067    [001] .....   237.320720: mm_page_free: page=…`.
//! Lines that start with `#` (the header, `##### CPU 0 buffer started ####`) are comments.
//!
//! When a per-CPU ring buffer overflowed, `print_trace_line()` (`kernel/trace/trace.c`)
//! prints one line of its own before the next event of that CPU: `CPU:%d [LOST %lu EVENTS]`
//! (`trace_pipe`, where the ring buffer knows the count), or `CPU:%d [LOST EVENTS]` (the
//! `trace` file's iterator, which only knows that the writer overtook it; since 5.9). Both
//! are [`Line::Lost`]; the events themselves are gone, so any pairing of allocations with
//! frees across such a line is unreliable.
//!
//! Parsing pitfalls handled here: comms may contain `-`, `:`, `/`, `<`, `>` and spaces
//! (`memfd:sealed-91-2769`, `kworker/1:2-466`, `<idle>-0`, `<...>` for an unknown comm), so the
//! pid is found by splitting on the **last `-` before the ` [CPU] ` field**. Parsing is
//! width-tolerant and never panics; any line the kernel printed re-renders byte for byte.
//! Timestamps from counter clocks (no fraction) are rejected.
//!
//! `perf script` default output (`"%16s %5d [%03d] %5lu.%06lu: %*s: payload"` with the
//! `system:event` name right-aligned to the longest name; pid width 7 from perf ≈6.5) parses
//! into the same [`TraceLine`] with no flags; the system prefix (`kmem:`) is dropped. `--ns`
//! timestamps (9 fractional digits) are rejected.
//!
//! [`FtraceReader`] streams a file line by line without loading it whole.

use std::fmt;

use crate::compaction::CompactionEvent;
use crate::kmem::KmemEvent;
use crate::text;
use crate::vmscan::MmVmscanLruShrinkInactive;
use crate::ParseError;

mod parse;
mod reader;

pub use reader::{Dialect, FtraceReader};

/// A trace timestamp: seconds and microseconds, printed `%5lu.%06lu`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    /// Whole seconds.
    pub secs: u64,
    /// Microseconds, `0..1_000_000`.
    pub usecs: u32,
}

impl Timestamp {
    /// The timestamp in microseconds (saturating).
    pub fn as_micros(self) -> u64 {
        self.secs.saturating_mul(1_000_000).saturating_add(u64::from(self.usecs))
    }

    /// A timestamp from microseconds.
    pub fn from_micros(us: u64) -> Self {
        Timestamp { secs: us / 1_000_000, usecs: (us % 1_000_000) as u32 }
    }
}

impl fmt::Display for Timestamp {
    /// `%5lu.%06lu`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:5}.{:06}", self.secs, self.usecs)
    }
}

/// The tgid column printed with `options/record-tgid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tgid {
    /// `(%7d)`.
    Pid(u32),
    /// `(-------)`: the tgid was not recorded.
    Unknown,
}

/// One event line of ftrace text output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceLine {
    /// Task comm as printed (`<idle>`, `<...>` for unknown), without the alignment padding.
    pub comm: String,
    /// Task pid (the tid, for `perf script`).
    pub pid: u32,
    /// The tgid column, when `record-tgid` was on.
    pub tgid: Option<Tgid>,
    /// CPU number.
    pub cpu: u32,
    /// The irq-info characters (`.....`, `d..3.`; 4 on old kernels), absent when irq-info was
    /// off (and always for `perf script`).
    pub flags: Option<String>,
    /// Event time.
    pub timestamp: Timestamp,
    /// Event name without system (`mm_page_alloc`).
    pub event: String,
    /// The event's `TP_printk` text: everything after `event: `.
    pub payload: String,
}

/// One line of ftrace text: a comment, a lost-events marker or an event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Line {
    /// A line starting with `#`, kept whole (without its newline).
    Comment(String),
    /// `CPU:<cpu> [LOST <events> EVENTS]`, or `CPU:<cpu> [LOST EVENTS]` when the count is
    /// unknown (`events` is `None`).
    Lost {
        /// The CPU whose buffer overflowed.
        cpu: u32,
        /// How many events were dropped, when the kernel knew.
        events: Option<u64>,
    },
    /// An event line.
    Event(TraceLine),
}

/// [`TraceLine`] borrowing from the text it was parsed from (no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceLineRef<'a> {
    /// See [`TraceLine::comm`].
    pub comm: &'a str,
    /// See [`TraceLine::pid`].
    pub pid: u32,
    /// See [`TraceLine::tgid`].
    pub tgid: Option<Tgid>,
    /// See [`TraceLine::cpu`].
    pub cpu: u32,
    /// See [`TraceLine::flags`].
    pub flags: Option<&'a str>,
    /// See [`TraceLine::timestamp`].
    pub timestamp: Timestamp,
    /// See [`TraceLine::event`].
    pub event: &'a str,
    /// See [`TraceLine::payload`].
    pub payload: &'a str,
}

/// [`Line`] borrowing from the text it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineRef<'a> {
    /// A line starting with `#`.
    Comment(&'a str),
    /// See [`Line::Lost`].
    Lost {
        /// The CPU whose buffer overflowed.
        cpu: u32,
        /// How many events were dropped, when the kernel knew.
        events: Option<u64>,
    },
    /// An event line.
    Event(TraceLineRef<'a>),
}

impl<'a> TraceLineRef<'a> {
    /// Parses one ftrace event line (without its newline). Errors report line 1.
    pub fn parse(line: &'a str) -> Result<Self, ParseError> {
        parse::ftrace_line(line)
    }

    /// Parses one `perf script` line (without its newline). Errors report line 1.
    pub fn parse_perf(line: &'a str) -> Result<Self, ParseError> {
        parse::perf_line(line)
    }

    /// The owned copy.
    pub fn to_line(&self) -> TraceLine {
        TraceLine {
            comm: self.comm.to_owned(),
            pid: self.pid,
            tgid: self.tgid,
            cpu: self.cpu,
            flags: self.flags.map(str::to_owned),
            timestamp: self.timestamp,
            event: self.event.to_owned(),
            payload: self.payload.to_owned(),
        }
    }

    /// The payload as a kmem page event (strict, see [`KmemEvent::parse`]).
    pub fn kmem(&self) -> Result<KmemEvent, ParseError> {
        KmemEvent::parse(self.event, self.payload)
    }

    /// The payload as a compaction event (strict, see [`CompactionEvent::parse`]).
    pub fn compaction(&self) -> Result<CompactionEvent, ParseError> {
        CompactionEvent::parse(self.event, self.payload)
    }

    /// The payload as `mm_vmscan_lru_shrink_inactive` (strict, see
    /// [`MmVmscanLruShrinkInactive::parse`]).
    pub fn lru_shrink_inactive(&self) -> Result<MmVmscanLruShrinkInactive, ParseError> {
        MmVmscanLruShrinkInactive::parse(self.payload)
    }

    /// Whether the task had `TIF_NEED_RESCHED` set when the event fired (what the kernel's
    /// `need_resched()` tests), from the flag characters; `None` without them.
    pub fn need_resched(&self) -> Option<bool> {
        self.flags.and_then(need_resched_of)
    }
}

/// The need-resched column, the second flag character (`trace_print_lat_fmt()`): `B`
/// (need_resched, lazy and preempt), `N` (need_resched and preempt), `b` (need_resched and
/// lazy) and `n` carry `TIF_NEED_RESCHED`; `L`, `l` (lazy only), `p` and `.` do not. Kernels
/// before the migrate-disable column (4 characters) print the same column second.
fn need_resched_of(flags: &str) -> Option<bool> {
    match flags.as_bytes().get(1)? {
        b'B' | b'N' | b'b' | b'n' => Some(true),
        b'L' | b'l' | b'p' | b'.' => Some(false),
        _ => None,
    }
}

impl<'a> LineRef<'a> {
    /// Parses one ftrace text line: a `#` comment, a `CPU:n [LOST …]` marker or an event
    /// line.
    pub fn parse(line: &'a str) -> Result<Self, ParseError> {
        if line.starts_with('#') {
            Ok(LineRef::Comment(line))
        } else if let Some((cpu, events)) = parse::lost_line(line) {
            Ok(LineRef::Lost { cpu, events })
        } else {
            parse::ftrace_line(line).map(LineRef::Event)
        }
    }

    /// Parses one `perf script` line (`#` lines are comments too).
    pub fn parse_perf(line: &'a str) -> Result<Self, ParseError> {
        if line.starts_with('#') {
            Ok(LineRef::Comment(line))
        } else {
            parse::perf_line(line).map(LineRef::Event)
        }
    }

    /// The owned copy.
    pub fn to_line(&self) -> Line {
        match self {
            LineRef::Comment(c) => Line::Comment((*c).to_owned()),
            LineRef::Lost { cpu, events } => Line::Lost { cpu: *cpu, events: *events },
            LineRef::Event(e) => Line::Event(e.to_line()),
        }
    }
}

impl TraceLine {
    /// Parses one ftrace event line (without its newline). Errors report line 1.
    pub fn parse(line: &str) -> Result<Self, ParseError> {
        TraceLineRef::parse(line).map(|r| r.to_line())
    }

    /// Parses one `perf script` line. Errors report line 1.
    pub fn parse_perf(line: &str) -> Result<Self, ParseError> {
        TraceLineRef::parse_perf(line).map(|r| r.to_line())
    }

    /// The ftrace text line, without newline, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The `perf script` line (without newline): `system` is the event's system (`kmem`),
    /// `pid_width` 5 (perf < 6.5) or 7, `event_width` the length of the longest
    /// `system:event` name in the output. Flags and tgid are not part of this format.
    pub fn render_perf(&self, system: &str, pid_width: usize, event_width: usize) -> String {
        use fmt::Write as _;
        let mut s = String::with_capacity(80 + self.payload.len());
        let name_len = system.len() + 1 + self.event.len();
        // Writing to a String cannot fail.
        let _ = text::pad_left(&mut s, &self.comm, 16);
        let _ = write!(s, " {:>pid_width$} [{:03}] {}: ", self.pid, self.cpu, self.timestamp);
        let _ = text::spaces(&mut s, event_width.saturating_sub(name_len));
        let _ = write!(s, "{system}:{}: {}", self.event, self.payload);
        s
    }

    /// The payload as a kmem page event (strict, see [`KmemEvent::parse`]).
    pub fn kmem(&self) -> Result<KmemEvent, ParseError> {
        KmemEvent::parse(&self.event, &self.payload)
    }

    /// The payload as a compaction event (strict, see [`CompactionEvent::parse`]).
    pub fn compaction(&self) -> Result<CompactionEvent, ParseError> {
        CompactionEvent::parse(&self.event, &self.payload)
    }

    /// The payload as `mm_vmscan_lru_shrink_inactive` (strict, see
    /// [`MmVmscanLruShrinkInactive::parse`]).
    pub fn lru_shrink_inactive(&self) -> Result<MmVmscanLruShrinkInactive, ParseError> {
        MmVmscanLruShrinkInactive::parse(&self.payload)
    }

    /// An event line for a kmem event (synthetic traces).
    pub fn from_kmem(
        comm: &str,
        pid: u32,
        cpu: u32,
        flags: Option<&str>,
        timestamp: Timestamp,
        ev: &KmemEvent,
    ) -> Self {
        TraceLine {
            comm: comm.to_owned(),
            pid,
            tgid: None,
            cpu,
            flags: flags.map(str::to_owned),
            timestamp,
            event: ev.name().to_owned(),
            payload: ev.render_payload(),
        }
    }
}

impl Line {
    /// Parses one ftrace text line (without its newline). Errors report line 1.
    pub fn parse(line: &str) -> Result<Self, ParseError> {
        LineRef::parse(line).map(|r| r.to_line())
    }

    /// Parses one `perf script` line. Errors report line 1.
    pub fn parse_perf(line: &str) -> Result<Self, ParseError> {
        LineRef::parse_perf(line).map(|r| r.to_line())
    }

    /// The line as ftrace prints it, without newline.
    pub fn render(&self) -> String {
        self.to_string()
    }
}

/// Writes the ftrace form of a line from its parts (shared by owned and borrowed lines).
fn write_line(f: &mut impl fmt::Write, l: &TraceLineRef<'_>) -> fmt::Result {
    text::pad_left(f, l.comm, 16)?;
    write!(f, "-{:<7} ", l.pid)?;
    match l.tgid {
        Some(Tgid::Pid(t)) => write!(f, "({t:7}) ")?,
        Some(Tgid::Unknown) => f.write_str("(-------) ")?,
        None => {}
    }
    write!(f, "[{:03}] ", l.cpu)?;
    if let Some(flags) = l.flags {
        f.write_str(flags)?;
    }
    write!(f, " {}: {}: {}", l.timestamp, l.event, l.payload)
}

impl fmt::Display for TraceLineRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_line(f, self)
    }
}

impl fmt::Display for TraceLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = TraceLineRef {
            comm: &self.comm,
            pid: self.pid,
            tgid: self.tgid,
            cpu: self.cpu,
            flags: self.flags.as_deref(),
            timestamp: self.timestamp,
            event: &self.event,
            payload: &self.payload,
        };
        write_line(f, &r)
    }
}

/// Writes a lost-events marker as `print_trace_line()` does.
fn write_lost(f: &mut impl fmt::Write, cpu: u32, events: Option<u64>) -> fmt::Result {
    match events {
        Some(n) => write!(f, "CPU:{cpu} [LOST {n} EVENTS]"),
        None => write!(f, "CPU:{cpu} [LOST EVENTS]"),
    }
}

impl fmt::Display for LineRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineRef::Comment(c) => f.write_str(c),
            LineRef::Lost { cpu, events } => write_lost(f, *cpu, *events),
            LineRef::Event(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Comment(c) => f.write_str(c),
            Line::Lost { cpu, events } => write_lost(f, *cpu, *events),
            Line::Event(e) => e.fmt(f),
        }
    }
}
