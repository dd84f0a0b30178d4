//! Reading traces end to end: the real 6.18 trace's event counts, a small real fixture's
//! statistics, perf script input, lost-events markers, malformed lines and broken files.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use pageblock_formats::ftrace::{Line, TraceLine};
use pageblock_trace::{Dialect, RecordKind, TraceError, TraceReader, TraceStats};

/// 82 real lines of the 6.18 trace: a kcompactd sleep, a fallback, then 80 consecutive lines.
fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace_small.txt")
}

fn fixture() -> String {
    std::fs::read_to_string(fixture_path()).expect("tests/data/trace_small.txt")
}

fn stats_of(text: &str, skip_bad: bool) -> Result<TraceStats, TraceError> {
    let mut reader =
        TraceReader::new(Cursor::new(text.as_bytes().to_vec()), "mem.txt").skip_bad_lines(skip_bad);
    TraceStats::collect(&mut reader, &mut |_| {})
}

/// A fresh temporary directory for this test process.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pageblock-trace-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The whole real trace: 2,248,870 lines, per-event counts equal to `grep -c` per name.
#[test]
fn the_real_thp_trace_reads_whole() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/linux-6.18-clone-tar-python-thp/trace.txt.zst");
    let mut reader = TraceReader::open(&path)
        .unwrap_or_else(|e| panic!("{e} (the shared traces are beside the workspace)"));
    let s = TraceStats::collect(&mut reader, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let want = [
        ("mm_compaction_kcompactd_sleep", 42),
        ("mm_page_alloc", 729_121),
        ("mm_page_alloc_extfrag", 12),
        ("mm_page_alloc_zone_locked", 479_002),
        ("mm_page_free", 470_270),
        ("mm_page_free_batched", 371_607),
        ("mm_page_pcpu_drain", 198_816),
    ];
    let got: Vec<(&str, u64)> = s.events.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
    assert_eq!((s.lines, s.bad_lines, s.comments, s.other_events), (2_248_870, 0, 0, 0));
    assert_eq!((s.lost_events, s.lost.markers), (0, 0));
    assert_eq!((s.dialect, s.cpus.as_slice()), (Some("ftrace"), &[0, 1][..]));
    assert_eq!(s.gfp.distinct, 30, "distinct gfp_flags= strings of `grep -o`");
    assert_eq!((s.alloc.total, s.alloc.failed), (729_121, 0));
    let l = &s.lifetimes;
    assert_eq!(l.batched_of_freed_pfn, 371_607, "each batched free follows an mm_page_free");
    assert_eq!(l.paired + l.frees_without_alloc, 470_270, "every free is paired or not");
    assert!(l.us.is_some_and(|us| us.max > 1_000_000), "lifetimes of seconds are not clamped");
    assert_eq!(l.paired + l.allocs_never_freed + l.allocs_of_live_pfn, 729_121, "every allocation too");
    assert_eq!(s.fallbacks.total, 12);
}

#[test]
fn the_fixture_statistics() {
    let s = stats_of(&fixture(), false).unwrap();
    let counts: Vec<u64> = s.events.values().copied().collect();
    assert_eq!(counts, [1, 47, 1, 1, 25, 2, 5], "{:?}", s.events);
    assert_eq!((s.lines, s.cpus.as_slice()), (82, &[0, 1][..]));
    // Pairs counted independently (a dictionary of live pfns over the same lines).
    let l = &s.lifetimes;
    assert_eq!((l.paired, l.frees_without_alloc, l.batched_of_freed_pfn), (18, 7, 2));
    assert_eq!(s.gfp.distinct, 3);
    assert_eq!(s.gfp.top[0].gfp, "GFP_HIGHUSER|__GFP_ACCOUNT");
    assert_eq!(s.gfp.top[0].allocs, 30);
    assert_eq!((s.fallbacks.total, s.fallbacks.fragmenting, s.fallbacks.change_ownership), (1, 0, 1));
    assert_eq!((s.refill.events, s.refill.other_zone_locked), (0, 1));
    assert_eq!(s.time.first_us, Some(495_508_676));
    let json = serde_json::to_value(&s).unwrap();
    for key in ["lines", "events", "bad_lines", "lost_events", "seconds"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert!(s.summary().contains("mm_page_alloc"));
}

/// The same events as `perf script` prints them read back to the same statistics.
#[test]
fn perf_script_text_is_detected_and_reads_the_same() {
    let ftrace = fixture();
    let perf: String = ftrace
        .lines()
        .map(|l| {
            let t = TraceLine::parse(l).unwrap();
            let system = if t.event.starts_with("mm_compaction") { "compaction" } else { "kmem" };
            format!("{}\n", t.render_perf(system, 7, 30))
        })
        .collect();
    let mut reader = TraceReader::new(Cursor::new(perf.into_bytes()), "perf.txt");
    let p = TraceStats::collect(&mut reader, &mut |_| {}).unwrap();
    let f = stats_of(&ftrace, false).unwrap();
    assert_eq!(p.dialect, Some("perf-script"));
    assert_eq!((p.events, p.lifetimes, p.alloc, p.gfp), (f.events, f.lifetimes, f.alloc, f.gfp));
}

#[test]
fn lost_markers_comments_and_other_events() {
    let mut lines: Vec<String> = fixture().lines().map(str::to_owned).collect();
    lines.insert(0, "# tracer: nop".into());
    lines.insert(10, "CPU:1 [LOST 5 EVENTS]".into());
    lines.insert(20, "CPU:0 [LOST EVENTS]".into());
    lines.insert(
        30,
        "          <idle>-0       [001] d..2.   504.773000: sched_switch: prev_comm=swapper/1".into(),
    );
    let text = lines.join("\n");
    let s = stats_of(&text, false).unwrap();
    assert_eq!((s.lines, s.comments, s.other_events), (86, 1, 1));
    assert_eq!((s.lost_events, s.lost.markers, s.lost.markers_without_count), (5, 2, 1));
    assert_eq!(s.lost.events_by_cpu.get(&1), Some(&5));
    let mut reader = TraceReader::new(Cursor::new(text.into_bytes()), "t");
    let lost: Vec<(u64, u16)> = (&mut reader)
        .map(Result::unwrap)
        .filter(|(_, r)| matches!(r.kind, RecordKind::Lost { .. }))
        .map(|(no, r)| (no, r.cpu))
        .collect();
    assert_eq!(lost, [(11, 1), (21, 0)]);
}

/// Reclaim's records are counted by name (a regression: the counters had room for the
/// four vmscan events read before `mm_vmscan_lru_shrink_inactive`, and the fifth panicked).
#[test]
fn reclaim_records_are_counted_by_name() {
    let mut lines: Vec<String> = fixture().lines().map(str::to_owned).collect();
    let shrink = "         kswapd0-48      [000] .....   504.773000: mm_vmscan_lru_shrink_inactive: nid=0 \
                  nr_scanned=9 nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 \
                  nr_activate_anon=9 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 \
                  flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC";
    let wake = "         kswapd0-48      [000] .....   504.772990: mm_vmscan_kswapd_wake: nid=0 order=0";
    lines.insert(5, shrink.into());
    lines.insert(5, shrink.into());
    lines.insert(5, wake.into());
    let s = stats_of(&lines.join("\n"), false).unwrap();
    assert_eq!(s.events.get("mm_vmscan_lru_shrink_inactive"), Some(&2));
    assert_eq!(s.events.get("mm_vmscan_kswapd_wake"), Some(&1));
}

#[test]
fn a_malformed_line_names_file_line_and_reason() {
    let mut lines: Vec<String> = fixture().lines().map(str::to_owned).collect();
    lines[4] = lines[4].replace("order=", "order=x");
    let text = lines.join("\n");
    let err = stats_of(&text, false).unwrap_err();
    assert_eq!((err.file(), err.line()), ("mem.txt", Some(5)));
    assert!(err.reason().contains("order"), "{err}");
    assert!(err.to_string().starts_with("mem.txt:5: "), "{err}");
    // Skipping counts it and reads everything else.
    let s = stats_of(&text, true).unwrap();
    assert_eq!((s.lines, s.bad_lines), (82, 1));
    assert_eq!(s.events.values().sum::<u64>(), 81);
    assert!(s.first_bad_line.as_deref().is_some_and(|l| l.starts_with("mem.txt:5: ")));
}

#[test]
fn non_utf8_and_truncated_lines_are_bad_lines() {
    let text = fixture();
    let mut bytes = text.as_bytes().to_vec();
    let second_line = text.find('\n').unwrap() + 3;
    bytes[second_line] = 0xff;
    let mut reader = TraceReader::new(Cursor::new(bytes), "bin.txt");
    let err = reader.find_map(Result::err).expect("an error");
    assert_eq!(err.line(), Some(2));
    assert!(err.reason().contains("UTF-8"), "{err}");
    // A line cut in the middle (a trace copied while it was written).
    let cut = &text[..text.len() - 40];
    let err = stats_of(cut, false).unwrap_err();
    assert_eq!(err.line(), Some(82), "{err}");
}

/// Regression: a truncated `.zst`/`.gz` (a recording killed, or out of space) was rejected
/// whole, even with `--skip-bad`. Without it, the error says where the file stops and what
/// `--skip-bad` reads; with it, the lines before the cut are read and the cut is reported.
#[test]
fn a_truncated_compressed_file_gives_its_prefix_when_skipping() {
    let dir = temp_dir("prefix");
    let text = fixture();
    // Two zstd frames (as `pageblock record` flushes them), the second cut short.
    let mut zst = zstd::encode_all(text.as_bytes(), 3).unwrap();
    let second = zstd::encode_all(text.as_bytes(), 3).unwrap();
    zst.extend_from_slice(&second[..second.len() / 2]);
    // One gzip member of many copies, cut in the middle.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for _ in 0..40 {
        gz.write_all(text.as_bytes()).unwrap();
    }
    let gz = gz.finish().unwrap();
    let gz = gz[..gz.len() / 2].to_vec();
    for (name, bytes, what) in [("t.zst", zst, "zstd"), ("t.gz", gz, "gzip")] {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let mut strict = TraceReader::open(&path).unwrap();
        let err = TraceStats::collect(&mut strict, &mut |_| {}).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{}: truncated {what} stream", path.display())), "{msg}");
        assert!(msg.contains(" after line ") && msg.contains("--skip-bad reads the "), "{msg}");
        let mut lenient = TraceReader::open(&path).unwrap().skip_bad_lines(true);
        let s = TraceStats::collect(&mut lenient, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(s.lines >= 82, "{name}: at least the first copy: {}", s.lines);
        assert_eq!(s.bad_lines, 0, "{name}: the cut line is not read as a bad line");
        let cut = s.truncated.as_deref().unwrap_or_else(|| panic!("{name}: no warning"));
        assert!(cut.contains(&format!("truncated {what} stream")), "{cut}");
        assert!(cut.contains(&format!("after line {}", s.lines)), "{name}: where it stops: {cut}");
        assert!(s.summary().contains("truncated "), "{name}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression: `--skip-bad` on an empty file or pure garbage gave empty statistics and
/// success.
#[test]
fn a_trace_without_one_event_is_an_error() {
    for (text, skip, want) in [
        ("", false, "no events decoded: no trace lines"),
        ("", true, "no events decoded: no trace lines"),
        ("garbage\nmore garbage\n", true, "every one of the 2 lines is malformed (the first: mem.txt:1: "),
        ("# tracer: nop\n", false, "no events decoded: 1 lines (1 comments"),
    ] {
        let err = stats_of(text, skip).expect_err(text);
        assert!(err.to_string().starts_with("mem.txt: "), "{err}");
        assert!(err.to_string().contains(want), "{text:?}: {err}");
    }
}

/// Regression: `trace-cmd report` text was misdiagnosed; its header names it.
#[test]
fn trace_cmd_report_output_is_named() {
    for header in ["version = 6", "cpus=2", "CPU 0 is empty"] {
        let text = format!("{header}\n{}", fixture());
        let err = stats_of(&text, false).unwrap_err();
        assert_eq!(err.line(), Some(1));
        assert!(err.reason().contains("`trace-cmd report` output"), "{err}");
    }
}

#[test]
fn truncated_compressed_files_are_errors_naming_the_file() {
    let dir = temp_dir("truncated");
    let text = fixture();
    let zst = zstd::encode_all(text.as_bytes(), 3).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    for (name, bytes, what) in
        [("t.zst", zst, "truncated zstd stream"), ("t.gz", gz, "truncated gzip stream")]
    {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let mut whole = TraceReader::open(&path).unwrap();
        assert_eq!(TraceStats::collect(&mut whole, &mut |_| {}).unwrap().lines, 82, "{name} whole");
        std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let mut reader = TraceReader::open(&path).unwrap();
        let err = TraceStats::collect(&mut reader, &mut |_| {}).unwrap_err();
        assert_eq!(err.line(), None);
        assert!(err.to_string().starts_with(&format!("{}: {what}", path.display())), "{err}");
    }
    let missing = TraceReader::open(&dir.join("missing.txt")).err().expect("no such file");
    assert!(missing.to_string().contains("missing.txt"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_dialect_can_be_forced() {
    let text = fixture();
    let mut reader = TraceReader::new(Cursor::new(text.into_bytes()), "f").with_dialect(Dialect::PerfScript);
    let err = reader.next().unwrap().unwrap_err();
    assert_eq!(err.line(), Some(1));
    let line = Line::parse("CPU:3 [LOST 1 EVENTS]").unwrap();
    assert_eq!(line, Line::Lost { cpu: 3, events: Some(1) });
}
