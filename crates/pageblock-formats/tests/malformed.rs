//! Malformed input: every parser returns a `ParseError` naming the right line, and none
//! panics on truncated, mutated or random text.

mod common;

use common::data;
use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::compaction::{CompactionEvent, CompactionEventKind};
use pageblock_formats::extfrag::{ExtfragIndex, UnusableIndex};
use pageblock_formats::ftrace::Line;
use pageblock_formats::gfp::Gfp;
use pageblock_formats::kmem::KmemEvent;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::ZoneInfo;
use pageblock_formats::ParseError;
use proptest::prelude::*;

/// Replaces line `no` (1-based) of `text` with `with` (`None` deletes it).
fn edit_line(text: &str, no: usize, with: Option<&str>) -> String {
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        if i + 1 == no {
            if let Some(w) = with {
                out.push_str(w);
                out.push('\n');
            }
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// The first `n` lines of `text`.
fn first_lines(text: &str, n: usize) -> String {
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

fn line_of<T: std::fmt::Debug>(r: Result<T, ParseError>) -> usize {
    r.expect_err("expected a parse error").line
}

#[test]
fn empty_input_is_an_error_at_line_1() {
    assert_eq!(line_of(BuddyInfo::parse("")), 1);
    assert_eq!(line_of(PageTypeInfo::parse("")), 1);
    assert_eq!(line_of(ZoneInfo::parse("")), 1);
    assert_eq!(line_of(VmStat::parse("")), 1);
    assert_eq!(line_of(UnusableIndex::parse("")), 1);
    assert_eq!(line_of(ExtfragIndex::parse("")), 1);
    assert_eq!(line_of(Line::parse("")), 1);
    assert!(Gfp::parse("").is_err());
}

#[test]
fn buddyinfo_errors() {
    let t = data("buddyinfo.txt");
    // Truncated line: the last column is missing.
    let short = edit_line(&t, 2, Some("Node 0, zone    DMA32      1      1      4      2      5      4"));
    assert_eq!(line_of(BuddyInfo::parse(&short)), 2);
    let nan = edit_line(&t, 3, Some("Node 0, zone   Normal    173     5x     45"));
    assert_eq!(line_of(BuddyInfo::parse(&nan)), 3);
    let neg = edit_line(&t, 1, Some("Node -1, zone DMA 1"));
    assert_eq!(line_of(BuddyInfo::parse(&neg)), 1);
    let cut = &t[..t.len() - 20];
    assert_eq!(line_of(BuddyInfo::parse(cut)), 3);
}

#[test]
fn pagetypeinfo_errors() {
    let t = data("pagetypeinfo.txt");
    // Free row with columns missing (line 11 is DMA32 Movable).
    let short = edit_line(&t, 11, Some("Node    0, zone    DMA32, type      Movable      1      1      4"));
    assert_eq!(line_of(PageTypeInfo::parse(&short)), 11);
    // A non-numeric free count.
    let nan = edit_line(&t, 5, Some("Node    0, zone      DMA, type    Unmovable      0      z"));
    assert_eq!(line_of(PageTypeInfo::parse(&nan)), 5);
    // Block row with the wrong number of columns (line 23 is the DMA32 block row).
    let blocks = edit_line(&t, 23, Some("Node 0, zone    DMA32            0         1528"));
    assert_eq!(line_of(PageTypeInfo::parse(&blocks)), 23);
    // Non-numeric header values.
    assert_eq!(line_of(PageTypeInfo::parse(&edit_line(&t, 1, Some("Page block order: nine")))), 1);
    assert_eq!(line_of(PageTypeInfo::parse(&edit_line(&t, 2, Some("Pages per block: -512")))), 2);
    // Missing blank line.
    assert_eq!(line_of(PageTypeInfo::parse(&edit_line(&t, 3, None))), 3);
    // Order header that skips an order.
    let hdr = edit_line(&t, 4, Some("Free pages count per migrate type at order       0      2 "));
    assert_eq!(line_of(PageTypeInfo::parse(&hdr)), 4);
    // Truncated after the free table: error just past the end.
    assert_eq!(line_of(PageTypeInfo::parse(&first_lines(&t, 19))), 20);
    assert_eq!(line_of(PageTypeInfo::parse(&first_lines(&t, 20))), 21);
    // Junk after the block table.
    let junk = format!("{t}junk\n");
    assert_eq!(line_of(PageTypeInfo::parse(&junk)), t.lines().count() + 1);
}

#[test]
fn zoneinfo_errors() {
    let t = data("zoneinfo.txt");
    let line_no = |needle: &str| t.lines().position(|l| l == needle).map(|i| i + 1).unwrap();
    // A missing watermark line: the error names the line where `min` was expected.
    let min = line_no("        min      58");
    assert_eq!(line_of(ZoneInfo::parse(&edit_line(&t, min, None))), min);
    // Non-numeric value.
    let low = line_no("        low      72");
    assert_eq!(line_of(ZoneInfo::parse(&edit_line(&t, low, Some("        low      7x2")))), low);
    // A stat line with an extra column.
    let st = line_no("      nr_mlock     3535");
    assert_eq!(line_of(ZoneInfo::parse(&edit_line(&t, st, Some("      nr_mlock     3535 1")))), st);
    // Malformed protection tuple.
    let pr = line_no("        protection: (0, 3019, 4299, 4299, 4299)");
    let bad = edit_line(&t, pr, Some("        protection: (0, 3019, 4299, 4299, 4299"));
    assert_eq!(line_of(ZoneInfo::parse(&bad)), pr);
    // Truncated inside the Normal zone's pagesets: error just past the end.
    let cut = line_no("              high:     3733");
    assert_eq!(line_of(ZoneInfo::parse(&first_lines(&t, cut))), cut + 1);
    // A zone header with junk after the name.
    assert_eq!(line_of(ZoneInfo::parse(&edit_line(&t, 1, Some("Node 0, zone DMA extra")))), 1);
}

#[test]
fn vmstat_errors() {
    let t = data("vmstat.txt");
    assert_eq!(line_of(VmStat::parse(&edit_line(&t, 7, Some("nr_mlock")))), 7);
    assert_eq!(line_of(VmStat::parse(&edit_line(&t, 9, Some("nr_mlock 12a")))), 9);
}

#[test]
fn kmem_errors() {
    assert!(KmemEvent::parse("mm_page_alloc", "").is_err());
    assert!(
        KmemEvent::parse("mm_page_alloc", "page=0 pfn=0x1 order=0 migratetype=1 gfp_flags=BOGUS").is_err()
    );
    assert!(KmemEvent::parse(
        "mm_page_alloc_zone_locked",
        "page=0 pfn=0x1 order=-1 migratetype=1 percpu_refill=1"
    )
    .is_err());
    assert!(KmemEvent::parse("mm_page_pcpu_drain", "page= pfn=0x1 order=0 migratetype=1").is_err());
    assert!(KmemEvent::parse("mm_page_free", "page=0 pfn=0x order=0").is_err());
}

/// Every prefix of every sample file parses or fails; nothing panics.
#[test]
fn truncations_never_panic() {
    for f in ["buddyinfo.txt", "pagetypeinfo.txt", "zoneinfo.txt", "vmstat.txt", "trace_excerpt.txt"] {
        let t = data(f);
        for cut in 0..t.len() {
            let p = &t[..cut];
            let _ = BuddyInfo::parse(p);
            let _ = PageTypeInfo::parse(p);
            let _ = ZoneInfo::parse(p);
            let _ = VmStat::parse(p);
            let _ = UnusableIndex::parse(p);
            let _ = ExtfragIndex::parse(p);
        }
        for l in t.lines() {
            for cut in 0..l.len() {
                let _ = Line::parse(&l[..cut]);
                let _ = Line::parse_perf(&l[..cut]);
            }
        }
    }
}

fn parse_all(s: &str) {
    let _ = BuddyInfo::parse(s);
    let _ = PageTypeInfo::parse(s);
    let _ = ZoneInfo::parse(s);
    let _ = VmStat::parse(s);
    let _ = UnusableIndex::parse(s);
    let _ = ExtfragIndex::parse(s);
    let _ = Gfp::parse(s);
    for l in s.lines() {
        let _ = Line::parse(l);
        let _ = Line::parse_perf(l);
        for name in pageblock_formats::kmem::KMEM_EVENT_NAMES {
            let _ = KmemEvent::parse(name, l);
            let _ = KmemEvent::parse_tolerant(name, l);
        }
        for kind in CompactionEventKind::ALL {
            if let Ok(ev) = CompactionEvent::parse(kind.name(), l) {
                assert_eq!(ev.render_payload(), l, "accepted, so it must re-render");
            }
        }
    }
}

proptest! {
    #[test]
    fn random_text_never_panics(s in "(?s).{0,400}") {
        parse_all(&s);
    }

    #[test]
    fn structured_noise_never_panics(s in "([ \\n,:.()|=\\[\\]>#-]|Node|zone|type|0x|[0-9]{1,22}|[a-z_]{1,12}){0,80}") {
        parse_all(&s);
    }

    #[test]
    fn compaction_noise_never_panics(s in "(nid=|node=|zone=|order=|ret=|limit=|range=\\(|0x|~|\\)|, mode=|sync|Normal|DMA32|success|-|[0-9a-fA-F]{1,20}| {1,9}){0,16}") {
        parse_all(&s);
    }

    #[test]
    fn mutated_samples_never_panic(idx in 0usize..5, pos in any::<prop::sample::Index>(), byte in b' '..=b'~') {
        let f = ["buddyinfo.txt", "pagetypeinfo.txt", "zoneinfo.txt", "vmstat.txt", "trace_excerpt.txt"][idx];
        let mut t = data(f).into_bytes();
        let i = pos.index(t.len());
        t[i] = byte;
        parse_all(&String::from_utf8(t).unwrap());
    }
}

/// No parser is super-linear in its input: a quadratic pass over these (a million lines,
/// a two-megabyte line, a gfp mask of 200,000 flags) would not finish within CI's limit.
/// What parses re-renders byte for byte.
#[test]
fn huge_inputs_are_read_in_one_pass() {
    let lines = 1_000_000;
    let vmstat: String = (0..lines).map(|i| format!("item_{i} {i}\n")).collect();
    assert_eq!(VmStat::parse(&vmstat).unwrap().to_string(), vmstat);
    let sample = data("buddyinfo.txt");
    let buddy = sample.repeat(lines / sample.lines().count());
    match BuddyInfo::parse(&buddy) {
        Ok(b) => assert_eq!(b.to_string(), buddy),
        Err(e) => assert!(e.line > 1, "{e}"),
    }
    let wide = format!("Node 0, zone   Normal {}\n", "     1 ".repeat(300_000));
    parse_all(&wide);
    let trace_line = format!("  cat-1 [000] .....   1.000000: mm_page_free: {}\n", "x".repeat(2 << 20));
    parse_all(&trace_line);
    let mask = vec!["__GFP_IO"; 200_000].join("|");
    let _ = Gfp::parse(&mask);
}
