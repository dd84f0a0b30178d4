//! One trace line → one [`TraceRecord`] (or a comment, a marker, an event of no interest).
//!
//! Two paths give the same answers. The **fast path** ([`prefix`], [`kmem`]) reads the
//! common shape of a kmem event line byte by byte, allocation-free, without building any
//! `pageblock_formats` model; it returns `None` as soon as a line is not that shape. The
//! **strict path** ([`strict`]) then runs the `pageblock_formats` parsers, which accept
//! every form they know (tgid columns, UTF-8 comms, compaction events, lost-events markers)
//! and word every error. The fast path is only an optimisation: each of its checks is one
//! the strict parsers make, so a line it accepts decodes to what the strict path would have
//! produced (tests hold the two together on 94,532 real lines and on random mutations).

mod kmem;
mod layout;
mod prefix;
mod strict;
mod swar;

use pageblock_formats::ftrace::Dialect;

use super::{GfpTable, LostEvents, TraceRecord};

/// The largest block order a trace may name: the trace machine's `MAX_PAGE_ORDER` (x86_64's,
/// the machine replay simulates). A larger order is a malformed line, not a block of 2^99
/// pages for a replay or a statistic to walk.
pub(crate) const MAX_PAGE_ORDER: u32 = pageblock_core::types::MAX_PAGE_ORDER;

/// What one line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// A kmem page event, a compaction or a vmscan event, and the pid of its task.
    Record(TraceRecord, u32),
    /// `CPU:n [LOST …]` (it has no timestamp of its own).
    Lost {
        /// The CPU.
        cpu: u32,
        /// How many events it lost.
        events: LostEvents,
    },
    /// A `#` line.
    Comment,
    /// An event of another kind (`sched_switch`, …).
    Other,
}

/// Decodes `line` (without its newline; `ascii` if every byte is). The error is the reason,
/// for the caller to place.
#[inline(always)]
pub(crate) fn decode(
    line: &[u8],
    ascii: bool,
    dialect: Dialect,
    gfp: &mut GfpTable,
) -> Result<Decoded, String> {
    match fast(line, ascii, dialect, gfp) {
        Some(d) => Ok(d),
        None => strict::decode(line, dialect, gfp),
    }
}

/// The fast path alone (`None`: ask the strict path). It reads ASCII lines only (UTF-8
/// comms and invalid bytes are the strict path's).
#[inline(always)]
pub(crate) fn fast(line: &[u8], ascii: bool, dialect: Dialect, gfp: &mut GfpTable) -> Option<Decoded> {
    if !ascii {
        return None;
    }
    match line.first() {
        Some(b'#') => return Some(Decoded::Comment),
        Some(b'C') if line.starts_with(b"CPU:") => return None,
        _ => {}
    }
    let p = prefix::prefix(line, dialect)?;
    let Some(index) = p.kmem else {
        if let Some(i) = crate::VmscanEvent::index_of(p.event) {
            let cpu = u16::try_from(p.cpu).ok()?;
            let v = match crate::VmscanEvent::without_payload(i) {
                Some(v) => v,
                None if i == 0 => kmem::direct_reclaim_begin(p.payload, gfp)?,
                // `mm_vmscan_lru_shrink_inactive`: a few per thousand lines, the strict path's.
                None => return None,
            };
            let kind = crate::RecordKind::Vmscan(v);
            return Some(Decoded::Record(
                TraceRecord { time_us: p.time_us, pfn: 0, cpu, task: p.task, kind },
                p.pid,
            ));
        }
        return (!p.event.starts_with(b"mm_compaction_")).then_some(Decoded::Other);
    };
    let (pfn, kind) = kmem::decode(index, p.payload, gfp)?;
    let cpu = u16::try_from(p.cpu).ok()?;
    Some(Decoded::Record(TraceRecord { time_us: p.time_us, pfn, cpu, task: p.task, kind }, p.pid))
}

/// The strict path alone (for tests that hold the two paths together).
#[cfg(test)]
pub(crate) fn strict(line: &[u8], dialect: Dialect, gfp: &mut GfpTable) -> Result<Decoded, String> {
    strict::decode(line, dialect, gfp)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use pageblock_formats::ftrace::TraceLine;
    use pageblock_formats::gfp::Gfp;
    use pageblock_formats::kmem::KmemEvent;
    use proptest::prelude::*;

    use super::*;
    use crate::RecordKind;

    /// The 94,532-event real trace of `pageblock-formats`' tests.
    fn trace_full() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../pageblock-formats/tests/data/trace_full.txt.gz");
        let mut text = String::new();
        let file = std::fs::File::open(path).expect(path);
        flate2::read::GzDecoder::new(file).read_to_string(&mut text).expect("gunzip");
        text
    }

    /// `d` with its gfp id replaced by the mask (ids of two tables are not comparable).
    fn masked(d: Decoded, gfp: &GfpTable) -> (Decoded, Option<Gfp>) {
        match d {
            Decoded::Record(mut r, pid) => match &mut r.kind {
                RecordKind::Alloc { gfp: id, .. }
                | RecordKind::Vmscan(crate::VmscanEvent::DirectReclaimBegin { gfp: id, .. }) => {
                    let mask = gfp.get(*id);
                    *id = crate::GfpId(0);
                    (Decoded::Record(r, pid), mask)
                }
                _ => (d, None),
            },
            _ => (d, None),
        }
    }

    /// Fast and strict decoding of `line`: if the fast path decides, the strict one agrees.
    /// Returns the fast result, gfp as a mask.
    use crate::Task;

    fn agree(line: &[u8], dialect: Dialect) -> Option<(Decoded, Option<Gfp>)> {
        let (mut fast_gfp, mut strict_gfp) = (GfpTable::new(), GfpTable::new());
        let f = fast(line, line.is_ascii(), dialect, &mut fast_gfp)?;
        let s = strict(line, dialect, &mut strict_gfp);
        let s =
            s.unwrap_or_else(|e| panic!("fast accepted, strict said {e}: {}", String::from_utf8_lossy(line)));
        let f = masked(f, &fast_gfp);
        assert_eq!(f, masked(s, &strict_gfp), "{}", String::from_utf8_lossy(line));
        Some(f)
    }

    #[test]
    fn fast_path_agrees_with_the_strict_parsers_on_a_real_trace() {
        let text = trace_full();
        let mut gfp = GfpTable::new();
        let mut events = 0;
        for (no, line) in text.lines().enumerate() {
            let fast = agree(line.as_bytes(), Dialect::Ftrace)
                .unwrap_or_else(|| panic!("line {}: not fast", no + 1));
            let d = decode(line.as_bytes(), true, Dialect::Ftrace, &mut gfp).unwrap();
            assert_eq!(masked(d, &gfp), fast);
            let Decoded::Record(r, pid) = d else {
                assert!(line.starts_with('#'), "line {}", no + 1);
                continue;
            };
            events += 1;
            // Against the formats crate's models directly.
            let l = TraceLine::parse(line).unwrap();
            let k = l.kmem().unwrap();
            assert_eq!((r.time_us, r.pfn, u32::from(r.cpu)), (l.timestamp.as_micros(), k.pfn(), l.cpu));
            assert_eq!(r.task, crate::Task::of_comm(l.comm.as_bytes()), "line {}", no + 1);
            assert_eq!(pid, l.pid, "line {}", no + 1);
            match (k, r.kind) {
                (KmemEvent::PageAlloc(e), RecordKind::Alloc { order, migratetype, gfp: id, failed }) => {
                    assert_eq!(
                        (u32::from(order), i32::from(migratetype), failed),
                        (e.order, e.migratetype, e.failed())
                    );
                    assert_eq!(gfp.get(id), Some(e.gfp_flags));
                }
                (KmemEvent::PageFree(e), RecordKind::Free { order }) => assert_eq!(u32::from(order), e.order),
                (KmemEvent::PageFreeBatched(_), RecordKind::FreeBatched) => {}
                (
                    KmemEvent::PageAllocZoneLocked(e),
                    RecordKind::ZoneLocked { order, migratetype, percpu_refill },
                ) => {
                    assert_eq!((u32::from(order), i32::from(migratetype)), (e.order, e.migratetype));
                    assert_eq!(percpu_refill, e.percpu_refill == 1);
                }
                (KmemEvent::PagePcpuDrain(e), RecordKind::PcpuDrain { order, migratetype }) => {
                    assert_eq!((u32::from(order), i32::from(migratetype)), (e.order, e.migratetype));
                }
                (k, kind) => panic!("line {}: {k:?} decoded as {kind:?}", no + 1),
            }
        }
        assert_eq!(events, 94_532);
        assert_eq!(gfp.len(), 14);
    }

    /// Verbatim `perf script` lines (perf 6.1, synthesized records of the reference).
    const PERF: [&str; 3] = [
        "         python3  4067 [001]   237.320720:             kmem:mm_page_alloc: page=0x147c69 pfn=0x147c69 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP",
        "         python3  4067 [001]   237.320856: kmem:mm_page_alloc_zone_locked: page=0x147c73 pfn=0x147c73 order=0 migratetype=1 percpu_refill=1",
        "            bash  2783 [000]   237.600000:     kmem:mm_page_alloc_extfrag: page=0x190a000 pfn=0x190a000 alloc_order=3 fallback_order=3 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=2 fragmenting=10 change_ownership=1",
    ];

    /// kswapd's and kcompactd's events are told apart by their comm, the same on both paths
    /// and in every shape (the kernel's layout, other spacing, perf script).
    #[test]
    fn the_daemons_are_told_apart_on_both_paths() {
        let alloc = "mm_page_free: page=0xffffea0004000000 pfn=0x100000 order=0";
        let lines = [
            (
                format!("         kswapd0-93      [001] .....   495.119171: {alloc}"),
                Dialect::Ftrace,
                Task::Kswapd,
            ),
            (
                format!("      kcompactd0-94      [000] .....   495.119171: {alloc}"),
                Dialect::Ftrace,
                Task::Kcompactd,
            ),
            (format!("  kswapd1-95 [003] d..1. 12.000001: {alloc}"), Dialect::Ftrace, Task::Kswapd),
            (
                format!("             cc1-4242    [001] .....   495.119171: {alloc}"),
                Dialect::Ftrace,
                Task::Other,
            ),
            (
                format!("kcompactd0    94 [000]   495.119171: kmem:{alloc}"),
                Dialect::PerfScript,
                Task::Kcompactd,
            ),
        ];
        for (line, dialect, task) in lines {
            let Some((Decoded::Record(r, _), _)) = agree(line.as_bytes(), dialect) else { panic!("{line}") };
            assert_eq!(r.task, task, "{line}");
        }
    }

    /// The reclaim events a replay reads (the real lines of a `lab real` recording) decode
    /// the same on both paths; other vmscan events stay other events.
    #[test]
    fn vmscan_events_decode_on_both_paths() {
        use crate::VmscanEvent as V;
        let begin = "       pageblock-32254   [001] ..... 43181.145533: mm_vmscan_direct_reclaim_begin: order=9 \
                     gfp_flags=GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL";
        let end = "       pageblock-32254   [001] ..... 43181.145736: mm_vmscan_direct_reclaim_end: nr_reclaimed=2567";
        let perf =
            "pageblock 32254 [001] 43181.145736: vmscan:mm_vmscan_direct_reclaim_end: nr_reclaimed=2567";
        let wakeup = "       pageblock-32254   [001] ..... 43181.027341: mm_vmscan_wakeup_kswapd: nid=0 order=9 \
                      gfp_flags=GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL";
        let wake = "         kswapd0-45      [001] ..... 43181.027378: mm_vmscan_kswapd_wake: nid=0 order=9";
        // (`agree` gives a mask's id as 0 and the mask beside it.)
        for (line, dialect, v) in [
            (begin, Dialect::Ftrace, V::DirectReclaimBegin { order: 9, gfp: crate::GfpId(0) }),
            (end, Dialect::Ftrace, V::DirectReclaimEnd),
            (perf, Dialect::PerfScript, V::DirectReclaimEnd),
            (wakeup, Dialect::Ftrace, V::WakeupKswapd),
            (wake, Dialect::Ftrace, V::KswapdWake),
        ] {
            let Some((Decoded::Record(r, _), mask)) = agree(line.as_bytes(), dialect) else {
                panic!("{line}")
            };
            assert_eq!((r.kind, r.cpu, r.pfn), (RecordKind::Vmscan(v), 1, 0), "{line}");
            let readahead =
                "GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL";
            let want = (line == begin).then(|| Gfp::parse(readahead).unwrap());
            assert_eq!(mask, want, "the request's mask: {line}");
            assert_eq!(r.kind.event_name(), Some(v.name()));
        }
        // A begin line whose request cannot be read is an error naming why, not a record.
        for (payload, says) in [
            ("order=nine gfp_flags=GFP_KERNEL", "order"),
            ("order=0", "gfp_flags"),
            ("order=0 gfp_flags=GFP_BOGUS", "GFP_BOGUS"),
        ] {
            let bad = format!(
                "       pageblock-1   [001] ..... 43181.145533: mm_vmscan_direct_reclaim_begin: {payload}"
            );
            assert!(fast(bad.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).is_none(), "{bad}");
            let err = decode(bad.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let sleep = "         kswapd0-45      [000] ..... 43181.145533: mm_vmscan_kswapd_sleep: nid=0";
        assert_eq!(agree(sleep.as_bytes(), Dialect::Ftrace).map(|d| d.0), Some(Decoded::Other));
    }

    /// `mm_vmscan_lru_shrink_inactive` (a real line of B5's run 3) keeps what reclaim's looks
    /// found; the fast path leaves it to the strict one, and a payload it cannot read is an
    /// error naming the field.
    #[test]
    fn lru_shrink_inactive_keeps_the_looks() {
        let line = "           pb-44-2020    [000] .....  2898.511146: mm_vmscan_lru_shrink_inactive: nid=0 \
                    nr_scanned=512 nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 \
                    nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=512 nr_unmap_fail=0 priority=12 \
                    flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC";
        assert!(fast(line.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).is_none());
        let Ok(Decoded::Record(r, pid)) =
            decode(line.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new())
        else {
            panic!("{line}")
        };
        let want = crate::ShrinkInactive {
            scanned: 512,
            reclaimed: 0,
            activated: 0,
            ref_keep: 512,
            priority: 12,
            file: false,
        };
        assert_eq!((r.kind, pid), (RecordKind::Vmscan(crate::VmscanEvent::LruShrinkInactive(want)), 2020));
        assert_eq!(r.kind.event_name(), Some("mm_vmscan_lru_shrink_inactive"));
        let bad = line.replace("nr_ref_keep=512", "nr_ref_keep=lots");
        let err = decode(bad.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).unwrap_err();
        assert!(err.contains("nr_ref_keep"), "{err}");
        let huge = line.replace("nr_scanned=512", "nr_scanned=70000");
        let Ok(Decoded::Record(r, _)) = decode(huge.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new())
        else {
            panic!("{huge}")
        };
        let RecordKind::Vmscan(crate::VmscanEvent::LruShrinkInactive(s)) = r.kind else { panic!() };
        assert_eq!(s.scanned, u16::MAX, "held at the most 16 bits hold");
    }

    /// `mm_compaction_try_to_compact_pages` keeps the request that asked and its priority,
    /// its mask interned like an allocation's; a line whose fields cannot be read is an
    /// error naming why.
    #[test]
    fn try_to_compact_pages_keeps_the_request() {
        let line = "       pageblock-3704    [000] .....   394.002627: mm_compaction_try_to_compact_pages: \
                    order=9 gfp_mask=GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE priority=2";
        let mut g = GfpTable::new();
        let Ok(Decoded::Record(r, _)) = decode(line.as_bytes(), true, Dialect::Ftrace, &mut g) else {
            panic!()
        };
        let RecordKind::TryToCompactPages { order, gfp, priority, need_resched } = r.kind else {
            panic!("{:?}", r.kind)
        };
        assert_eq!((order, priority, r.cpu, need_resched), (9, 2, 0, Some(false)));
        let set = line.replace("[000] .....", "[000] .N...");
        let Ok(Decoded::Record(r, _)) = decode(set.as_bytes(), true, Dialect::Ftrace, &mut g) else {
            panic!()
        };
        assert!(matches!(r.kind, RecordKind::TryToCompactPages { need_resched: Some(true), .. }));
        assert_eq!(g.get(gfp), Some(Gfp::parse("GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE").unwrap()));
        assert_eq!(r.kind.event_name(), Some("mm_compaction_try_to_compact_pages"));
        for (payload, says) in [
            ("order=9 gfp_mask=GFP_TRANSHUGE priority=7", "priority 7"),
            ("order=9 gfp_mask=GFP_TRANSHUGE priority=-1", "priority -1"),
            ("order=99 gfp_mask=GFP_TRANSHUGE priority=2", "order 99"),
            ("order=9 gfp_mask=GFP_BOGUS priority=2", "GFP_BOGUS"),
        ] {
            let bad = format!(
                "       pageblock-1   [001] ..... 43181.145533: mm_compaction_try_to_compact_pages: {payload}"
            );
            let err = decode(bad.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn perf_script_lines_take_the_fast_path() {
        for l in PERF {
            assert!(agree(l.as_bytes(), Dialect::PerfScript).is_some(), "{l}");
            assert!(fast(l.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).is_none());
        }
    }

    #[test]
    fn the_strict_path_reads_what_the_fast_path_leaves() {
        let mut g = GfpTable::new();
        let lost = decode(b"CPU:1 [LOST 9 EVENTS]", true, Dialect::Ftrace, &mut g);
        assert_eq!(lost, Ok(Decoded::Lost { cpu: 1, events: LostEvents::new(Some(9)) }));
        let sleep =
            b"      kcompactd0-36      [001] .....   495.508676: mm_compaction_kcompactd_sleep: nid=0";
        assert!(fast(sleep, true, Dialect::Ftrace, &mut g).is_none());
        let Ok(Decoded::Record(r, _)) = decode(sleep, true, Dialect::Ftrace, &mut g) else { panic!() };
        assert_eq!(
            r.kind,
            RecordKind::Compaction(pageblock_formats::compaction::CompactionEventKind::KcompactdSleep)
        );
        let tgid = b"            bash-2783    (   2783) [000] .....   123.000007: mm_page_free: page=000000007d337ca8 pfn=0x14d0f8 order=0";
        assert!(matches!(decode(tgid, true, Dialect::Ftrace, &mut g), Ok(Decoded::Record(..))));
        let other = b"          <idle>-0       [001] d..2.   495.200000: sched_switch: prev_comm=swapper/1";
        assert_eq!(decode(other, true, Dialect::Ftrace, &mut g), Ok(Decoded::Other));
        let top = b"  a-1 [000] ..... 1.000000: mm_page_free: page=1 pfn=0x1 order=10";
        assert!(matches!(decode(top, true, Dialect::Ftrace, &mut g), Ok(Decoded::Record(..))));
        let negative = b"  a-1 [000] ..... 1.000000: mm_page_free: page=1 pfn=0x1 order=-1";
        assert!(decode(negative, true, Dialect::Ftrace, &mut g).unwrap_err().contains("not a page order"));
        assert!(decode(b"\xff", false, Dialect::Ftrace, &mut g).unwrap_err().contains("UTF-8"));
        assert!(decode(b"# \xff", false, Dialect::Ftrace, &mut g).is_err(), "a comment must be UTF-8 too");
        assert_eq!(decode("# é".as_bytes(), false, Dialect::Ftrace, &mut g), Ok(Decoded::Comment));
    }

    /// Regression: any order up to 255 was a record, and a replay walked 2^order pages.
    #[test]
    fn orders_above_max_page_order_are_bad_lines() {
        let head = "  a-1 [000] ..... 1.000000: ";
        for (payload, what) in [
            ("mm_page_alloc: page=1 pfn=0x1 order=99 migratetype=0 gfp_flags=GFP_KERNEL", "order 99"),
            ("mm_page_free: page=1 pfn=0x1 order=11", "order 11"),
            ("mm_page_free: page=1 pfn=0x1 order=2147483647", "order 2147483647"),
            ("mm_page_alloc_zone_locked: page=1 pfn=0x1 order=40 migratetype=1 percpu_refill=1", "order 40"),
            ("mm_page_pcpu_drain: page=1 pfn=0x1 order=255 migratetype=1", "order 255"),
            (
                "mm_page_alloc_extfrag: page=1 pfn=0x1 alloc_order=0 fallback_order=64 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1",
                "fallback_order 64",
            ),
        ] {
            let line = format!("{head}{payload}");
            let err = decode(line.as_bytes(), true, Dialect::Ftrace, &mut GfpTable::new()).unwrap_err();
            assert!(err.ends_with(&format!("{what} exceeds MAX_PAGE_ORDER 10")), "{line}: {err}");
        }
    }

    /// A real line of each kind, for mutation.
    fn sample_lines() -> Vec<(String, Dialect)> {
        let text = trace_full();
        let mut v: Vec<(String, Dialect)> =
            text.lines().take(60).map(|l| (l.to_owned(), Dialect::Ftrace)).collect();
        v.extend(PERF.iter().map(|l| ((*l).to_owned(), Dialect::PerfScript)));
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever a mutated real line becomes, the fast path either declines or agrees with
        /// the strict parsers, and nothing panics.
        #[test]
        fn mutated_lines_agree_or_fall_back(idx in any::<prop::sample::Index>(), pos in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<bool>()) {
            let lines = SAMPLES.with(|s| s.clone());
            let (line, dialect) = &lines[idx.index(lines.len())];
            let mut b = line.clone().into_bytes();
            let i = pos.index(b.len());
            if cut { b.truncate(i) } else { b[i] = byte }
            agree(&b, *dialect);
            let _ = decode(&b, b.is_ascii(), *dialect, &mut GfpTable::new());
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300)) {
            for d in [Dialect::Ftrace, Dialect::PerfScript] {
                agree(&b, d);
                let _ = decode(&b, b.is_ascii(), d, &mut GfpTable::new());
            }
        }

        /// Arbitrary payloads of every compaction event reach the compaction parser.
        #[test]
        fn compaction_payloads_never_panic(kind in 0usize..15, payload in "(?s).{0,120}") {
            let name = pageblock_formats::compaction::CompactionEventKind::ALL[kind].name();
            let line = format!("      kcompactd0-36      [001] .....   495.508676: {name}: {payload}");
            let mut g = GfpTable::new();
            if let Ok(Decoded::Record(r, _)) = decode(line.as_bytes(), line.is_ascii(), Dialect::Ftrace, &mut g) {
                prop_assert_eq!(r.kind.event_name(), Some(name));
            }
        }

        #[test]
        fn line_shaped_noise_never_panics(s in "( {1,3}|[a-z_]{1,8}|-|:|\\[|\\]|[0-9]{1,12}|\\.|=|0x|\\|){0,40}") {
            for d in [Dialect::Ftrace, Dialect::PerfScript] {
                agree(s.as_bytes(), d);
                let _ = decode(s.as_bytes(), s.is_ascii(), d, &mut GfpTable::new());
            }
        }
    }

    thread_local! {
        static SAMPLES: Vec<(String, Dialect)> = sample_lines();
    }
}
