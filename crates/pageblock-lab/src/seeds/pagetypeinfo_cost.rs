//! Seed 000, experiment 1: what one read of `/proc/pagetypeinfo` costs, walking the free
//! lists under the zone lock (capped at 100000 per list) versus reading the per-migratetype
//! counts, on a freshly booted 16 GiB zone and after the `fragment` workload. The kernel saw
//! 700.9 → 268.6 µs after boot and 28.7 ms → 269.8 µs after building a kernel.

use std::time::Instant;

use pageblock::{Allocator, ZoneConfig};

use super::{mean, Measure, Section, SeedsConfig, SeedsReport, Spec};
use crate::compare::{Better, Row, Table};

/// Deterministic cost of one read: list entries visited (walk) or counters read (counts),
/// plus the pageblocks sampled for the block table (both modes do that). Read off the report
/// itself: each free cell is a list walked up to the cap or one counter read.
fn work(a: &Allocator) -> (f64, f64) {
    let report = a.pagetypeinfo();
    let (mut visited, mut counters, mut blocks) = (0, 0, 0);
    for node in &report.nodes {
        for cell in node.free.iter().flat_map(|row| &row.counts) {
            visited += cell.count;
            counters += 1;
        }
        blocks += node.blocks.rows.iter().flat_map(|row| &row.counts).sum::<u64>();
    }
    ((visited + blocks) as f64, (counters + blocks) as f64)
}

/// Microseconds per read, `reads` times.
fn time_reads(reads: usize, read: impl Fn() -> String) -> Vec<f64> {
    (0..reads)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(read());
            t.elapsed().as_nanos() as f64 / 1000.0
        })
        .collect()
}

/// Run the experiment on a fresh zone and on `fragmented`.
pub fn run(cfg: &SeedsConfig, fragmented: &Allocator, report: &mut SeedsReport) {
    let reads = if cfg.quick { 20 } else { 10_000 };
    let fresh = Allocator::single_zone(ZoneConfig::normal(cfg.zone_bytes()), cfg.policy.policy.clone())
        .expect("16 GiB zone");
    let mut rows = Vec::new();
    let sides = ("walk", "counts");
    for (label, name, a) in [
        ("fresh", "pagetypeinfo_fresh", &fresh),
        ("after-fragment", "pagetypeinfo_after_fragment", fragmented),
    ] {
        let walk = time_reads(reads, || a.pagetypeinfo_walk().render());
        let counts = time_reads(reads, || a.pagetypeinfo().render());
        let (w, c) = (mean(&walk), mean(&counts));
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        rows.push(Row {
            stat: "Amean".into(),
            op: format!("{label}-us"),
            better: Better::Lower,
            values: vec![w, c],
        });
        rows.push(Row {
            stat: "Max".into(),
            op: format!("{label}-us"),
            better: Better::Lower,
            values: vec![max(&walk), max(&counts)],
        });
        let (ww, cw) = work(a);
        rows.push(Row {
            stat: "Work".into(),
            op: format!("{label}-units"),
            better: Better::Lower,
            values: vec![ww, cw],
        });
        report.experiments.push(
            Spec {
                name,
                metric: format!("mean time of one read ({reads} reads)"),
                unit: "us",
                measure: Measure::WallClock,
            }
            .lower_is_better(sides, (w, c)),
        );
        report.experiments.push(
            Spec {
                name: if label == "fresh" {
                    "pagetypeinfo_fresh_work"
                } else {
                    "pagetypeinfo_after_fragment_work"
                },
                metric: "list entries visited or counters read, plus pageblocks sampled, per read".into(),
                unit: "work units",
                measure: Measure::Deterministic,
            }
            .lower_is_better(sides, (ww, cw)),
        );
    }
    let ratio = |n: &str| report.get(n).map_or(f64::NAN, |e| e.improvement_ratio);
    report.sections.push(Section {
        title: format!("seed 000: /proc/pagetypeinfo read cost, {reads} reads of a 16 GiB zone"),
        table: Table { headers: vec![vec!["walk".into(), "counts".into()]], rows },
        notes: vec![
            "Amean/Max rows: wall clock (noisy); Work rows: deterministic.".into(),
            format!(
                "counts is {:.1}x cheaper after boot and {:.1}x after fragmentation (kernel: 2.6x and 106x).",
                ratio("pagetypeinfo_fresh"),
                ratio("pagetypeinfo_after_fragment")
            ),
        ],
    });
}
