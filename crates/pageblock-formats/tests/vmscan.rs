//! `mm_vmscan_lru_shrink_inactive`: real lines recorded by `pageblock lab real` on this
//! project's 6.18 machine (B5 run 3: kswapd's and a direct reclaimer's, anonymous and file
//! lists, dirty and writeback pages met, priorities 12 down to 1) parse, and render back byte
//! for byte.

use pageblock_formats::ftrace::TraceLine;

const EXCERPT: &str = include_str!("data/vmscan_excerpt.txt");

#[test]
fn real_lines_round_trip() {
    let mut kinds = [0; 2];
    for text in EXCERPT.lines() {
        let line = TraceLine::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(line.event, "mm_vmscan_lru_shrink_inactive");
        let ev = line.lru_shrink_inactive().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(ev.to_string(), line.payload, "payload renders back");
        assert_eq!(line.render(), text, "line renders back");
        kinds[usize::from(ev.file)] += 1;
    }
    assert!(kinds[0] > 0 && kinds[1] > 0, "both lists: {kinds:?}");
}

#[test]
fn the_first_real_line_reads_as_the_kernel_wrote_it() {
    let first = EXCERPT.lines().next().unwrap();
    let ev = TraceLine::parse(first).unwrap().lru_shrink_inactive().unwrap();
    assert_eq!(
        (ev.nr_scanned, ev.nr_reclaimed, ev.nr_activate_anon, ev.priority, ev.file),
        (9, 0, 9, 12, false)
    );
}
