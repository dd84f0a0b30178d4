//! `pageblock lab seeds`: each seed patch's experiment, "before" next to "after", switching
//! only the [`pageblock_core::Policy`] knob (or report mode) the seed changes, on a named
//! policy (`vanilla` unless `--policy` names another).
//!
//! | experiment | seed | before → after |
//! |---|---|---|
//! | [`pagetypeinfo_cost`] | 000 | walk the free lists → read per-migratetype counts |
//! | [`monitor`] | 000 | order-4 alloc/free latency with a pagetypeinfo monitor, walk vs counts |
//! | [`fallback`] | 003 | bulk refills that must fall back, without → with rmqueue mode memory |
//! | [`prefetch`] | 001 | bulk free on two CPUs, 2018 and 2022 settings, 12-, 64- and 128-byte records, prefetch off → on |
//! | [`free_area_layout`] | 002 | `free_area[]` layouts under concurrent allocation: plain, counts, per-list |
//!
//! Every figure says whether it is wall-clock (noisy: compare within one run) or
//! deterministic (work units and counts: the same on every machine for a given seed). `--quick`
//! runs smaller sizes, and CI checks only the deterministic figures.

pub mod fallback;
pub mod free_area_layout;
pub mod monitor;
pub mod pagetypeinfo_cost;
pub mod prefetch;

use pageblock::{Allocator, Policy, ZoneConfig};
use pageblock_core::named_policy::NamedPolicy;
use serde::Serialize;

use crate::compare::Table;
use crate::report::RunReport;
use crate::workload::WorkloadKind;

/// How big to run, and on which policy.
#[derive(Clone, Debug)]
pub struct SeedsConfig {
    /// Small sizes (CI): minutes become seconds, deterministic checks keep their meaning.
    pub quick: bool,
    /// Seed of the workloads.
    pub seed: u64,
    /// Run only the experiments of this seed patch (0 to 3); `None` runs them all.
    pub only: Option<u32>,
    /// The policy each experiment switches its seed's knob on.
    pub policy: NamedPolicy,
}

impl SeedsConfig {
    /// True if the experiments of seed patch `patch` are to run.
    pub fn runs(&self, patch: u32) -> bool {
        self.only.is_none_or(|p| p == patch)
    }

    /// Memory of the simulated zones (16 GiB, as in seed 000's machine).
    pub fn zone_bytes(&self) -> u64 {
        16 << 30
    }

    /// Operations of the `fragment` workload that stands in for "after building a kernel":
    /// enough for the footprint to fill memory, drain and refill (quick runs too: the state,
    /// not the number of measurements, is what makes the deterministic figures meaningful).
    pub fn fragment_ops(&self) -> u64 {
        4_000_000
    }
}

/// One JSON entry: a before/after pair of one metric.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// Stable identifier (`pagetypeinfo_after_fragment`, ...).
    pub name: &'static str,
    /// What was measured.
    pub metric: String,
    /// Unit of the values.
    pub unit: &'static str,
    /// The "before" side.
    pub baseline: &'static str,
    /// The "after" side.
    pub patched: &'static str,
    /// Before.
    pub baseline_value: f64,
    /// After.
    pub patched_value: f64,
    /// Above 1 means the patched side is better (for lower-is-better metrics baseline/patched,
    /// for higher-is-better patched/baseline). A zero denominator counts as 1 (one unit), so
    /// "11 lock holds → 0" reads as 11.
    pub improvement_ratio: f64,
    /// True for work units and counts (machine-independent); false for wall clock.
    pub deterministic: bool,
    /// How the figure compares with the kernel's (`reproduced`, `met`, ...), or why there is
    /// no verdict (`not enough data (1 run; a verdict needs ≥ 5)`); `None` where the
    /// experiment states no verdict.
    pub verdict: Option<String>,
}

/// Whether a figure depends on the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Nanoseconds and rates: noisy, compare within one run.
    WallClock,
    /// Work units and counts: the same everywhere for a given seed.
    Deterministic,
}

/// What an [`Experiment`] entry measures; turned into one with the values of both sides.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Stable identifier.
    pub name: &'static str,
    /// What was measured.
    pub metric: String,
    /// Unit of the values.
    pub unit: &'static str,
    /// Wall clock or deterministic.
    pub measure: Measure,
}

impl Spec {
    /// The entry for a metric where lower is better: `(baseline, patched)` names and values.
    pub fn lower_is_better(self, sides: (&'static str, &'static str), values: (f64, f64)) -> Experiment {
        Experiment {
            name: self.name,
            metric: self.metric,
            unit: self.unit,
            baseline: sides.0,
            patched: sides.1,
            baseline_value: values.0,
            patched_value: values.1,
            improvement_ratio: values.0 / nonzero(values.1),
            deterministic: self.measure == Measure::Deterministic,
            verdict: None,
        }
    }

    /// The entry for a metric where higher is better.
    pub fn higher_is_better(self, sides: (&'static str, &'static str), values: (f64, f64)) -> Experiment {
        Experiment { improvement_ratio: values.1 / nonzero(values.0), ..self.lower_is_better(sides, values) }
    }
}

/// One experiment's printed part.
#[derive(Clone, Debug)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// The compare table.
    pub table: Table,
    /// Lines under the table: what the kernel saw, what to make of it.
    pub notes: Vec<String>,
}

/// Everything `lab seeds` measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SeedsReport {
    /// JSON entries.
    pub experiments: Vec<Experiment>,
    /// Printed sections.
    #[serde(skip)]
    pub sections: Vec<Section>,
}

impl SeedsReport {
    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&Experiment> {
        self.experiments.iter().find(|e| e.name == name)
    }

    /// The printed report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.sections {
            out.push_str(&format!("== {} ==\n", s.title));
            out.push_str(&s.table.render());
            for n in &s.notes {
                out.push_str(&format!("  {n}\n"));
            }
            out.push('\n');
        }
        out
    }
}

/// A 16 GiB runtime allocator after the `fragment` workload (the "after building kernel"
/// state), driven through its own allocation path one operation at a time.
pub fn fragmented_allocator(cfg: &SeedsConfig, policy: Policy) -> (Allocator, RunReport) {
    let a = Allocator::single_zone(ZoneConfig::normal(cfg.zone_bytes()), policy).expect("16 GiB zone");
    let mut w = WorkloadKind::Fragment.build(a.managed_pages(), a.nr_cpus(), cfg.seed);
    let mut report = RunReport::default();
    for _ in 0..cfg.fragment_ops() {
        w.step(&a, &mut report);
    }
    (a, report)
}

/// Run every experiment; `progress(step)` names each step as it starts.
pub fn run(cfg: &SeedsConfig, progress: &mut dyn FnMut(&str)) -> SeedsReport {
    let mut report = SeedsReport::default();
    if cfg.runs(0) {
        progress("building the fragmented zone");
        let (fragmented, _) = fragmented_allocator(cfg, cfg.policy.policy.clone());
        progress("pagetypeinfo read cost (seed 000)");
        pagetypeinfo_cost::run(cfg, &fragmented, &mut report);
        progress("pagealloc-micro with a monitor (seed 000)");
        monitor::run(cfg, &fragmented, &mut report);
    }
    if cfg.runs(3) {
        progress("rmqueue fallback (seed 003)");
        fallback::run(cfg, &mut report);
    }
    if cfg.runs(1) {
        progress("buddy prefetch (seed 001)");
        prefetch::run(cfg, &mut report);
    }
    if cfg.runs(2) {
        progress("free_area layout (seed 002)");
        free_area_layout::run(cfg, &mut report);
    }
    report
}

/// `verdict()` if there are at least `needed` samples (`noun`s), else that there is not
/// enough data for one: a wall-clock verdict from one run or no reads is noise.
pub fn verdict_from(samples: u64, needed: u64, noun: &str, verdict: impl FnOnce() -> String) -> String {
    if samples >= needed {
        return verdict();
    }
    let plural = if samples == 1 { "" } else { "s" };
    format!("not enough data ({samples} {noun}{plural}; a verdict needs ≥ {needed})")
}

/// `x`, or 1 if it is zero (a ratio's denominator).
fn nonzero(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        x
    }
}

/// Mean of `v` (0 for none).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Sample standard deviation of `v` (0 for fewer than two).
pub fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}
