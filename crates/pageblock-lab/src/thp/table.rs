//! The THP lab's report in seed 004's layout:
//!
//! ```text
//!                                                      before                   after
//!     Hugealloc Time mean               52739.45 (    +0.00%)   28904.00 (   -45.19%)
//! ```
//!
//! Four spaces, the row name left-aligned in 30 columns, then per policy the mean over runs
//! (`%12.2f` for the first, `%11.2f` after a column) and its change from the first policy
//! (` (%+9.2f%)`, plain `new/base - 1`: a minus means fewer, whatever is better). A zero
//! baseline with a non-zero value prints `+100.00%` (mmtests' convention). Then the per-run
//! THP success, run after run.

use std::fmt::Write as _;

use pageblock_core::VmEvent;

use super::{RunResult, ThpReport};

/// A row: its name and how to get the figure from a run.
struct Row {
    name: &'static str,
    figure: Figure,
}

/// A row's figure in one run.
enum Figure {
    /// A vm event counter's increase.
    Event(VmEvent),
    /// The sum of two counters' increases.
    Sum(VmEvent, VmEvent),
    /// The first counter's increase less the second's.
    Diff(VmEvent, VmEvent),
    /// Anything else.
    Of(fn(&RunResult) -> f64),
}

impl Row {
    fn value(&self, r: &RunResult) -> f64 {
        let ev = |e| r.get(e) as f64;
        match self.figure {
            Figure::Event(e) => ev(e),
            Figure::Sum(a, b) => ev(a) + ev(b),
            Figure::Diff(a, b) => ev(a) - ev(b),
            Figure::Of(f) => f(r),
        }
    }
}

/// The success rate of direct compaction in percent (0 when it never ran).
fn compact_success_rate(r: &RunResult) -> f64 {
    let (s, f) = (r.get(VmEvent::CompactSuccess) as f64, r.get(VmEvent::CompactFail) as f64);
    if s + f == 0.0 {
        0.0
    } else {
        100.0 * s / (s + f)
    }
}

/// The seed's rows that the simulator models, in the seed's order, then its own.
const ROWS: &[Row] = {
    use Figure::{Diff, Event, Of, Sum};
    use VmEvent::*;
    &[
        Row { name: "Hugealloc Time mean", figure: Of(|r| r.hugealloc_work_mean) },
        Row { name: "Hugealloc Time stddev", figure: Of(|r| r.hugealloc_work_stddev) },
        Row { name: "THP fault alloc", figure: Event(ThpFaultAlloc) },
        Row { name: "THP fault fallback", figure: Event(ThpFaultFallback) },
        Row { name: "Direct compact fail", figure: Event(CompactFail) },
        Row { name: "Direct compact success", figure: Event(CompactSuccess) },
        Row { name: "Direct compact success rate %", figure: Of(compact_success_rate) },
        Row { name: "Compact daemon scanned migrate", figure: Event(CompactDaemonMigrateScanned) },
        Row { name: "Compact daemon scanned free", figure: Event(CompactDaemonFreeScanned) },
        Row {
            name: "Compact direct scanned migrate",
            figure: Diff(CompactMigrateScanned, CompactDaemonMigrateScanned),
        },
        Row {
            name: "Compact direct scanned free",
            figure: Diff(CompactFreeScanned, CompactDaemonFreeScanned),
        },
        Row { name: "Compact total migrate scanned", figure: Event(CompactMigrateScanned) },
        Row { name: "Compact total free scanned", figure: Event(CompactFreeScanned) },
        Row { name: "Alloc stall", figure: Of(|r| r.allocstall as f64) },
        Row { name: "Pages kswapd scanned", figure: Event(PgscanKswapd) },
        Row { name: "Pages kswapd reclaimed", figure: Event(PgstealKswapd) },
        Row { name: "Pages direct scanned", figure: Event(PgscanDirect) },
        Row { name: "Pages direct reclaimed", figure: Event(PgstealDirect) },
        Row { name: "Pages total scanned", figure: Sum(PgscanKswapd, PgscanDirect) },
        Row { name: "Pages total reclaimed", figure: Sum(PgstealKswapd, PgstealDirect) },
        Row { name: "Swap out", figure: Event(Pswpout) },
        Row { name: "Swap in", figure: Event(Pswpin) },
        Row { name: "File refaults", figure: Event(WorkingsetRefaultFile) },
        Row { name: "Compact daemon wake", figure: Event(CompactDaemonWake) },
        Row { name: "Simulated run time (s)", figure: Of(|r| r.sim_seconds) },
        Row { name: "Atomic failures", figure: Of(|r| r.atomic_failures as f64) },
        Row { name: "OOM (request failed)", figure: Event(PgAllocOom) },
        Row { name: "Fallbacks (extfrag)", figure: Event(Extfrag) },
        Row { name: "Claimer unmovable", figure: Event(ClaimerUnmovable) },
        Row { name: "Claimer reclaimable", figure: Event(ClaimerReclaimable) },
        Row { name: "Steal unmovable", figure: Event(StealUnmovable) },
        Row { name: "Steal reclaimable", figure: Event(StealReclaimable) },
        Row { name: "Pollute movable", figure: Event(PolluteMovable) },
    ]
};

/// Seed 004's own figures (before, after, its printed change in %), for the rows it has.
pub const SEED_FIGURES: &[(&str, f64, f64, f64)] = &[
    ("Hugealloc Time mean", 52739.45, 28904.00, -45.19),
    ("Hugealloc Time stddev", 56541.26, 33464.37, -40.81),
    ("THP fault alloc", 46727.07, 63223.67, 35.30),
    ("THP fault fallback", 21910.60, 5412.47, -75.29),
    ("Direct compact fail", 195.80, 59.07, -69.48),
    ("Direct compact success", 7.93, 2.80, -57.46),
    ("Direct compact success rate %", 3.51, 3.99, 10.49),
    ("Compact daemon scanned migrate", 3369601.27, 2267500.33, -32.71),
    ("Compact daemon scanned free", 5075474.47, 2339773.00, -53.90),
    ("Compact direct scanned migrate", 161787.27, 47659.93, -70.54),
    ("Compact direct scanned free", 163467.53, 40729.67, -75.08),
    ("Compact total migrate scanned", 3531388.53, 2315160.27, -34.44),
    ("Compact total free scanned", 5238942.00, 2380502.67, -54.56),
    ("Alloc stall", 2371.07, 638.87, -73.02),
    ("Pages kswapd scanned", 2160926.73, 4002186.33, 85.21),
    ("Pages kswapd reclaimed", 533191.07, 718577.80, 34.77),
    ("Pages direct scanned", 400450.33, 355172.73, -11.31),
    ("Pages direct reclaimed", 94441.73, 31162.80, -67.00),
    ("Pages total scanned", 2561377.07, 4357359.07, 70.12),
    ("Pages total reclaimed", 627632.80, 749740.60, 19.46),
    ("Swap out", 47959.53, 110084.33, 129.53),
    ("Swap in", 7276.00, 24457.00, 236.10),
    ("File refaults", 138043.00, 188226.93, 36.35),
];

/// `new/base - 1` in percent, with mmtests' zero conventions.
fn change(base: f64, new: f64) -> f64 {
    if base == new {
        0.0
    } else if base == 0.0 {
        100.0
    } else {
        (new / base - 1.0) * 100.0
    }
}

fn mean(runs: &[RunResult], f: impl Fn(&RunResult) -> f64) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.iter().map(f).sum::<f64>() / runs.len() as f64
}

/// One line in the seed's layout.
fn line(out: &mut String, name: &str, values: &[f64]) {
    let base = values.first().copied().unwrap_or(0.0);
    let pcts: Vec<f64> = values.iter().map(|&v| change(base, v)).collect();
    line_with(out, name, values, &pcts);
}

/// A line with given changes (the seed's own, which it computed from unrounded data).
fn line_with(out: &mut String, name: &str, values: &[f64], pcts: &[f64]) {
    let _ = write!(out, "    {name:<30}");
    for (i, (&v, &pct)) in values.iter().zip(pcts).enumerate() {
        if i == 0 {
            let _ = write!(out, "{v:12.2} ({pct:+9.2}%)");
        } else {
            let _ = write!(out, "{v:11.2} ({pct:+9.2}%)");
        }
    }
    out.push('\n');
}

fn header(out: &mut String, labels: &[&str]) {
    let _ = write!(out, "{:34}", "");
    for (i, l) in labels.iter().enumerate() {
        let width = if i == 0 { 25 } else { 24 };
        let _ = write!(out, "{l:>width$}");
    }
    out.push('\n');
}

impl ThpReport {
    /// The report text: the means table, the seed's figures, the per-run success.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let runs = self.policies.first().map_or(0, |p| p.runs.len());
        let _ = writeln!(
            out,
            "{} on a {} MiB node, THP enabled={} defrag={}, kernel {}, comparing policies over {runs} consecutive runs (means per run; time in work units):\n",
            self.workload, self.node_mib, self.thp, self.defrag, self.kernel
        );
        let names: Vec<&str> = self.policies.iter().map(|p| p.name).collect();
        header(&mut out, &names);
        for row in ROWS {
            let values: Vec<f64> = self.policies.iter().map(|p| mean(&p.runs, |r| row.value(r))).collect();
            line(&mut out, row.name, &values);
        }
        let _ = writeln!(
            out,
            "\nNot modelled: Kbuild User and System time (the simulator has no CPU model); a kbuild-thp run lasts seed 004's Kbuild Real time (197.47 s) of simulated time."
        );
        let _ = writeln!(out, "\nSeed 004's own figures (kbuild + THP bursts, 15 runs, real kernel):\n");
        header(&mut out, &["before", "after"]);
        for &(name, before, after, pct) in SEED_FIGURES {
            line_with(&mut out, name, &[before, after], &[0.0, pct]);
        }
        let _ = writeln!(out, "\nTHP success per run, % of huge page faults served with a huge page:\n");
        let widths: Vec<usize> = self.policies.iter().map(|p| (p.name.len() + 2).max(18)).collect();
        let _ = write!(out, "    {:<6}", "run");
        for (p, &w) in self.policies.iter().zip(&widths) {
            let _ = write!(out, "{:>w$}", p.name);
        }
        out.push('\n');
        for r in 0..runs {
            let _ = write!(out, "    {:<6}", r + 1);
            for (p, &w) in self.policies.iter().zip(&widths) {
                let _ = write!(out, "{:>w$.2}", p.runs.get(r).map_or(0.0, RunResult::thp_success));
            }
            out.push('\n');
        }
        out
    }
}

impl ThpReport {
    /// The HTML report: the policies side by side — THP success, whole free pageblocks and
    /// the unusable index run after run, each policy's final pageblock map, the table.
    pub fn html(&self) -> String {
        let mut page = pageblock_view::html::Page::new(&format!(
            "pageblock lab thp: {} ({} MiB node)",
            self.workload, self.node_mib
        ));
        page.para(&format!(
            "THP enabled={} defrag={}, kernel {}; {} policies, {} consecutive runs each on the same node. Time is in work units.",
            self.thp,
            self.defrag,
            self.kernel,
            self.policies.len(),
            self.policies.first().map_or(0, |p| p.runs.len())
        ));
        let series = |f: fn(&RunResult) -> f64| -> Vec<(String, Vec<f64>)> {
            self.policies.iter().map(|p| (p.name.to_owned(), p.runs.iter().map(f).collect())).collect()
        };
        page.heading("Per run");
        page.chart(
            "THP success (thp_fault_alloc / all huge page faults)",
            "run",
            "% of faults",
            &series(RunResult::thp_success),
        );
        page.chart(
            "Whole free pageblocks at the end of the run",
            "run",
            "pageblocks",
            &series(|r| r.free_pageblocks_end as f64),
        );
        page.chart(
            "Unusable free index at the pageblock order, end of run",
            "run",
            "ratio (0..1)",
            &series(|r| r.unusable_index_end_fraction),
        );
        page.chart("Swap-out per run (pswpout)", "run", "pages", &series(|r| r.get(VmEvent::Pswpout) as f64));
        page.heading("Pageblock maps after the last run, side by side");
        page.policy_maps(self.policies.iter().map(|p| (p.name, p.final_map.as_slice())));
        page.heading("The largest zone's pageblock map after each run (small multiples)");
        let rows: Vec<pageblock_view::html::MapRow<'_>> = self
            .policies
            .iter()
            .map(|p| {
                let maps = p
                    .runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (format!("run {}", i + 1), r.map.as_slice()))
                    .collect();
                (p.name.to_owned(), maps)
            })
            .collect();
        page.small_multiples(&rows);
        page.heading("Means per run (the seed's rows)");
        let header: Vec<String> = std::iter::once("row".to_owned())
            .chain(self.policies.iter().map(|p| p.name.to_owned()))
            .collect();
        let rows: Vec<Vec<String>> = ROWS
            .iter()
            .map(|row| {
                std::iter::once(row.name.to_owned())
                    .chain(self.policies.iter().map(|p| format!("{:.2}", mean(&p.runs, |r| row.value(r)))))
                    .collect()
            })
            .collect();
        page.table(&header, &rows);
        page.heading("The report as printed");
        page.pre(&self.render());
        page.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of the seed's own lines, byte for byte.
    #[test]
    fn lines_match_the_seeds_layout() {
        let mut out = String::new();
        line(&mut out, "Hugealloc Time mean", &[52739.45, 28904.00]);
        line(&mut out, "Compact daemon scanned migrate", &[3369601.27, 2267500.33]);
        for &(name, before, after, pct) in SEED_FIGURES {
            line_with(&mut out, name, &[before, after], &[0.0, pct]);
        }
        header(&mut out, &["before", "after"]);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/seeds/004_1e4828a76d81b762.txt");
        let seed = std::fs::read_to_string(path).expect("the seed beside the repository");
        for l in out.lines() {
            assert!(seed.contains(&format!("{l}\n")), "not in the seed: {l:?}");
        }
    }
}
