//! Counting a trace while it streams: event lines per event name, and the ring buffer's
//! `CPU:N [LOST n EVENTS]` lines.

use std::collections::BTreeMap;

use pageblock_formats::ftrace::TraceLineRef;

/// What the lines of a trace held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Event lines per event name (`mm_page_alloc`).
    pub events: BTreeMap<String, u64>,
    /// `[LOST ...]` lines: places where the reader fell behind and events were overwritten.
    pub lost_lines: u64,
    /// Events those lines say were lost (`CPU:%d [LOST %lu EVENTS]`).
    pub lost_events: u64,
    /// `CPU:%d [LOST EVENTS]` lines, which do not say how many.
    pub lost_uncounted: u64,
    /// Lines that are neither events nor lost markers (empty, `#` comments, unparsable).
    pub other_lines: u64,
}

impl EventCounts {
    /// Counts one line (without its newline).
    pub fn count_line(&mut self, line: &[u8]) {
        if let Some(lost) = lost_marker(line) {
            self.lost_lines += 1;
            match lost {
                Some(n) => self.lost_events += n,
                None => self.lost_uncounted += 1,
            }
            return;
        }
        let event = std::str::from_utf8(line).ok().and_then(|l| TraceLineRef::parse(l).ok()).map(|l| l.event);
        match event {
            Some(name) => match self.events.get_mut(name) {
                Some(n) => *n += 1,
                None => {
                    self.events.insert(name.to_owned(), 1);
                }
            },
            None => self.other_lines += 1,
        }
    }

    /// Event lines in all.
    pub fn total_events(&self) -> u64 {
        self.events.values().sum()
    }
}

/// `CPU:%d [LOST %lu EVENTS]` → `Some(Some(n))`; `CPU:%d [LOST EVENTS]` → `Some(None)`
/// (`print_trace_line` in `kernel/trace/trace.c`); anything else → `None`.
fn lost_marker(line: &[u8]) -> Option<Option<u64>> {
    let line = std::str::from_utf8(line).ok()?;
    let rest = line.strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let inner = rest.trim_end().strip_prefix("[LOST ")?.strip_suffix("EVENTS]")?;
    if inner.is_empty() {
        return Some(None);
    }
    inner.trim_end().parse().ok().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOC: &str = "         python3-4067    [001] .....   237.320720: mm_page_alloc: page=00000000078605da \
                         pfn=0x147c69 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP";
    const FREE: &str =
        " memfd:sealed-91-2769    [001] .....   237.523808: mm_page_free: page=0000000045fd1a92 \
                        pfn=0x14d0f6 order=0";
    const COMPACT: &str =
        "     kcompactd0-35      [000] .....   500.000001: mm_compaction_kcompactd_sleep: nid=0";

    #[test]
    fn counts_events_by_name_and_lost_markers() {
        let mut c = EventCounts::default();
        for line in
            [ALLOC, FREE, ALLOC, COMPACT, "CPU:1 [LOST 1234 EVENTS]", "CPU:0 [LOST EVENTS]", "", "junk"]
        {
            c.count_line(line.as_bytes());
        }
        let events: Vec<(&str, u64)> = c.events.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(events, [("mm_compaction_kcompactd_sleep", 1), ("mm_page_alloc", 2), ("mm_page_free", 1)]);
        assert_eq!((c.lost_lines, c.lost_events, c.lost_uncounted, c.other_lines), (2, 1234, 1, 2));
        assert_eq!(c.total_events(), 4);
    }

    #[test]
    fn only_the_exact_lost_forms_are_lost_markers() {
        assert_eq!(lost_marker(b"CPU:12 [LOST 7 EVENTS]"), Some(Some(7)));
        assert_eq!(lost_marker(b"CPU:0 [LOST EVENTS]"), Some(None));
        for not in
            ["CPU: [LOST 7 EVENTS]", "CPU:x [LOST 7 EVENTS]", "CPU:1 [LOST x EVENTS]", "CPU:1 LOST 7", ALLOC]
        {
            assert_eq!(lost_marker(not.as_bytes()), None, "{not}");
        }
    }
}
