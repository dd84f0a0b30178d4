//! Counting a trace while it streams: event lines per event name, and the ring buffer's
//! `CPU:N [LOST n EVENTS]` lines.

use std::collections::BTreeMap;

use pageblock_formats::ftrace::LineRef;

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
        let parsed = std::str::from_utf8(line).ok().and_then(|l| LineRef::parse(l).ok());
        match parsed {
            Some(LineRef::Lost { events, .. }) => {
                self.lost_lines += 1;
                match events {
                    Some(n) => self.lost_events += n,
                    None => self.lost_uncounted += 1,
                }
            }
            Some(LineRef::Event(e)) => match self.events.get_mut(e.event) {
                Some(n) => *n += 1,
                None => {
                    self.events.insert(e.event.to_owned(), 1);
                }
            },
            Some(LineRef::Comment(_)) | None => self.other_lines += 1,
        }
    }

    /// Event lines in all.
    pub fn total_events(&self) -> u64 {
        self.events.values().sum()
    }
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
}
