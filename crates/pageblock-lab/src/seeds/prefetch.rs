//! Seed 001: prefetch the buddies of the first `batch` pages of a bulk free before taking
//! the zone lock. The effect needs a memmap larger than the last-level cache: a 16 GiB zone's
//! memmap is 48 MiB here (this machine's L3: 32 MiB). Pages are allocated on one CPU, then
//! freed in random order on it, so every free past `high` drains a batch to the buddy lists.
//! The kernel saw +2% to +7% (will-it-scale page_fault1).

use std::time::Instant;

use pageblock::{Allocator, Gfp, Policy, ZoneConfig};

use super::{Measure, Section, SeedsConfig, SeedsReport, Spec};
use crate::compare::{Better, Row, Table};
use crate::fastpath::median;
use crate::prng::Prng;

/// Nanoseconds per free of `n` order-0 pages freed in random order.
fn bulk_free_ns(cfg: &SeedsConfig, prefetch: bool, n: usize, seed: u64) -> f64 {
    let a = Allocator::single_zone(
        ZoneConfig::normal(cfg.zone_bytes()),
        Policy { buddy_prefetch: prefetch, ..Policy::default() },
    )
    .expect("16 GiB zone");
    let cpu = a.on_cpu(0);
    let mut pages: Vec<_> =
        (0..n).map(|_| cpu.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).expect("page")).collect();
    let mut rng = Prng::new(seed);
    for i in (1..pages.len()).rev() {
        pages.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let t = Instant::now();
    for p in pages {
        cpu.free_pages(p, 0).expect("freeing our own page");
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// Run the experiment: prefetch off and on, alternating, median of the repetitions.
pub fn run(cfg: &SeedsConfig, report: &mut SeedsReport) {
    let (n, reps) = if cfg.quick { (200_000, 1) } else { (3_400_000, 3) };
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        off.push(bulk_free_ns(cfg, false, n, cfg.seed + rep));
        on.push(bulk_free_ns(cfg, true, n, cfg.seed + rep));
    }
    let (a, b) = (median(&off), median(&on));
    report.experiments.push(
        Spec {
            name: "prefetch_bulk_free",
            metric: format!("time per random-order free of {n} pages (bulk frees past pcp high)"),
            unit: "ns",
            measure: Measure::WallClock,
        }
        .lower_is_better(("no prefetch", "prefetch"), (a, b)),
    );
    report.sections.push(Section {
        title: format!("seed 001: buddy prefetch in bulk free, {n} random-order frees, 48 MiB memmap"),
        table: Table {
            headers: vec![vec!["no-prefetch".into(), "prefetch".into()]],
            rows: vec![Row {
                stat: "Median".into(),
                op: "free-ns".into(),
                better: Better::Lower,
                values: vec![a, b],
            }],
        },
        notes: vec![format!(
            "wall clock, median of {reps}; throughput change {:+.1}% (kernel: +2% to +7%).",
            (a / b - 1.0) * 100.0
        )],
    });
}
