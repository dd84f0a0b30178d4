//! Seed 000, experiment 2: mmtests' pagealloc-micro (order-4 allocations and frees in
//! batches of 1 to 1024) on the fragmented zone, without and with a monitor that reads
//! `/proc/pagetypeinfo` every 10 ms — the walking kind, which takes the zone lock for each
//! order while it counts, and the counting kind, which takes no lock. The kernel's tables
//! (cycles) showed the walking monitor multiplying the latency stddev; with counts the
//! increase was much smaller.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pageblock::{Allocator, Gfp, Pfn};

use super::{mean, stddev, verdict_from, Measure, Section, SeedsConfig, SeedsReport, Spec};
use crate::compare::{Better, Row, Table};

/// Order of every request (mmtests' PAGEALLOC_ORDER_MIN/MAX = 4 in the seed).
const ORDER: u32 = 4;
/// Monitor period (mmtests' MONITOR_UPDATE_FREQUENCY in the seed: 10 ms).
const PERIOD: Duration = Duration::from_millis(10);
/// Reads each monitored run needs for a verdict: half a second of monitoring; with fewer,
/// the latency stddev barely sees the monitor and the comparison is noise.
const MIN_READS: u64 = 50;

/// Which monitor runs next to the benchmark.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Monitor {
    None,
    Walk,
    Counts,
}

/// Per batch size: the per-page alloc and free latencies (ns) of each iteration.
struct Samples {
    alloc: Vec<Vec<f64>>,
    free: Vec<Vec<f64>>,
}

fn batches(quick: bool) -> Vec<usize> {
    let top = if quick { 64 } else { 1024 };
    std::iter::successors(Some(1usize), |b| (*b < top).then_some(b * 2)).collect()
}

/// pagealloc-micro: for each batch size, `iters` times allocate `batch` order-4 blocks and
/// free them, timing each half; the first two samples of each size are warm-up and dropped.
fn pagealloc_micro(a: &Allocator, sizes: &[usize], iters: usize) -> Samples {
    let mut s = Samples { alloc: Vec::new(), free: Vec::new() };
    let mut held: Vec<Pfn> = Vec::with_capacity(1024);
    for &batch in sizes {
        let (mut alloc, mut free) = (Vec::new(), Vec::new());
        for i in 0..iters + 2 {
            held.clear();
            let t = Instant::now();
            for _ in 0..batch {
                if let Ok(p) = a.alloc_pages(ORDER, Gfp::KERNEL) {
                    held.push(p);
                }
            }
            let ta = t.elapsed().as_nanos() as f64 / batch as f64;
            let t = Instant::now();
            for &p in &held {
                a.free_pages(p, ORDER).expect("freeing our own block");
            }
            let tf = t.elapsed().as_nanos() as f64 / batch as f64;
            if i >= 2 {
                alloc.push(ta);
                free.push(tf);
            }
        }
        s.alloc.push(alloc);
        s.free.push(free);
    }
    s
}

/// Run pagealloc-micro with `monitor` reading pagetypeinfo on another thread.
fn with_monitor(a: &Allocator, monitor: Monitor, sizes: &[usize], iters: usize) -> (Samples, u64) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut reads = 0u64;
            while monitor != Monitor::None && !stop.load(Ordering::Relaxed) {
                let text = match monitor {
                    Monitor::Walk => a.pagetypeinfo_walk().render(),
                    _ => a.pagetypeinfo().render(),
                };
                std::hint::black_box(text);
                reads += 1;
                std::thread::sleep(PERIOD);
            }
            reads
        });
        let samples = pagealloc_micro(a, sizes, iters);
        stop.store(true, Ordering::Relaxed);
        (samples, reader.join().expect("monitor thread"))
    })
}

/// Zone lock acquisitions of one monitor read (deterministic: the walk takes the lock once
/// per order, the counts never).
fn lock_holds_per_read(a: &Allocator, monitor: Monitor) -> u64 {
    let before = a.zone_lock_acquisitions();
    match monitor {
        Monitor::Walk => drop(a.pagetypeinfo_walk()),
        _ => drop(a.pagetypeinfo()),
    }
    a.zone_lock_acquisitions() - before
}

/// A summary statistic of a sample.
type Statistic = fn(&[f64]) -> f64;

fn rows(sizes: &[usize], base: &Samples, mon: &Samples) -> Vec<Row> {
    let mut rows = Vec::new();
    let stats: [(&str, Statistic); 3] = [
        ("Min", |v| v.iter().copied().fold(f64::INFINITY, f64::min)),
        ("Stddev", stddev),
        ("Max", |v| v.iter().copied().fold(0.0, f64::max)),
    ];
    for (stat, f) in stats {
        for (kind, b, m) in [("alloc", &base.alloc, &mon.alloc), ("free", &base.free, &mon.free)] {
            for (i, size) in sizes.iter().enumerate() {
                rows.push(Row {
                    stat: stat.into(),
                    op: format!("{kind}-odr{ORDER}-{size}"),
                    better: Better::Lower,
                    values: vec![f(&b[i]), f(&m[i])],
                });
            }
        }
    }
    rows
}

/// Mean over batch sizes of the alloc latency stddev.
fn alloc_stddev(s: &Samples) -> f64 {
    mean(&s.alloc.iter().map(|v| stddev(v)).collect::<Vec<_>>())
}

/// Run the experiment on the fragmented allocator.
pub fn run(cfg: &SeedsConfig, a: &Allocator, report: &mut SeedsReport) {
    let sizes = batches(cfg.quick);
    // Enough iterations for the benchmark to run for seconds, so a 10 ms monitor gets many
    // reads in (mmtests runs pagealloc-micro for minutes).
    let iters = if cfg.quick { 10 } else { 4000 };
    let (mut stddevs, mut fewest_reads) = (Vec::new(), u64::MAX);
    for (monitor, label, name) in [
        (Monitor::Walk, "vanilla (walk)", "monitor_alloc_stddev_walk_increase"),
        (Monitor::Counts, "patched (counts)", "monitor_alloc_stddev_counts_increase"),
    ] {
        let (base, _) = with_monitor(a, Monitor::None, &sizes, iters);
        let (mon, reads) = with_monitor(a, monitor, &sizes, iters);
        let (b, m) = (alloc_stddev(&base), alloc_stddev(&mon));
        stddevs.push((b, m));
        fewest_reads = fewest_reads.min(reads);
        report.experiments.push(Spec { name, metric: format!("order-{ORDER} alloc latency stddev (mean over batch sizes), {label} monitor: no-monitor vs monitor"), unit: "ns", measure: Measure::WallClock }.lower_is_better(("no-monitor", "monitor"), (b, m)));
        let holds = lock_holds_per_read(a, monitor);
        report.sections.push(Section {
            title: format!(
                "seed 000: pagealloc-micro order {ORDER}, {label} monitor every 10 ms ({reads} reads)"
            ),
            table: Table {
                headers: vec![vec![label.into(), label.into()], vec!["no-monitor".into(), "monitor".into()]],
                rows: rows(&sizes, &base, &mon),
            },
            notes: vec![format!(
                "ns per page, wall clock (noisy); each monitor read took the zone lock {holds} times."
            )],
        });
    }
    report.experiments.push(
        Spec {
            name: "monitor_zone_lock_holds",
            metric: "zone lock acquisitions per monitor read".into(),
            unit: "acquisitions",
            measure: Measure::Deterministic,
        }
        .lower_is_better(
            ("walk", "counts"),
            (lock_holds_per_read(a, Monitor::Walk) as f64, lock_holds_per_read(a, Monitor::Counts) as f64),
        ),
    );
    let (walk, counts) = (stddevs[0].1 - stddevs[0].0, stddevs[1].1 - stddevs[1].0);
    let verdict = verdict_from(fewest_reads, MIN_READS, "read", || {
        if counts <= walk / 3.0 { "met" } else { "NOT met" }.to_owned()
    });
    if let Some(e) = report.experiments.iter_mut().find(|e| e.name == "monitor_alloc_stddev_counts_increase")
    {
        e.verdict = Some(verdict.clone());
    }
    if let Some(last) = report.sections.last_mut() {
        last.notes.push(format!(
            "alloc stddev increase from the monitor: walk {walk:+.1} ns, counts {counts:+.1} ns (goal: counts at most a third of walk: {verdict})."
        ));
    }
}
