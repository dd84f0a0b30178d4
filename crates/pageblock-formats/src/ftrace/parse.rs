//! Byte-level parsers of one ftrace or `perf script` line (no regex, no allocation).

use super::{Tgid, Timestamp, TraceLineRef};
use crate::text::{digits_u64, find_byte, printf_u64, quote};
use crate::ParseError;

fn err(reason: impl Into<String>) -> ParseError {
    ParseError::new(1, reason)
}

/// Where the ` [CPU] ` field sits: the ` ` before `[`, and the CPU number. Also checks the
/// `] ` that must follow (perf: `]` then a space too).
fn cpu_field(b: &[u8], space: usize) -> Option<(u32, usize)> {
    let open = space + 1;
    let digits_start = open + 1;
    let mut i = digits_start;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == digits_start || b.get(i) != Some(&b']') || b.get(i + 1) != Some(&b' ') {
        return None;
    }
    let cpu = u32::try_from(digits_u64(&b[digits_start..i], 10)?).ok()?;
    Some((cpu, i + 2))
}

/// Splits trailing ASCII digits off `s`: `(rest, digits)`.
fn trailing_digits(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    let mut cut = b.len();
    while cut > 0 && b[cut - 1].is_ascii_digit() {
        cut -= 1;
    }
    s.split_at(cut)
}

/// The `comm-pid [(tgid)] ` part before the CPU field at `space`, ftrace style.
fn ftrace_task(line: &str, space: usize) -> Option<(&str, u32, Option<Tgid>)> {
    let mut head = line[..space].trim_end_matches(' ');
    let mut tgid = None;
    if let Some(inner_end) = head.strip_suffix(')') {
        let open = inner_end.rfind('(')?;
        let inner = inner_end[open + 1..].trim_start_matches(' ');
        tgid = Some(if inner == "-------" {
            Tgid::Unknown
        } else {
            Tgid::Pid(u32::try_from(digits_u64(inner.as_bytes(), 10)?).ok()?)
        });
        head = inner_end[..open].trim_end_matches(' ');
    }
    let (before, pid) = trailing_digits(head);
    let pid = u32::try_from(digits_u64(pid.as_bytes(), 10)?).ok()?;
    let comm = before.strip_suffix('-')?;
    Some((comm.trim_start_matches(' '), pid, tgid))
}

/// The `comm pid` part before the CPU field at `space`, perf style.
fn perf_task(line: &str, space: usize) -> Option<(&str, u32)> {
    let head = line[..space].trim_end_matches(' ');
    let (before, pid) = trailing_digits(head);
    let pid = u32::try_from(digits_u64(pid.as_bytes(), 10)?).ok()?;
    if !before.ends_with(' ') && !before.is_empty() {
        return None;
    }
    Some((before.trim_matches(' '), pid))
}

/// `secs.usecs:` at the start of `s` (leading spaces allowed); returns the rest after `:`.
fn timestamp(s: &str) -> Result<(Timestamp, &str), ParseError> {
    let s = s.trim_start_matches(' ');
    let colon = find_byte(s, 0, b':').ok_or_else(|| err("no `:` after the timestamp"))?;
    let ts = &s[..colon];
    let dot = find_byte(ts, 0, b'.');
    let (secs, frac) = dot.map(|d| (&ts[..d], &ts[d + 1..])).ok_or_else(|| {
        err(format!("timestamp {} has no `.` (counter clocks are not supported)", quote(ts)))
    })?;
    let secs = digits_u64(secs.as_bytes(), 10)
        .ok_or_else(|| err(format!("bad timestamp seconds in {}", quote(ts))))?;
    if frac.len() != 6 {
        return Err(err(format!("timestamp {} must have 6 fractional digits", quote(ts))));
    }
    let usecs = digits_u64(frac.as_bytes(), 10)
        .ok_or_else(|| err(format!("bad timestamp fraction in {}", quote(ts))))?;
    Ok((Timestamp { secs, usecs: usecs as u32 }, &s[colon + 1..]))
}

/// `name: payload` (after the timestamp's `: `).
fn event_and_payload(s: &str) -> Result<(&str, &str), ParseError> {
    let mut from = 0;
    let colon = loop {
        let c = find_byte(s, from, b':')
            .ok_or_else(|| err(format!("no `event: ` after the timestamp in {}", quote(s))))?;
        if s.as_bytes().get(c + 1) == Some(&b' ') {
            break c;
        }
        from = c + 1;
    };
    let name = &s[..colon];
    if name.is_empty() || name.bytes().any(|c| c == b' ') {
        return Err(err(format!("bad event name {}", quote(name))));
    }
    Ok((name, &s[colon + 2..]))
}

/// The next ` [digits] ` at or after byte `from` whose left side is a valid task field:
/// `(task, cpu, index after "] ", where to resume the search)`.
fn next_context<'a, T>(
    line: &'a str,
    mut from: usize,
    task: impl Fn(&'a str, usize) -> Option<T>,
) -> Option<(T, u32, usize, usize)> {
    let b = line.as_bytes();
    while let Some(open) = find_byte(line, from, b'[') {
        from = open + 1;
        if open == 0 || b[open - 1] != b' ' {
            continue;
        }
        let space = open - 1;
        if let Some((cpu, after)) = cpu_field(b, space) {
            if let Some(t) = task(line, space) {
                return Some((t, cpu, after, from));
            }
        }
    }
    None
}

/// Tries every plausible context field, left to right, and returns the first complete parse
/// (a comm may itself contain `x-1 [2] `); otherwise the first candidate's error.
fn parse_with<'a, T: Copy>(
    line: &'a str,
    what: &str,
    task: impl Fn(&'a str, usize) -> Option<T>,
    rest: impl Fn(T, u32, &'a str) -> Result<TraceLineRef<'a>, ParseError>,
) -> Result<TraceLineRef<'a>, ParseError> {
    if line.is_empty() {
        return Err(err("empty line"));
    }
    let mut first_err = None;
    let mut from = 0;
    while let Some((t, cpu, after, next)) = next_context(line, from, &task) {
        match rest(t, cpu, &line[after..]) {
            Ok(l) => return Ok(l),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
        from = next;
    }
    Err(first_err.unwrap_or_else(|| err(format!("no `{what}` context in {}", quote(line)))))
}

/// One ftrace event line.
pub(super) fn ftrace_line(line: &str) -> Result<TraceLineRef<'_>, ParseError> {
    parse_with(line, "COMM-PID [CPU]", ftrace_task, |(comm, pid, tgid), cpu, mut rest| {
        let mut flags = None;
        if !rest.starts_with(' ') {
            let end = find_byte(rest, 0, b' ').ok_or_else(|| err("line ends after the irq-info flags"))?;
            flags = Some(&rest[..end]);
            rest = &rest[end..];
        }
        let (timestamp, rest) = timestamp(rest)?;
        let rest = rest.strip_prefix(' ').ok_or_else(|| err("no space after the timestamp's `:`"))?;
        let (event, payload) = event_and_payload(rest)?;
        Ok(TraceLineRef { comm, pid, tgid, cpu, flags, timestamp, event, payload })
    })
}

/// One `perf script` line (default fields).
pub(super) fn perf_line(line: &str) -> Result<TraceLineRef<'_>, ParseError> {
    parse_with(line, "COMM PID [CPU]", perf_task, |(comm, pid), cpu, rest| {
        let (timestamp, rest) = timestamp(rest)?;
        let (name, payload) = event_and_payload(rest.trim_start_matches(' '))?;
        let event = name.split_once(':').map_or(name, |(_, ev)| ev);
        Ok(TraceLineRef { comm, pid, tgid: None, cpu, flags: None, timestamp, event, payload })
    })
}

/// `CPU:<cpu> [LOST <n> EVENTS]` or `CPU:<cpu> [LOST EVENTS]`, exactly as printed (`%d`,
/// `%lu`: no sign, no leading zeros): `(cpu, events)`, or `None` if `line` is not one.
pub(super) fn lost_line(line: &str) -> Option<(u32, Option<u64>)> {
    let rest = line.strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(" [LOST ")?;
    let cpu = u32::try_from(printf_u64(cpu.as_bytes())?).ok()?;
    if rest == "EVENTS]" {
        return Some((cpu, None));
    }
    let events = printf_u64(rest.strip_suffix(" EVENTS]")?.as_bytes())?;
    Some((cpu, Some(events)))
}
