//! Trace lines with every field at its extremes (orders 0-255, pfns near `u64::MAX`, huge
//! timestamps, CPUs beyond any machine, gfp garbage) through `trace stats` and `replay`:
//! each finishes in bounded time without a panic, and the line either decodes or is a
//! `FILE:LINE: reason` error (which `--skip-bad` skips).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pageblock_core::named_policy::policy_named;
use pageblock_lab::replay;
use pageblock_trace::{TraceReader, TraceStats};
use proptest::prelude::*;

/// Per line and per command: generous for a loaded CI machine, far below a walk of 2^40
/// pages or of years of simulated seconds.
const BOUND: Duration = Duration::from_secs(20);

/// `f` on a thread of its own, or a failure naming `what` if it takes longer than [`BOUND`]
/// (the thread is left behind: a hang must fail the test, not stall it).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(BOUND) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no answer in {BOUND:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

/// One event line of the kernel's layout, whatever its fields.
#[derive(Clone, Debug)]
struct Extreme {
    cpu: u32,
    secs: u64,
    usecs: u32,
    pfn: u64,
    order: i64,
    second_order: i64,
    migratetype: i32,
    gfp: String,
    event: usize,
}

impl Extreme {
    fn render(&self) -> String {
        let Extreme { cpu, secs, usecs, pfn, order, second_order, migratetype: mt, .. } = self;
        let head = format!("           tar-1234    [{cpu:03}] .....  {secs:>5}.{usecs:06}: ");
        let page = format!("page=00000000deadbeef pfn={pfn:#x}");
        match self.event {
            0 => format!("{head}mm_page_alloc: {page} order={order} migratetype={mt} gfp_flags={}", self.gfp),
            1 => format!("{head}mm_page_free: {page} order={order}"),
            2 => format!("{head}mm_page_free_batched: {page} order=0"),
            3 => format!("{head}mm_page_alloc_zone_locked: {page} order={order} migratetype={mt} percpu_refill=1"),
            4 => format!("{head}mm_page_pcpu_drain: {page} order={order} migratetype={mt}"),
            5 => format!(
                "{head}mm_page_alloc_extfrag: {page} alloc_order={order} fallback_order={second_order} \
                 pageblock_order=9 alloc_migratetype={mt} fallback_migratetype=1 fragmenting=0 change_ownership=1"
            ),
            _ => format!("CPU:{cpu} [LOST {pfn} EVENTS]"),
        }
    }
}

fn extreme() -> impl Strategy<Value = Extreme> {
    let cpu =
        prop_oneof![Just(0u32), Just(1), Just(1023), Just(1024), Just(65_535), Just(u32::MAX), any::<u32>()];
    let secs = prop_oneof![
        Just(0u64),
        Just(99_999),
        Just(1_000_000_000_000),
        Just(u64::MAX / 1_000_000),
        Just(u64::MAX),
        any::<u64>()
    ];
    let pfn = prop_oneof![
        Just(0u64),
        Just(0x10_0000),
        Just(0x10_0000 + (1 << 24)),
        Just(1 << 40),
        Just(u64::MAX - 1023),
        Just(u64::MAX),
        any::<u64>()
    ];
    let order = prop_oneof![0i64..=255, Just(-1), Just(i64::from(i32::MAX)), Just(i64::from(u32::MAX))];
    let migratetype = prop_oneof![-1i32..=7, Just(127), Just(128), Just(i32::MIN), Just(i32::MAX)];
    let gfp = prop_oneof![
        Just("GFP_KERNEL".to_owned()),
        Just("GFP_TRANSHUGE".to_owned()),
        Just("none".to_owned()),
        Just(String::new()),
        Just("GFP_BOGUS|__GFP_ZERO".to_owned()),
        Just("0xffffffffffffffff".to_owned()),
        "[A-Z_|0-9x]{0,60}",
    ];
    (cpu, secs, 0u32..1_000_000, pfn, order.clone(), order, migratetype, gfp, 0usize..7).prop_map(
        |(cpu, secs, usecs, pfn, order, second_order, migratetype, gfp, event)| Extreme {
            cpu,
            secs,
            usecs,
            pfn,
            order,
            second_order,
            migratetype,
            gfp,
            event,
        },
    )
}

/// A trace of three lines, the extreme one second, in a directory of its own, with the
/// real 2-CPU machine's `before.zoneinfo` if `recorded`.
fn write_trace(line: &str, recorded: bool) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pageblock-extremes-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if recorded {
        let snapshots =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../pageblock-formats/tests/data/snapshots");
        std::fs::copy(snapshots.join("before.zoneinfo"), dir.join("before.zoneinfo")).unwrap();
    }
    let path = dir.join("trace.txt");
    let ok = "           tar-1234    [000] .....      1.000000: ";
    let text = format!(
        "{ok}mm_page_alloc: page=00000000deadbeef pfn=0x100000 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n\
         {line}\n\
         {ok}mm_page_free: page=00000000deadbeef pfn=0x100000 order=0\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `trace stats`: the statistics, or the bad line's `FILE:2: reason`.
fn stats(path: &Path, skip_bad: bool) -> Result<TraceStats, String> {
    let path = path.to_owned();
    bounded("trace stats", move || {
        let mut reader = TraceReader::open(&path).map_err(|e| e.to_string())?.skip_bad_lines(skip_bad);
        TraceStats::collect(&mut reader, &mut |_| {}).map_err(|e| e.to_string())
    })
}

fn replay(path: &Path, skip_bad: bool) -> Result<replay::ReplayReport, String> {
    let path = path.to_owned();
    bounded("replay", move || {
        replay::run(
            &path,
            &[policy_named("vanilla").unwrap()],
            replay::Options { skip_bad, ..Default::default() },
            &mut |_| {},
        )
    })
}

/// Runs one extreme line through both commands and checks the outcomes.
fn check(line: &str, recorded: bool) {
    let path = write_trace(line, recorded);
    let at_line_2 = format!("{}:2: ", path.display());
    match stats(&path, false) {
        Ok(s) => assert_eq!(s.lines, 3, "{line}"),
        Err(e) => {
            assert!(e.starts_with(&at_line_2), "{line}: {e}");
            let skipped = stats(&path, true).unwrap_or_else(|e| panic!("{line}: --skip-bad: {e}"));
            assert_eq!(skipped.bad_lines, 1, "{line}");
        }
    }
    // Replay decodes the same way, and also refuses CPUs its machine lacks and a machine
    // larger than it simulates (the pfns size it); each refusal names the line or the pfns.
    let refused = |e: &str| e.starts_with(&at_line_2) || e.contains("the trace's pfns");
    match replay(&path, false) {
        Ok(r) => assert_eq!(r.trace.lines, 3, "{line}"),
        Err(e) if e.starts_with(&at_line_2) => {
            if let Err(e) = replay(&path, true) {
                assert!(refused(&e), "{line}: --skip-bad: {e}");
            }
        }
        Err(e) => assert!(refused(&e), "{line}: {e}"),
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_field_at_its_extremes_finishes_in_bounded_time(e in extreme(), recorded in prop::bool::weighted(0.25)) {
        check(&e.render(), recorded);
    }
}

/// Every order a `u8` held, on each event that has one: decoded up to MAX_PAGE_ORDER,
/// `FILE:LINE: order N exceeds MAX_PAGE_ORDER 10` above, and nothing walks 2^order pages.
#[test]
fn every_order_of_every_event() {
    for order in 0..=255 {
        for event in [0, 1, 3, 4, 5] {
            let e = Extreme {
                cpu: 1,
                secs: 1,
                usecs: 5,
                pfn: 0x100200,
                order,
                second_order: 0,
                migratetype: 1,
                gfp: "GFP_TRANSHUGE".to_owned(),
                event,
            };
            let path = write_trace(&e.render(), false);
            match stats(&path, false) {
                Ok(_) => assert!(order <= 10, "order {order} of event {event} decoded"),
                Err(err) => {
                    assert!(order > 10, "{err}");
                    let what = if event == 5 { "alloc_order" } else { "order" };
                    let want = format!("{}:2: ", path.display());
                    assert!(err.starts_with(&want), "{err}");
                    assert!(err.ends_with(&format!("{what} {order} exceeds MAX_PAGE_ORDER 10")), "{err}");
                }
            }
            if event <= 1 {
                check(&e.render(), false);
            }
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
        }
    }
}
