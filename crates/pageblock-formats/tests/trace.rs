//! ftrace text, kmem payloads and gfp strings against the real 94,532-event trace.

mod common;

use std::collections::BTreeSet;
use std::io::{BufReader, Cursor};

use common::{data, data_path};
use pageblock_formats::ftrace::{FtraceReader, Line, LineRef, Tgid, Timestamp, TraceLine, TraceLineRef};
use pageblock_formats::gfp::Gfp;
use pageblock_formats::kmem::KmemEvent;

/// Streams `trace_full.txt.gz` through the reader: every line parses, every line re-renders
/// byte for byte, every event payload parses strictly as a kmem event and re-renders.
#[test]
fn full_trace_round_trips() {
    let f = std::fs::File::open(data_path("trace_full.txt.gz")).unwrap();
    let mut reader = FtraceReader::new(BufReader::new(flate2::read::GzDecoder::new(f)));
    let original = common::trace_full();
    let mut want = original.lines();
    let (mut events, mut comments) = (0usize, 0usize);
    let mut gfp_strings = BTreeSet::new();
    while let Some(item) = reader.next_ref() {
        let (no, line) = item.unwrap_or_else(|e| panic!("{e}"));
        let expected = want.next().expect("reader yields more lines than the file has");
        assert_eq!(line.to_string(), expected, "line {no}");
        match line {
            LineRef::Comment(_) => comments += 1,
            LineRef::Lost { .. } => panic!("line {no}: the sample lost no events"),
            LineRef::Event(ev) => {
                events += 1;
                let k = ev.kmem().unwrap_or_else(|e| panic!("line {no}: {e}"));
                assert_eq!(k.render_payload(), ev.payload, "line {no}");
                assert_eq!(k.name(), ev.event);
                if let KmemEvent::PageAlloc(a) = &k {
                    let s = ev.payload.rsplit_once("gfp_flags=").unwrap().1;
                    gfp_strings.insert((s.to_owned(), a.gfp_flags));
                }
            }
        }
    }
    assert!(want.next().is_none(), "reader stopped early");
    assert_eq!(events, 94_532);
    assert_eq!(comments, 13, "12 header lines and one `##### CPU 0 buffer started ####`");
    assert_eq!(gfp_strings.len(), 14);
    for (s, g) in gfp_strings {
        assert_eq!(Gfp::parse(&s), Ok(g));
        assert_eq!(g.render(), s);
    }
}

#[test]
fn owned_iterator_matches_excerpt() {
    let text = data("trace_excerpt.txt");
    let lines: Vec<(usize, Line)> =
        FtraceReader::new(Cursor::new(text.as_bytes())).map(Result::unwrap).collect();
    assert_eq!(lines.len(), text.lines().count());
    for ((no, l), orig) in lines.iter().zip(text.lines()) {
        assert_eq!(&l.render(), orig, "line {no}");
        assert_eq!(&Line::parse(orig).unwrap(), l);
    }
    let comms: BTreeSet<&str> = lines
        .iter()
        .filter_map(|(_, l)| match l {
            Line::Event(e) => Some(e.comm.as_str()),
            Line::Comment(_) | Line::Lost { .. } => None,
        })
        .collect();
    for c in ["memfd:sealed-91", "<idle>", "kworker/0:2", "python3"] {
        assert!(comms.contains(c), "{c} missing from {comms:?}");
    }
}

#[test]
fn odd_comms_and_fields() {
    let l = TraceLine::parse(
        " memfd:sealed-91-2769    [001] .....   237.523808: mm_page_alloc: page=0000000045fd1a92 pfn=0x14d0f6 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP",
    )
    .unwrap();
    assert_eq!((l.comm.as_str(), l.pid, l.cpu), ("memfd:sealed-91", 2769, 1));
    assert_eq!(l.flags.as_deref(), Some("....."));
    assert_eq!(l.timestamp, Timestamp { secs: 237, usecs: 523808 });
    assert_eq!(l.event, "mm_page_alloc");
    let k = l.kmem().unwrap();
    assert_eq!(k.pfn(), 0x14d0f6);

    // A comm with spaces and a ` [` of its own, an unknown comm, and a long pid.
    for (comm, pid) in [
        ("my [1] task-x", 12),
        ("x-1 [2] y", 5),
        ("x-1 [2] .....", 6),
        ("<...>", 4_194_304),
        ("a b", 7),
        ("", 3),
    ] {
        let l = TraceLine {
            comm: comm.into(),
            pid,
            tgid: None,
            cpu: 3,
            flags: Some("d..3.".into()),
            timestamp: Timestamp { secs: 1, usecs: 5 },
            event: "mm_page_free".into(),
            payload: "page=0000000000000001 pfn=0x1 order=0".into(),
        };
        let text = l.render();
        assert_eq!(TraceLine::parse(&text), Ok(l.clone()), "{text}");
    }
}

#[test]
fn tgid_and_no_irq_info_forms() {
    let base = TraceLine {
        comm: "bash".into(),
        pid: 2783,
        tgid: Some(Tgid::Pid(2783)),
        cpu: 0,
        flags: None,
        timestamp: Timestamp { secs: 123_456, usecs: 7 },
        event: "mm_page_free".into(),
        payload: "page=000000007d337ca8 pfn=0x14d0f8 order=0".into(),
    };
    let t = base.render();
    assert_eq!(
        t,
        "            bash-2783    (   2783) [000]  123456.000007: mm_page_free: page=000000007d337ca8 pfn=0x14d0f8 order=0"
    );
    assert_eq!(TraceLine::parse(&t), Ok(base.clone()));
    let unknown = TraceLine { tgid: Some(Tgid::Unknown), flags: Some("d.s.".into()), ..base };
    let t = unknown.render();
    assert!(t.contains("-2783    (-------) [000] d.s. 123456.000007: "), "{t}");
    assert_eq!(TraceLine::parse(&t), Ok(unknown));
}

#[test]
fn old_kernel_lines_parse() {
    // 3.x/4.x: 4 flag chars, %-5d pid, decimal pfn, raw page pointer.
    let l = TraceLine::parse(
        "          <idle>-0     [006] d.s.  1110.217281: mm_page_alloc_extfrag: page=ffffea0064142000 pfn=26235008 alloc_order=3 fallback_order=3 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=2 fragmenting=1 change_ownership=1",
    )
    .unwrap();
    assert_eq!((l.comm.as_str(), l.pid, l.cpu, l.flags.as_deref()), ("<idle>", 0, 6, Some("d.s.")));
    assert!(l.kmem().is_err(), "decimal pfn is not the modern format");
    let KmemEvent::PageAllocExtfrag(e) = KmemEvent::parse_tolerant(&l.event, &l.payload).unwrap() else {
        panic!("wrong event")
    };
    assert_eq!((e.pfn, e.fragmenting, e.page.to_string().as_str()), (26235008, 1, "ffffea0064142000"));
    // 3.x without irq-info.
    let l = TraceLine::parse(
        "  gnome-terminal-1567  [000]  4415.246506: mm_page_alloc: page=ffffea0003db9f40 pfn=1155800 order=0 migratetype=0 gfp_flags=GFP_KERNEL",
    )
    .unwrap();
    assert_eq!((l.comm.as_str(), l.pid, l.flags), ("gnome-terminal", 1567, None));
}

/// Verbatim `perf script` (perf 6.1) output from the reference, rendered from synthetic records.
const PERF: [&str; 4] = [
    "         python3  4067 [001]   237.320720:             kmem:mm_page_alloc: page=0x147c69 pfn=0x147c69 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP",
    "         python3  4067 [001]   237.320856: kmem:mm_page_alloc_zone_locked: page=0x147c73 pfn=0x147c73 order=0 migratetype=1 percpu_refill=1",
    "            bash  2783 [000]   237.526250:              kmem:mm_page_free: page=0x14d0f8 pfn=0x14d0f8 order=0",
    "            bash  2783 [000]   237.600000:     kmem:mm_page_alloc_extfrag: page=0x190a000 pfn=0x190a000 alloc_order=3 fallback_order=3 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=2 fragmenting=10 change_ownership=1",
];

#[test]
fn perf_script_lines() {
    let text = PERF.join("\n");
    let lines: Vec<_> = FtraceReader::perf_script(Cursor::new(text.as_bytes())).map(Result::unwrap).collect();
    assert_eq!(lines.len(), 4);
    for ((_, line), orig) in lines.iter().zip(PERF) {
        let Line::Event(l) = line else { panic!("comment?") };
        assert_eq!(l.flags, None);
        assert_eq!(l.render_perf("kmem", 5, 30), orig);
        let k = l.kmem().unwrap();
        assert_eq!(k.render_payload(), l.payload);
    }
    let Line::Event(l) = &lines[3].1 else { panic!() };
    assert_eq!((l.comm.as_str(), l.pid, l.cpu, l.event.as_str()), ("bash", 2783, 0, "mm_page_alloc_extfrag"));
    // perf >= 6.5 widens the pid to 7, and a 2019 perf line with a decimal pfn.
    let wide = TraceLine::parse_perf(
        "         python3    4067 [001]   237.320720: kmem:mm_page_free: page=0x1 pfn=0x1 order=0",
    )
    .unwrap();
    assert_eq!(wide.pid, 4067);
    assert!(TraceLine::parse_perf("perf  6429 [000]    22.498450:             kmem:mm_page_alloc: page=0x176a17 pfn=1534487 order=0 migratetype=0 gfp_flags=GFP_KERNEL").is_ok());
    assert!(TraceLine::parse_perf("python3 4067 [001] 237.320720123: kmem:mm_page_free: x").is_err(), "--ns");
}

#[test]
fn failed_allocation_and_synthetic_events() {
    let failed = KmemEvent::PageAlloc(pageblock_formats::kmem::MmPageAlloc::new(
        None,
        9,
        1,
        Gfp::HIGHUSER_MOVABLE | Gfp::NOWARN | Gfp::COMP | Gfp::THISNODE,
    ));
    let p = failed.render_payload();
    assert_eq!(
        p,
        "page=0000000000000000 pfn=0x0 order=9 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_NOWARN|__GFP_COMP|__GFP_THISNODE"
    );
    let back = KmemEvent::parse("mm_page_alloc", &p).unwrap();
    assert_eq!(back, failed);
    let KmemEvent::PageAlloc(a) = back else { panic!() };
    assert!(a.failed());

    let line = TraceLine::from_kmem(
        "python3",
        4067,
        1,
        Some("....."),
        Timestamp::from_micros(237_320_720),
        &KmemEvent::PageFree(pageblock_formats::kmem::MmPageFree::new(0x147c69, 0)),
    );
    let t = line.render();
    assert!(
        t.starts_with("         python3-4067    [001] .....   237.320720: mm_page_free: page=00000000"),
        "{t}"
    );
    assert!(t.ends_with(" pfn=0x147c69 order=0"), "{t}");
    assert_eq!(TraceLine::parse(&t), Ok(line));
}

#[test]
fn vendor_fields_strict_and_tolerant() {
    let payload = "page=0000000045fd1a92 pfn=0x14d0f6 order=0 migratetype=0 nr_free=3650 gfp_flags=GFP_HIGHUSER|__GFP_ZERO";
    let e = KmemEvent::parse("mm_page_alloc", payload).unwrap_err();
    assert!(e.reason.contains("nr_free"), "{e}");
    let k = KmemEvent::parse_tolerant("mm_page_alloc", payload).unwrap();
    assert_eq!(k.pfn(), 0x14d0f6);
    assert!(KmemEvent::parse("mm_page_free", "page=1 pfn=0x1").unwrap_err().reason.contains("order"));
    assert!(KmemEvent::parse("mm_page_free_batched", "page=1 pfn=0x1 order=1").is_err());
    assert!(KmemEvent::parse("sched_switch", "prev_comm=a").is_err());
    assert!(KmemEvent::parse("mm_page_free", "page=1 pfn=0x1 order=x").is_err());
    assert!(KmemEvent::parse("mm_page_free", "page=1 pfn=0x1 order").is_err());
}

#[test]
fn garbage_lines_are_errors_not_panics() {
    let bad = [
        "",
        " ",
        "garbage",
        "python3-4067 [001]",
        "python3-4067    [001] .....",
        "python3-4067    [001] .....   237.320720",
        "python3-4067    [001] .....   237.320720:",
        "python3-4067    [001] .....   237.320720: mm_page_free",
        "python3-4067    [001] .....   237.32072: mm_page_free: x",
        "python3-4067    [001] .....   237: mm_page_free: x",
        "python3-4067    [001] .....   x.320720: mm_page_free: x",
        "python3-99999999999 [001] ..... 1.000000: e: x",
        "python3-4067    [99999999999] ..... 1.000000: e: x",
        "python3 4067    [001] ..... 1.000000: e: x",
        "python3-4067    (abc) [001] ..... 1.000000: e: x",
        "-[",
        " [",
        " [1] ",
        "é-1 [é] ",
    ];
    for b in bad {
        let e = Line::parse(b).expect_err(b);
        assert_eq!(e.line, 1);
        assert!(TraceLine::parse_perf(b).is_err(), "{b}");
    }
}

#[test]
fn reader_reports_line_numbers_and_continues() {
    let text: &[u8] = b"# header\n  a-1 [000] ..... 1.000000: e: p\nnot a trace line\n\xff\xfe\n  b-2 [001] ..... 2.000000: e: q";
    let items: Vec<_> = FtraceReader::new(Cursor::new(text)).collect();
    assert_eq!(items.len(), 5);
    assert!(matches!(items[0], Ok((1, Line::Comment(_)))));
    assert!(matches!(items[1], Ok((2, Line::Event(_)))));
    assert_eq!(items[2].as_ref().unwrap_err().line, 3);
    let utf8 = items[3].as_ref().unwrap_err();
    assert_eq!(utf8.line, 4);
    assert!(utf8.reason.contains("UTF-8"));
    let Ok((5, Line::Event(e))) = &items[4] else { panic!("{:?}", items[4]) };
    assert_eq!((e.comm.as_str(), e.payload.as_str()), ("b", "q"));
}

/// Our table is the one evaluated from this kernel's `mm_page_alloc/format` print fmt.
#[test]
fn gfp_table_matches_the_kernel_format_file() {
    let text = data("gfp_flag_table.txt");
    let rows: Vec<(usize, String, u64)> = text
        .lines()
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let mask = u64::from_str_radix(t[2].trim_start_matches("0x"), 16).unwrap();
            (t[0].parse().unwrap(), t[1].to_owned(), mask)
        })
        .collect();
    assert_eq!(rows.len(), 38);
    for ((i, name, mask), (k, &(g, our_name))) in
        rows.iter().zip(pageblock_formats::gfp::GFP_FLAG_TABLE.iter().enumerate())
    {
        assert_eq!((*i, name.as_str(), *mask), (k, our_name, g.0));
    }
}

/// `print_trace_line()`'s two lost-events markers parse and re-render byte for byte, on
/// their own and between event lines (as a `trace_pipe` reader sees them).
#[test]
fn lost_events_lines() {
    for (text, cpu, events) in [
        ("CPU:1 [LOST 1234 EVENTS]", 1, Some(1234)),
        ("CPU:0 [LOST EVENTS]", 0, None),
        ("CPU:17 [LOST 0 EVENTS]", 17, Some(0)),
    ] {
        let line = Line::parse(text).unwrap();
        assert_eq!(line, Line::Lost { cpu, events }, "{text}");
        assert_eq!(line.render(), text);
        assert_eq!(LineRef::parse(text).unwrap().to_string(), text);
    }
    let max = format!("CPU:{} [LOST {} EVENTS]", u32::MAX, u64::MAX);
    assert_eq!(Line::parse(&max), Ok(Line::Lost { cpu: u32::MAX, events: Some(u64::MAX) }));
    // Not the kernel's text: each is an error (as an event line it does not parse either).
    for bad in [
        "CPU:01 [LOST 5 EVENTS]",
        "CPU:1 [LOST 05 EVENTS]",
        "CPU:1 [LOST -5 EVENTS]",
        "CPU:1 [LOST +5 EVENTS]",
        "CPU:1 [LOST 5 EVENTS] ",
        "CPU:1 [LOST 5 events]",
        "CPU:1  [LOST 5 EVENTS]",
        "CPU: [LOST 5 EVENTS]",
        "CPU:1 [LOST  EVENTS]",
        "CPU:4294967296 [LOST 1 EVENTS]",
        "CPU:1 [LOST 18446744073709551616 EVENTS]",
        "cpu:1 [LOST 5 EVENTS]",
    ] {
        assert!(Line::parse(bad).is_err(), "{bad}");
    }
    // A (long) comm that starts like a marker is still an event line.
    let l = Line::parse("CPU:1 [LOST 2 EVENTS]-5    [000] .....     1.000000: mm_page_free: p").unwrap();
    let Line::Event(e) = l else { panic!("{l:?}") };
    assert_eq!((e.comm.as_str(), e.pid), ("CPU:1 [LOST 2 EVENTS]", 5));

    let text = concat!(
        "               a-1       [000] .....     1.000000: e: p\n",
        "CPU:1 [LOST 7 EVENTS]\n",
        "               b-2       [001] .....     2.000000: e: q\n"
    );
    let lines: Vec<_> = FtraceReader::new(Cursor::new(text.as_bytes())).map(Result::unwrap).collect();
    assert_eq!(lines[1], (2, Line::Lost { cpu: 1, events: Some(7) }));
    let again: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    assert_eq!(again, text);
}

#[test]
fn need_resched_is_the_second_flag_character() {
    let at = |line: &str| TraceLineRef::parse(line).unwrap().need_resched();
    // Real lines of this machine's 6.18 trace and of the A5 recording.
    assert_eq!(
        at("         python3-4067    [001] .N...   237.320801: mm_page_alloc: page=0000000052402bda pfn=0x147c6f order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP"),
        Some(true)
    );
    assert_eq!(
        at("          pb-rec-3837    [000] .N...   558.666602: mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL priority=2"),
        Some(true)
    );
    assert_eq!(
        at("          pb-rec-3837    [000] .....   558.686748: mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL priority=2"),
        Some(false)
    );
    // Lazy preemption alone is not need_resched(); with it, `b` and `B` are.
    for (flags, set) in
        [("dLs1.", Some(false)), ("db.2.", Some(true)), (".B...", Some(true)), (".p...", Some(false))]
    {
        let line = format!("            bash-2783    [001] {flags}   237.526250: mm_page_free: page=000000007d337ca8 pfn=0x14d0f8 order=0");
        assert_eq!(at(&line), set, "{flags}");
    }
    // An old kernel's four characters; no flags (irq-info off, or perf script): unknown.
    assert_eq!(at("          <idle>-0     [006] dNs.  1110.217281: mm_page_free: page=ffffea0064142000 pfn=26235008 order=0"), Some(true));
    assert_eq!(at("  gnome-terminal-1567  [000]  4415.246506: mm_page_free: page=ffffea0003db9f40 pfn=1155800 order=0"), None);
    assert_eq!(TraceLineRef::parse_perf(PERF[2]).unwrap().need_resched(), None);
}
