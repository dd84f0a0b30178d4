//! The compaction tracepoints: a real line from the 6.18 trace, one synthetic payload per
//! event built from its print fmt, and the errors of the strict parser.

use pageblock_formats::compaction::{
    CompactResult, CompactionEvent, CompactionEventKind, KcompactdWake, MmCompactionBegin, MmCompactionDefer,
    MmCompactionEnd, MmCompactionIsolate, MmCompactionKcompactdSleep, MmCompactionMigratepages,
    MmCompactionSuitable, MmCompactionTryToCompactPages, ZoneType,
};
use pageblock_formats::ftrace::TraceLine;
use pageblock_formats::gfp::Gfp;

/// A real line of `linux-6.18-clone-tar-python-thp/trace.txt.zst`.
const REAL_SLEEP: &str =
    "      kcompactd0-36      [001] .....   495.508676: mm_compaction_kcompactd_sleep: nid=0";

#[test]
fn real_kcompactd_sleep_line() {
    let line = TraceLine::parse(REAL_SLEEP).unwrap();
    assert_eq!((line.comm.as_str(), line.pid), ("kcompactd0", 36));
    let ev = line.compaction().unwrap();
    assert_eq!(ev, CompactionEvent::KcompactdSleep(MmCompactionKcompactdSleep { nid: 0 }));
    assert_eq!(ev.render_payload(), line.payload);
    assert_eq!(line.render(), REAL_SLEEP);
    assert!(line.kmem().is_err(), "not a kmem event");
}

/// `(event, payload, model)` for every event, written from the print fmts.
fn synthetic() -> Vec<(&'static str, &'static str, CompactionEvent)> {
    use CompactionEvent as E;
    let isolate =
        MmCompactionIsolate { start_pfn: 0x100000, end_pfn: 0x100200, nr_scanned: 512, nr_taken: 32 };
    let begin = MmCompactionBegin {
        zone_start: 0x100000,
        migrate_pfn: 0x100000,
        free_pfn: 0x23fe00,
        zone_end: 0x240000,
        sync: false,
    };
    let defer = MmCompactionDefer {
        nid: 0,
        idx: ZoneType::NORMAL,
        order: 9,
        order_failed: 9,
        considered: 1,
        defer_shift: 1,
    };
    let wake = KcompactdWake { nid: 0, order: 9, highest_zoneidx: ZoneType::NORMAL };
    vec![
        ("mm_compaction_isolate_migratepages", "range=(0x100000 ~ 0x100200) nr_scanned=512 nr_taken=32", E::IsolateMigratepages(isolate)),
        ("mm_compaction_isolate_freepages", "range=(0x100000 ~ 0x100200) nr_scanned=512 nr_taken=32", E::IsolateFreepages(isolate)),
        ("mm_compaction_fast_isolate_freepages", "range=(0x0 ~ 0x0) nr_scanned=0 nr_taken=0", E::FastIsolateFreepages(MmCompactionIsolate::default())),
        ("mm_compaction_migratepages", "nr_migrated=30 nr_failed=2", E::Migratepages(MmCompactionMigratepages { nr_migrated: 30, nr_failed: 2 })),
        ("mm_compaction_begin", "zone_start=0x100000 migrate_pfn=0x100000 free_pfn=0x23fe00 zone_end=0x240000, mode=async", E::Begin(begin)),
        (
            "mm_compaction_end",
            "zone_start=0x100000 migrate_pfn=0x100000 free_pfn=0x23fe00 zone_end=0x240000, mode=sync status=partial_skipped",
            E::End(MmCompactionEnd { scanners: MmCompactionBegin { sync: true, ..begin }, status: CompactResult::PARTIAL_SKIPPED }),
        ),
        (
            "mm_compaction_try_to_compact_pages",
            "order=9 gfp_mask=GFP_TRANSHUGE|__GFP_THISNODE priority=1",
            E::TryToCompactPages(MmCompactionTryToCompactPages { order: 9, gfp_mask: Gfp::TRANSHUGE | Gfp::THISNODE, prio: 1 }),
        ),
        (
            "mm_compaction_finished",
            "node=0 zone=DMA32    order=4 ret=continue",
            E::Finished(MmCompactionSuitable { nid: 0, idx: ZoneType::DMA32, order: 4, ret: CompactResult::CONTINUE }),
        ),
        (
            "mm_compaction_suitable",
            "node=1 zone=Normal   order=-1 ret=0xffffffffffffffff",
            E::Suitable(MmCompactionSuitable { nid: 1, idx: ZoneType::NORMAL, order: -1, ret: CompactResult(-1) }),
        ),
        ("mm_compaction_deferred", "node=0 zone=Normal   order=9 order_failed=9 consider=1 limit=2", E::Deferred(defer)),
        (
            "mm_compaction_defer_compaction",
            "node=0 zone=0x4      order=9 order_failed=9 consider=0 limit=64",
            E::DeferCompaction(MmCompactionDefer { idx: ZoneType(4), considered: 0, defer_shift: 6, ..defer }),
        ),
        (
            "mm_compaction_defer_reset",
            "node=0 zone=Movable  order=3 order_failed=4 consider=0 limit=1",
            E::DeferReset(MmCompactionDefer { idx: ZoneType::MOVABLE, order: 3, order_failed: 4, considered: 0, defer_shift: 0, ..defer }),
        ),
        ("mm_compaction_kcompactd_sleep", "nid=1", E::KcompactdSleep(MmCompactionKcompactdSleep { nid: 1 })),
        ("mm_compaction_wakeup_kcompactd", "nid=0 order=9 classzone_idx=Normal  ", E::WakeupKcompactd(wake)),
        (
            "mm_compaction_kcompactd_wake",
            "nid=0 order=2 classzone_idx=DMA     ",
            E::KcompactdWake(KcompactdWake { order: 2, highest_zoneidx: ZoneType::DMA, ..wake }),
        ),
    ]
}

#[test]
fn every_event_parses_and_renders_byte_for_byte() {
    let cases = synthetic();
    let mut kinds: Vec<CompactionEventKind> = cases.iter().map(|(_, _, e)| e.kind()).collect();
    kinds.sort();
    assert_eq!(kinds, CompactionEventKind::ALL, "one case per event");
    for (name, payload, model) in cases {
        assert_eq!(CompactionEvent::parse(name, payload), Ok(model), "{name}: {payload}");
        assert_eq!(model.render_payload(), payload, "{name}");
        assert_eq!(model.name(), name);
        assert_eq!(CompactionEventKind::from_name(name), Some(model.kind()));
        // Through a whole ftrace line, trailing spaces included.
        let text = format!("      kcompactd0-36      [001] .....   495.508676: {name}: {payload}");
        let line = TraceLine::parse(&text).unwrap();
        assert_eq!(line.compaction(), Ok(model), "{text}");
        assert_eq!(line.render(), text);
    }
}

#[test]
fn strict_parser_errors() {
    let bad: [(&str, &str, &str); 22] = [
        ("mm_compaction_kcompactd_sleep", "nid=", "nid"),
        ("mm_compaction_kcompactd_sleep", "nid=0 ", "after the last field"),
        ("mm_compaction_kcompactd_sleep", "nid=00", "nid"),
        ("mm_compaction_kcompactd_sleep", "nid=-0", "nid"),
        ("mm_compaction_kcompactd_sleep", "nid=+1", "nid"),
        ("mm_compaction_kcompactd_sleep", "nid=2147483648", "nid"),
        ("mm_compaction_kcompactd_sleep", "node=0", "expected `nid=`"),
        ("mm_compaction_kcompactd_sleep", "", "payload ends"),
        ("mm_compaction_migratepages", "nr_migrated=1", "nr_failed"),
        ("mm_compaction_isolate_freepages", "range=(0x1 ~ 0x2)nr_scanned=1 nr_taken=1", ") nr_scanned="),
        ("mm_compaction_isolate_freepages", "range=(0xA ~ 0x2) nr_scanned=1 nr_taken=1", "start_pfn"),
        ("mm_compaction_isolate_freepages", "range=(0x01 ~ 0x2) nr_scanned=1 nr_taken=1", "start_pfn"),
        (
            "mm_compaction_begin",
            "zone_start=0x1 migrate_pfn=0x1 free_pfn=0x1 zone_end=0x1 mode=sync",
            ", mode=",
        ),
        (
            "mm_compaction_begin",
            "zone_start=0x1 migrate_pfn=0x1 free_pfn=0x1 zone_end=0x1, mode=Sync",
            "mode",
        ),
        (
            "mm_compaction_end",
            "zone_start=0x1 migrate_pfn=0x1 free_pfn=0x1 zone_end=0x1, mode=sync status=done",
            "status",
        ),
        (
            "mm_compaction_end",
            "zone_start=0x1 migrate_pfn=0x1 free_pfn=0x1 zone_end=0x1, mode=sync status=0x8",
            "success",
        ),
        ("mm_compaction_suitable", "node=0 zone=Normal order=9 ret=success", "padded"),
        ("mm_compaction_suitable", "node=0 zone=Normal    order=9 ret=success", " order="),
        (
            "mm_compaction_deferred",
            "node=0 zone=Normal   order=9 order_failed=9 consider=1 limit=3",
            "power of two",
        ),
        (
            "mm_compaction_try_to_compact_pages",
            "order=9 gfp_mask=__GFP_THISNODE|GFP_TRANSHUGE priority=1",
            "gfp_mask",
        ),
        ("mm_compaction_try_to_compact_pages", "order=9 gfp_mask=GFP_BOGUS priority=1", "gfp_mask"),
        ("mm_compaction_kcompactd_wake", "nid=0 order=9 classzone_idx=Normal", "padded"),
    ];
    for (name, payload, needle) in bad {
        let e = CompactionEvent::parse(name, payload).expect_err(payload);
        assert_eq!(e.line, 1);
        assert!(e.reason.contains(needle), "{name}: {payload}: `{}` lacks `{needle}`", e.reason);
        assert!(e.reason.starts_with(name), "{}", e.reason);
    }
    assert!(CompactionEvent::parse("mm_page_alloc", "nid=0")
        .unwrap_err()
        .reason
        .contains("not a compaction event"));
    assert_eq!(CompactionEventKind::from_name("mm_compaction_bogus"), None);
}
