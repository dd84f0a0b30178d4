//! [`TraceReader`]: a trace file as a stream of `(line number, TraceRecord)`.

use std::io::Read;
use std::path::Path;

use pageblock_formats::ftrace::Dialect;
use serde::Serialize;

use super::decode::{self, Decoded};
use super::input::is_truncated;
use super::lines::{Line, Lines, MAX_LINE};
use super::windows::Windows;
use super::{GfpTable, RecordKind, Task, TraceError, TraceInput, TraceRecord};

/// What the reader saw besides records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LineCounts {
    /// Lines read.
    pub lines: u64,
    /// `#` lines.
    pub comments: u64,
    /// Event lines of other tracepoints (skipped).
    pub other_events: u64,
    /// Malformed lines skipped (only when skipping was asked for).
    pub bad_lines: u64,
}

/// Reads ftrace text (`trace`, `trace_pipe`) or `perf script` text, decoding each kmem page
/// event, compaction event and lost-events marker into a [`TraceRecord`].
///
/// As an [`Iterator`] it yields `Ok((line_no, record))` with 1-based line numbers. Comments
/// and other tracepoints' events are counted ([`TraceReader::counts`]) and skipped. A
/// malformed line (not UTF-8 included) is an `Err` naming the file, the line and the reason,
/// after which reading goes on; with [`TraceReader::skip_bad_lines`] it is counted instead
/// and the first one kept ([`TraceReader::first_bad_line`]). An I/O or decompression error is
/// yielded once and ends the stream; a compressed file that ends inside compressed data (a
/// recording killed or out of space) too, unless skipping: then the lines before the cut are
/// the trace, and [`TraceReader::truncated`] says where it stopped. [`TraceReader::finish`]
/// says whether anything was decoded at all.
///
/// The dialect is the caller's choice ([`TraceReader::with_dialect`]) or detected on the
/// first line that is not a comment: ftrace if it parses as ftrace, else `perf script` if it
/// parses as that.
pub struct TraceReader<R> {
    lines: Lines<R>,
    file: String,
    dialect: Option<Dialect>,
    skip_bad: bool,
    gfp: GfpTable,
    counts: LineCounts,
    last_time_us: u64,
    first_bad: Option<TraceError>,
    cpus: Option<CpuLimit>,
    truncated: Option<TraceError>,
    records: u64,
    /// The task (pid) of the record returned last; 0 after a lost-events record.
    last_pid: u32,
    /// Which tasks are inside direct reclaim or compaction (their records' [`crate::Task`]).
    windows: Windows,
    done: bool,
}

/// The CPUs a machine has, for records naming others to be malformed lines.
struct CpuLimit {
    cpus: u32,
    machine: String,
}

impl TraceReader<TraceInput> {
    /// Opens `path` (plain, gzip or zstd, see [`TraceInput`]).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let file = path.display().to_string();
        let input = TraceInput::open(path).map_err(|e| TraceError::io(&file, e))?;
        Ok(TraceReader::new(input, file))
    }
}

impl<R: Read> TraceReader<R> {
    /// A reader of `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        TraceReader {
            lines: Lines::new(input),
            file: file.into(),
            dialect: None,
            skip_bad: false,
            gfp: GfpTable::new(),
            counts: LineCounts::default(),
            last_time_us: 0,
            first_bad: None,
            cpus: None,
            truncated: None,
            records: 0,
            last_pid: 0,
            windows: Windows::default(),
            done: false,
        }
    }

    /// Reads `dialect` instead of detecting it.
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = Some(dialect);
        self
    }

    /// Makes a line of a CPU numbered `cpus` or above a malformed line: `CPU n is beyond the
    /// {cpus} CPUs of {machine}`.
    pub fn with_cpus(mut self, cpus: u32, machine: impl Into<String>) -> Self {
        self.cpus = Some(CpuLimit { cpus, machine: machine.into() });
        self
    }

    /// Counts malformed lines and goes on, instead of yielding them as errors.
    pub fn skip_bad_lines(mut self, skip: bool) -> Self {
        self.skip_bad = skip;
        self
    }

    /// The dialect read (`None` until the first non-comment line when detecting).
    pub fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }

    /// The gfp masks of the allocation records so far.
    pub fn gfp_table(&self) -> &GfpTable {
        &self.gfp
    }

    /// The task (pid) whose line gave the record returned last: what follows a task from one
    /// record to the next, wherever the scheduler ran it. 0 for a lost-events record (no
    /// task's) and before the first record.
    pub fn last_pid(&self) -> u32 {
        self.last_pid
    }

    /// Lines read, comments, other events, bad lines skipped.
    pub fn counts(&self) -> LineCounts {
        self.counts
    }

    /// The first malformed line skipped, when skipping.
    pub fn first_bad_line(&self) -> Option<&TraceError> {
        self.first_bad.as_ref()
    }

    /// Where a truncated compressed file stopped, when skipping (the lines before were read).
    pub fn truncated(&self) -> Option<&TraceError> {
        self.truncated.as_ref()
    }

    /// After the last item: an error if the trace held no event at all (an empty file, or one
    /// whose every line was malformed or of no interest), which no statistic or replay can use.
    pub fn finish(&self) -> Result<(), TraceError> {
        if self.records > 0 {
            return Ok(());
        }
        let c = self.counts;
        let why = match (c.lines, self.first_bad.as_ref()) {
            (0, _) => "no events decoded: no trace lines".to_owned(),
            (n, Some(first)) if c.bad_lines == n => {
                format!("no events decoded: every one of the {n} lines is malformed (the first: {first})")
            }
            (n, _) => format!(
                "no events decoded: {n} lines ({} comments, {} events of other tracepoints, {} malformed)",
                c.comments, c.other_events, c.bad_lines
            ),
        };
        Err(TraceError::whole_file(&self.file, why))
    }

    /// The file name errors use.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The input.
    pub fn get_ref(&self) -> &R {
        self.lines.get_ref()
    }

    /// The next record, or the next error.
    fn next_item(&mut self) -> Option<Result<(u64, TraceRecord), TraceError>> {
        while !self.done {
            let (dialect, gfp) = (&mut self.dialect, &mut self.gfp);
            let decoded = match self.lines.next_line(|line| decode_line(line, dialect, gfp)) {
                Ok(Some(d)) => d,
                Ok(None) => break,
                Err(e) if is_truncated(&e) => {
                    self.done = true;
                    let lines = self.counts.lines;
                    if self.skip_bad {
                        let e = TraceError::truncated(&self.file, e, lines, "read the lines before it");
                        self.truncated = Some(e);
                        return None;
                    }
                    let more = format!("--skip-bad reads the {lines} lines before it");
                    return Some(Err(TraceError::truncated(&self.file, e, lines, &more)));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::io(&self.file, e)));
                }
            };
            self.counts.lines += 1;
            let no = self.counts.lines;
            match decoded.and_then(|d| self.check_cpu(d)) {
                Ok(Decoded::Record(mut r, pid)) => {
                    self.windows.classify(&mut r, pid);
                    self.records += 1;
                    self.last_time_us = r.time_us;
                    self.last_pid = pid;
                    return Some(Ok((no, r)));
                }
                Ok(Decoded::Lost { cpu, events }) => {
                    let Ok(cpu) = u16::try_from(cpu) else {
                        let e = TraceError::bad_line(
                            &self.file,
                            no,
                            format!("CPU {cpu} is beyond the 65,536 a record holds"),
                        );
                        if !self.skip_bad {
                            return Some(Err(e));
                        }
                        self.counts.bad_lines += 1;
                        self.first_bad.get_or_insert(e);
                        continue;
                    };
                    self.records += 1;
                    self.last_pid = 0;
                    let kind = RecordKind::Lost { events };
                    let r = TraceRecord { time_us: self.last_time_us, pfn: 0, cpu, task: Task::Other, kind };
                    return Some(Ok((no, r)));
                }
                Ok(Decoded::Comment) => self.counts.comments += 1,
                Ok(Decoded::Other) => self.counts.other_events += 1,
                Err(reason) => {
                    let e = TraceError::bad_line(&self.file, no, reason);
                    if !self.skip_bad {
                        return Some(Err(e));
                    }
                    self.counts.bad_lines += 1;
                    self.first_bad.get_or_insert(e);
                }
            }
        }
        self.done = true;
        None
    }
}

impl<R> TraceReader<R> {
    /// `d`, or why its CPU is not one of the machine's.
    fn check_cpu(&self, d: Decoded) -> Result<Decoded, String> {
        let cpu = match d {
            Decoded::Record(r, _) => u32::from(r.cpu),
            Decoded::Lost { cpu, .. } => cpu,
            Decoded::Comment | Decoded::Other => return Ok(d),
        };
        match &self.cpus {
            Some(l) if cpu >= l.cpus => {
                Err(format!("CPU {cpu} is beyond the {} CPUs of {}", l.cpus, l.machine))
            }
            _ => Ok(d),
        }
    }
}

/// Decodes one line, settling the dialect on the first line that is not a comment.
#[inline]
fn decode_line(line: Line<'_>, dialect: &mut Option<Dialect>, gfp: &mut GfpTable) -> Result<Decoded, String> {
    if line.overlong {
        return Err(format!("line is longer than {MAX_LINE} bytes"));
    }
    if let Some(d) = *dialect {
        return decode::decode(line.bytes, line.ascii, d, gfp);
    }
    let first_try = decode::decode(line.bytes, line.ascii, Dialect::Ftrace, gfp);
    let (found, result) = match first_try {
        Ok(Decoded::Comment) => return Ok(Decoded::Comment),
        Ok(d) => (Dialect::Ftrace, Ok(d)),
        Err(e) => match decode::decode(line.bytes, line.ascii, Dialect::PerfScript, gfp) {
            Ok(Decoded::Comment) => return Ok(Decoded::Comment),
            Ok(d) => (Dialect::PerfScript, Ok(d)),
            Err(_) if trace_cmd_header(line.bytes) => return Err(TRACE_CMD.to_owned()),
            Err(_) => return Err(e),
        },
    };
    *dialect = Some(found);
    result
}

/// What a `trace-cmd report` header line is told.
const TRACE_CMD: &str = "this looks like `trace-cmd report` output (a header line), which is not read here: \
     give the kernel's own text (`pageblock record`, /sys/kernel/tracing/trace, `trace-cmd show`) or \
     `perf script` output";

/// The header lines `trace-cmd report` prints before the events: `version = 6`, `cpus=2`,
/// `CPU 1 is empty`.
fn trace_cmd_header(line: &[u8]) -> bool {
    let digits = |b: &[u8]| !b.is_empty() && b.iter().all(u8::is_ascii_digit);
    let cpu_empty = line.strip_prefix(b"CPU ").and_then(|r| r.strip_suffix(b" is empty"));
    [line.strip_prefix(b"version = "), line.strip_prefix(b"cpus="), cpu_empty]
        .into_iter()
        .flatten()
        .any(digits)
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<(u64, TraceRecord), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item()
    }
}
