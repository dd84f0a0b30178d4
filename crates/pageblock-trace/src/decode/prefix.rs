//! The fast path's reading of a line's context: `comm-pid [cpu] flags secs.usecs: event: `
//! (ftrace) or `comm pid [cpu] secs.usecs: system:event: ` (`perf script`).
//!
//! It accepts only the common shape (the first `[` opens the CPU field, no tgid column) and
//! applies exactly the checks of `pageblock_formats::ftrace`'s strict parsers to it, so that
//! whenever it returns a prefix the strict parser would have read the same one. Anything
//! else returns `None` and the caller falls back to the strict parser. Each number is parsed
//! in the same pass that finds its end.

use pageblock_formats::ftrace::Dialect;
use pageblock_formats::kmem::KMEM_EVENT_NAMES;

use super::layout;
use super::swar::{padded_pid, same_name, usecs_at};
use crate::Task;

/// What the decoder needs from a line's context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Prefix<'a> {
    /// CPU number.
    pub cpu: u32,
    /// The kind of task (from the comm).
    pub task: Task,
    /// The task's pid (the tid, for `perf script`).
    pub pid: u32,
    /// Timestamp in microseconds (saturating, as `Timestamp::as_micros`).
    pub time_us: u64,
    /// Event name, without a `perf script` system prefix.
    pub event: &'a [u8],
    /// Which kmem event it is (an index into `KMEM_EVENT_NAMES`), if it is one.
    pub kmem: Option<usize>,
    /// Everything after `event: `.
    pub payload: &'a [u8],
}

/// Decimal digits from `b[i..]` up to the first non-digit: `(value, index of that byte)`.
/// `None` if there is no digit, or more than 19 (which could overflow; the strict parser
/// then decides).
#[inline]
pub(super) fn digits_at(b: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let start = i;
    let mut v: u64 = 0;
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i > start && i - start <= 19).then_some((v, i))
}

/// The prefix of `line` in `dialect`, or `None` if the fast path cannot tell.
#[inline]
pub(super) fn prefix(line: &[u8], dialect: Dialect) -> Option<Prefix<'_>> {
    if dialect == Dialect::Ftrace {
        if let Some((cpu, time_us)) = layout::kernel_layout(line) {
            let rest = &line[layout::EVENT_AT..];
            if let Some((kmem, n)) = kmem_name_at(rest) {
                return Some(Prefix {
                    cpu,
                    task: Task::of_comm(&line[..layout::COMM_LEN]),
                    pid: pid_of(&line[..layout::TASK_LEN]),
                    time_us,
                    event: &rest[..n],
                    kmem: Some(kmem),
                    payload: &rest[n + 2..],
                });
            }
        }
    }
    general(line, dialect)
}

/// [`prefix`] for any shape the fast path reads: fields found by search.
fn general(line: &[u8], dialect: Dialect) -> Option<Prefix<'_>> {
    let open = memchr::memchr(b'[', line)?;
    if open == 0 || line[open - 1] != b' ' || !task(&line[..open - 1], dialect) {
        return None;
    }
    let task = Task::of_comm(comm(&line[..open - 1]));
    let pid = pid_of(&line[..open - 1]);
    let (cpu, close) = digits_at(line, open + 1)?;
    if line.get(close) != Some(&b']') || line.get(close + 1) != Some(&b' ') {
        return None;
    }
    let cpu = u32::try_from(cpu).ok()?;
    let mut i = close + 2;
    if dialect == Dialect::Ftrace && *line.get(i)? != b' ' {
        i += line[i..].iter().position(|&c| c == b' ')?;
    }
    let (time_us, mut i) = timestamp(line, i)?;
    match dialect {
        Dialect::Ftrace if line.get(i) == Some(&b' ') => i += 1,
        Dialect::Ftrace => return None,
        Dialect::PerfScript => i = skip_spaces(line, i),
    }
    let rest = &line[i..];
    let named = match dialect {
        Dialect::Ftrace => kmem_name_at(rest),
        Dialect::PerfScript => rest.strip_prefix(b"kmem:").and_then(kmem_name_at).map(|(k, n)| (k, n + 5)),
    };
    if let Some((kmem, end)) = named {
        let event = &rest[end - KMEM_NAMES[kmem].len()..end];
        return Some(Prefix { cpu, task, pid, time_us, event, kmem: Some(kmem), payload: &rest[end + 2..] });
    }
    let (name, system_colon, after) = event_name(line, i)?;
    let event = match (dialect, system_colon) {
        (Dialect::PerfScript, Some(colon)) => &name[colon + 1..],
        _ => name,
    };
    Some(Prefix { cpu, task, pid, time_us, event, kmem: kmem_index(event), payload: &line[after..] })
}

/// `KMEM_EVENT_NAMES` as bytes.
pub(super) const KMEM_NAMES: [&[u8]; 6] = {
    let n = KMEM_EVENT_NAMES;
    [n[0].as_bytes(), n[1].as_bytes(), n[2].as_bytes(), n[3].as_bytes(), n[4].as_bytes(), n[5].as_bytes()]
};

/// The kmem event named by `name` (their lengths differ, so the length picks the candidate).
pub(super) fn kmem_index(name: &[u8]) -> Option<usize> {
    let i = match name.len() {
        13 => 0,
        12 => 1,
        20 => 2,
        25 => 3,
        18 => 4,
        21 => 5,
        _ => return None,
    };
    (name == KMEM_NAMES[i]).then_some(i)
}

/// A kmem event name and `: ` at the start of `rest`, told apart by two bytes instead of
/// scanning for the `: `: `(index, length of the name)`.
#[inline]
fn kmem_name_at(rest: &[u8]) -> Option<(usize, usize)> {
    let kmem = match (rest.get(8)?, rest.get(12)?, rest.get(13)?) {
        (b'a', _, b':') => 0,
        (b'f', b':', _) => 1,
        (b'f', b'_', _) => 2,
        (b'a', _, b'_') if rest.get(14) == Some(&b'z') => 3,
        (b'p', ..) => 4,
        (b'a', _, b'_') => 5,
        _ => return None,
    };
    let name = KMEM_NAMES[kmem];
    let n = name.len();
    (same_name(rest.get(..n)?, name) && rest.get(n..n + 2)? == b": ").then_some((kmem, n))
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The task field before the CPU field: `comm-pid` (ftrace; a `(tgid)` column fails the
/// digits check) or `comm pid` (perf), trailing spaces allowed, pid a `u32`.
#[inline]
fn task(head: &[u8], dialect: Dialect) -> bool {
    if dialect == Dialect::Ftrace && padded_pid(head) {
        return true;
    }
    task_scan(head, dialect)
}

/// The comm of a task field [`task`] accepted: what comes before the pid and its `-` (ftrace)
/// or space (perf).
fn comm(head: &[u8]) -> &[u8] {
    let mut end = head.len();
    while end > 0 && head[end - 1] == b' ' {
        end -= 1;
    }
    while end > 0 && head[end - 1].is_ascii_digit() {
        end -= 1;
    }
    &head[..end.saturating_sub(1)]
}

/// Where a task field's pid lies: its last run of digits, before any padding spaces.
#[inline]
fn pid_span(head: &[u8]) -> (usize, usize) {
    let mut end = head.len();
    while end > 0 && head[end - 1] == b' ' {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && head[start - 1].is_ascii_digit() {
        start -= 1;
    }
    (start, end)
}

/// The pid of a task field [`task`] accepted (at most 10 digits, within `u32` once [`task`]
/// has looked).
#[inline]
fn pid_of(head: &[u8]) -> u32 {
    let (start, end) = pid_span(head);
    head[start..end].iter().fold(0u32, |v, &c| v.wrapping_mul(10).wrapping_add(u32::from(c - b'0')))
}

/// [`task`] byte by byte.
pub(super) fn task_scan(head: &[u8], dialect: Dialect) -> bool {
    let (start, end) = pid_span(head);
    let pid_ok = digits_at(&head[..end], start).is_some_and(|(pid, _)| u32::try_from(pid).is_ok());
    pid_ok
        && match dialect {
            Dialect::Ftrace => start > 0 && head[start - 1] == b'-',
            Dialect::PerfScript => start == 0 || head[start - 1] == b' ',
        }
}

/// `  secs.usecs:` from `i` on (leading spaces skipped): microseconds, index after `:`.
#[inline]
fn timestamp(line: &[u8], i: usize) -> Option<(u64, usize)> {
    let (secs, dot) = digits_at(line, skip_spaces(line, i))?;
    if line.get(dot) != Some(&b'.') {
        return None;
    }
    let usecs = usecs_at(line, dot + 1)?;
    Some((secs.saturating_mul(1_000_000).saturating_add(usecs), dot + 8))
}

/// `name: ` from `i` on: the name (up to the first `: `, not empty, no space), the index of
/// its first `:` if any, and the index of the payload.
#[inline]
fn event_name(line: &[u8], i: usize) -> Option<(&[u8], Option<usize>, usize)> {
    let mut first_colon = None;
    let mut j = i;
    loop {
        match *line.get(j)? {
            b' ' => return None,
            b':' if line.get(j + 1) == Some(&b' ') => {
                return (j > i).then(|| (&line[i..j], first_colon, j + 2));
            }
            b':' => {
                first_colon.get_or_insert(j - i);
            }
            _ => {}
        }
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ftrace_and_perf_prefixes() {
        let l = b"      record2.sh-11292   [000] .....   495.119171: mm_page_alloc: page=1 x";
        let p = prefix(l, Dialect::Ftrace).unwrap();
        assert_eq!(
            (p.cpu, p.time_us, p.event, p.payload),
            (0, 495_119_171, &b"mm_page_alloc"[..], &b"page=1 x"[..])
        );
        let l = b"         python3  4067 [001]   237.320720:             kmem:mm_page_alloc: page=0x1";
        let p = prefix(l, Dialect::PerfScript).unwrap();
        assert_eq!(
            (p.cpu, p.time_us, p.event, p.payload),
            (1, 237_320_720, &b"mm_page_alloc"[..], &b"page=0x1"[..])
        );
        assert_eq!(prefix(l, Dialect::Ftrace), None);
        let no_flags = b"  bash-1 [003]   1.000002: e: p";
        assert_eq!(prefix(no_flags, Dialect::Ftrace).map(|p| (p.cpu, p.time_us)), Some((3, 1_000_002)));
        assert_eq!(digits_at(b"x12y", 1), Some((12, 3)));
        assert_eq!(digits_at(b"9999999999999999999", 0), Some((9_999_999_999_999_999_999, 19)));
        assert_eq!(digits_at(b"10000000000000000000", 0), None, "20 digits: strict decides");
        assert_eq!(digits_at(b"x", 0), None);
    }

    #[test]
    fn unusual_shapes_are_left_to_the_strict_parser() {
        for l in [
            &b"  bash-2783    (   2783) [000] ..... 1.000000: e: p"[..],
            b"  x-1 [2] y-3 [000] ..... 1.000000: e: p",
            b"  bash-1 [000] ..... 1.00000: e: p",
            b"  bash-1 [000] ..... 1.0000000: e: p",
            b"  bash-1 [000] ..... 1.000000:e: p",
            b"  bash-1 [000] ..... 1.000000: e:p",
            b"  bash-1 [000] ..... 1.000000: : p",
            b"  bash-1 [000] ..... 1.000000: a b: p",
            b"  bash-99999999999 [000] ..... 1.000000: e: p",
            b"  bash [000] ..... 1.000000: e: p",
            b"[000] ..... 1.000000: e: p",
        ] {
            assert_eq!(prefix(l, Dialect::Ftrace), None, "{}", String::from_utf8_lossy(l));
        }
    }
}
