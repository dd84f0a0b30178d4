//! Seed 001: prefetch the buddies of the first `batch` pages of a bulk free, in both kernel
//! settings and at two memmap strides.
//!
//! * **2018** (`BulkFree::TwoPass`, Aaron Lu): the batch is picked off the per-CPU lists
//!   outside the zone lock, and the prefetch issued there; will-it-scale page_fault1 at full
//!   load gained +2.3% to +6.8% (the seed's own table, against its patch 2/3).
//! * **2022** (`BulkFree::SinglePass`, Mel Gorman): one pass under the zone lock, the prefetch
//!   issued just before the merge that reads it; removing it then made a bulk-free-heavy
//!   workload 2.5% faster (elapsed), so the prefetch cost about that much.
//!
//! Strides: 12-byte records (the fields alone), 64 (the kernel's `struct page`) and 128, all
//! in the kernel's memmap shape (`MemmapLayout::Records`) so the prefetched line is the one
//! the merge reads. At 64 bytes an order-0 buddy is the neighbouring line, which the CPU's
//! adjacent-line prefetcher may fetch anyway; at 128 it is not. Two threads, one per CPU, each free their own pages in random order at once,
//! so the zone lock is contended as under page_fault1; every free past `high` drains a batch.

use std::sync::Barrier;
use std::time::Instant;

use pageblock::{Allocator, BulkFree, Gfp, MemmapLayout, Policy, SpeedOnly, ZoneConfig};

use super::{verdict_from, Experiment, Measure, Section, SeedsConfig, SeedsReport, Spec};
use crate::compare::{Better, Row, Table};
use crate::prng::Prng;
use crate::wallclock::{median, pin_to};

/// One of the kernel's two shapes of the bulk free, with what the kernel saw when the
/// prefetch went in (2018) or came out (2022).
struct KernelSetting {
    label: &'static str,
    bulk_free: BulkFree,
    /// The kernel's change in speed with the prefetch on, as a range in percent.
    kernel: (f64, f64),
    kernel_note: &'static str,
}

const KERNELS: [KernelSetting; 2] = [
    KernelSetting {
        label: "2018 two-pass",
        bulk_free: BulkFree::TwoPass,
        kernel: (2.3, 6.8),
        kernel_note: "+2.3..+6.8% (page_fault1, 2018)",
    },
    KernelSetting {
        label: "2022 single-pass",
        bulk_free: BulkFree::SinglePass,
        kernel: (-2.5, -2.5),
        kernel_note: "-2.5% (removal made it 2.5% faster, 2022)",
    },
];

/// The record sizes, each with its rows' JSON names (in [`KERNELS`] order).
const STRIDES: [(u32, [&str; 2]); 3] = [
    (12, ["prefetch_bulk_free_12_2018", "prefetch_bulk_free_12_2022"]),
    (64, ["prefetch_bulk_free_64_2018", "prefetch_bulk_free_64_2022"]),
    (128, ["prefetch_bulk_free_128_2018", "prefetch_bulk_free_128_2022"]),
];

/// A direction is claimed only for a change of at least this much (percent) ...
const NOISE_PCT: f64 = 1.0;
/// ... that at least this share of the repetitions show on their own ...
const AGREEING: f64 = 0.75;
/// ... out of at least this many repetitions.
const MIN_RUNS: u64 = 5;

/// Nanoseconds per free of `n` order-0 pages, half allocated on each of two CPUs, then freed
/// in random order by two threads at once (wall time of both over all frees).
fn bulk_free_ns(
    cfg: &SeedsConfig,
    bytes: u32,
    k: &KernelSetting,
    prefetch: bool,
    n: usize,
    seed: u64,
) -> f64 {
    let zone = ZoneConfig {
        nr_cpus: 2,
        memmap_layout: MemmapLayout::Records(bytes),
        ..ZoneConfig::normal(cfg.zone_bytes())
    };
    let policy = Policy {
        speed_only: SpeedOnly { buddy_prefetch: prefetch, bulk_free: k.bulk_free },
        ..cfg.policy.policy.clone()
    };
    let a = Allocator::single_zone(zone, policy).expect("16 GiB zone");
    let barrier = Barrier::new(2);
    let times: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|c| {
                let (a, barrier) = (&a, &barrier);
                scope.spawn(move || {
                    pin_to(c);
                    let cpu = a.on_cpu(c).expect("the zone has a CPU slot per thread");
                    let mut pages: Vec<_> = (0..n / 2)
                        .map(|_| cpu.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).expect("page"))
                        .collect();
                    Prng::new(seed + c as u64).shuffle(&mut pages);
                    barrier.wait();
                    let t = Instant::now();
                    for p in pages {
                        cpu.free_pages(p, 0).expect("freeing our own page");
                    }
                    (t, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("free thread")).collect()
    });
    let start = times.iter().map(|t| t.0).min().expect("two threads");
    let end = times.iter().map(|t| t.1).max().expect("two threads");
    end.duration_since(start).as_nanos() as f64 / (n / 2 * 2) as f64
}

/// What one setting measured: medians of off and on, and the paired changes.
struct Measured {
    off: f64,
    on: f64,
    /// Per repetition, the speed change with the prefetch on, percent (positive: faster).
    changes: Vec<f64>,
}

impl Measured {
    /// The change between the medians the table shows, percent (positive: faster).
    fn change_pct(&self) -> f64 {
        (self.off / self.on - 1.0) * 100.0
    }

    /// Repetitions whose own change has the same sign as the medians'.
    fn agreeing(&self) -> usize {
        let sign = self.change_pct() > 0.0;
        self.changes.iter().filter(|&&c| (c > 0.0) == sign).count()
    }
}

fn measure(cfg: &SeedsConfig, bytes: u32, k: &KernelSetting, n: usize, reps: u64) -> Measured {
    let (mut off, mut on, mut change) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        // Alternate which side runs first, so a drift of the machine hits both alike.
        let (a, b) = if rep % 2 == 0 {
            let a = bulk_free_ns(cfg, bytes, k, false, n, cfg.seed + rep);
            (a, bulk_free_ns(cfg, bytes, k, true, n, cfg.seed + rep))
        } else {
            let b = bulk_free_ns(cfg, bytes, k, true, n, cfg.seed + rep);
            (bulk_free_ns(cfg, bytes, k, false, n, cfg.seed + rep), b)
        };
        off.push(a);
        on.push(b);
        change.push((a / b - 1.0) * 100.0);
    }
    Measured { off: median(&off), on: median(&on), changes: change }
}

/// Which way the lab went against the kernel, in words: a direction needs a change of at
/// least [`NOISE_PCT`] that [`AGREEING`] of the repetitions show on their own.
fn direction(m: &Measured, kernel: (f64, f64)) -> &'static str {
    let clear = m.change_pct().abs() >= NOISE_PCT && m.agreeing() as f64 >= AGREEING * m.changes.len() as f64;
    if !clear {
        "no clear effect: not reproduced"
    } else if (m.change_pct() > 0.0) == (kernel.0 > 0.0) {
        "same direction: reproduced"
    } else {
        "opposite direction: not reproduced"
    }
}

/// Run the experiment: for each stride and setting, prefetch off and on, alternating, median
/// of the repetitions.
pub fn run(cfg: &SeedsConfig, report: &mut SeedsReport) {
    let (n, reps) = if cfg.quick { (200_000, 1) } else { (3_400_000, 9) };
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "wall clock, two threads freeing at once, median of {reps}; change = speed with the prefetch \
         on, from the medians (positive: faster); runs = repetitions whose own change has that \
         sign; a direction needs |change| >= {NOISE_PCT}% in at least {:.0}% of the runs.",
        AGREEING * 100.0
    )];
    notes.push(format!("{:<24} {:>8} {:>6}  {:<42} verdict", "setting", "change", "runs", "kernel"));
    for (bytes, names) in STRIDES {
        for (k, name) in KERNELS.iter().zip(names) {
            let label = format!("{bytes} B, {}", k.label);
            let m = measure(cfg, bytes, k, n, reps);
            let verdict = verdict_from(reps, MIN_RUNS, "run", || direction(&m, k.kernel).to_owned());
            notes.push(format!(
                "{label:<24} {:>+7.1}% {:>6}  {:<42} {verdict}",
                m.change_pct(),
                format!("{}/{}", m.agreeing(), m.changes.len()),
                k.kernel_note,
            ));
            report.experiments.push(Experiment {
                verdict: Some(verdict),
                ..Spec {
                    name,
                    metric: format!("time per random-order free of {n} pages on two CPUs, {label}"),
                    unit: "ns",
                    measure: Measure::WallClock,
                }
                .lower_is_better(("no prefetch", "prefetch"), (m.off, m.on))
            });
            rows.push(Row {
                stat: label,
                op: "free-ns".into(),
                better: Better::Lower,
                values: vec![m.off, m.on],
            });
        }
    }
    notes.push(
        "the kernel's per-CPU lists thread through struct page, so its walk is a pointer chase; \
         here the lists are rings of indices, and both settings chase the records where the \
         kernel walked (each load's address waits for the previous load)."
            .into(),
    );
    report.sections.push(Section {
        title: format!(
            "seed 001: buddy prefetch in bulk free, {n} random-order frees on 2 CPUs, 2018 and 2022"
        ),
        table: Table { headers: vec![vec!["no-prefetch".into(), "prefetch".into()]], rows },
        notes,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(off: f64, on: f64, changes: &[f64]) -> Measured {
        Measured { off, on, changes: changes.to_vec() }
    }

    #[test]
    fn the_verdict_needs_a_clear_change_that_most_runs_agree_on() {
        let gain = (2.3, 6.8);
        let loss = (-2.5, -2.5);
        let faster = measured(103.0, 100.0, &[2.0, 4.0, 3.0, -1.0]);
        assert_eq!(direction(&faster, gain), "same direction: reproduced");
        assert_eq!(direction(&faster, loss), "opposite direction: not reproduced");
        let slower = measured(100.0, 102.0, &[-2.0, -1.0, -3.0, -2.0]);
        assert_eq!(direction(&slower, loss), "same direction: reproduced");
        let small = measured(100.5, 100.0, &[0.5, 0.4, 0.6, 0.5]);
        assert_eq!(direction(&small, gain), "no clear effect: not reproduced");
        let split = measured(103.0, 100.0, &[3.0, -3.0, 3.0, -3.0]);
        assert_eq!(direction(&split, gain), "no clear effect: not reproduced");
    }
}
