//! Prediction checked against the real kernel: the traces of a `lab real` session's
//! `vm.defrag_mode=0` runs, replayed closed loop under `vanilla` and `defrag_mode`, predict
//! how the session's `defrag_mode=1` runs differ from them.
//!
//! For each row the real change is the difference of the two settings' means over their
//! runs, and the real spread the larger of the two settings' (highest − lowest) / mean: the
//! run-to-run variation a change must exceed to mean anything. The predicted change is, per
//! `defrag_mode=0` trace and seed (the daemons' timing the trace does not tell, drawn per
//! seed: [`super::daemon_timing`]), `defrag_mode`'s replay against `vanilla`'s with the same
//! seed; its mean and range over traces and seeds are reported. A row **agrees** when the real change exceeds the spread and the predicted mean
//! has its sign, or when it does not and the predicted mean lies within the spread.
//!
//! THP success is `thp_fault_alloc / (thp_fault_alloc + thp_fault_fallback)` on both sides:
//! the replay counts the trace's huge page faults as the kernel does, each served if the
//! simulation served its first attempt or the retry ([`super::fallback`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pageblock_core::named_policy::policy_named;
use pageblock_formats::vmstat::{thp_success_percent, VmStat};
use pageblock_view::Spread;
use serde::Serialize;

use super::engine::Loop;

/// The rows compared.
pub const ROWS: [&str; 4] =
    ["THP success %", "compaction pfns scanned", "direct reclaim stalls", "pgscan_kswapd"];

/// A row's value from a run's counters (`name`, count) and its THP success: the same sums on
/// the real side and the replay's.
fn row_value<'a>(row: &str, thp: Option<f64>, counters: impl Iterator<Item = (&'a str, u64)>) -> Option<f64> {
    let counted = |name: &str| match row {
        "compaction pfns scanned" => name == "compact_migrate_scanned" || name == "compact_free_scanned",
        "direct reclaim stalls" => name.starts_with("allocstall_"),
        _ => name == row,
    };
    match row {
        "THP success %" => thp,
        _ => Some(counters.filter(|(n, _)| counted(n)).map(|(_, v)| v as f64).sum()),
    }
}

/// A row's value in a real run's vmstat delta.
fn real_value(row: &str, d: &VmStat) -> Option<f64> {
    row_value(row, thp_success_percent(|n| d.get(n)), d.items.iter().map(|(n, v)| (n.as_str(), *v)))
}

/// A row's value in a replay's vmstat delta.
fn predicted_value(row: &str, vmstat: &BTreeMap<String, u64>) -> Option<f64> {
    let thp = thp_success_percent(|n| vmstat.get(n).copied());
    row_value(row, thp, vmstat.iter().map(|(n, v)| (n.as_str(), *v)))
}

/// Change from `a` to `b`, percent (`None` from 0).
fn change(a: f64, b: f64) -> Option<f64> {
    (a.abs() > f64::EPSILON).then(|| 100.0 * (b - a) / a.abs())
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PredictionRow {
    /// The row.
    pub name: &'static str,
    /// The `defrag_mode=0` runs.
    pub real_vanilla: Option<Spread>,
    /// The `defrag_mode=1` runs.
    pub real_defrag_mode: Option<Spread>,
    /// Real change of the means, percent.
    pub real_change: Option<f64>,
    /// Real run-to-run spread, percent.
    pub real_spread: f64,
    /// Predicted change per `defrag_mode=0` trace and seed, percent.
    pub predicted: Option<Spread>,
    /// Predicted mean change / real change.
    pub ratio: Option<f64>,
    /// Whether prediction and reality agree (see the module).
    pub agrees: Option<bool>,
}

/// A session's comparison for one THP setting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The `defrag_mode=0` and `=1` settings compared (`dm0-always-madvise`, ...).
    pub settings: (String, String),
    /// The rows.
    pub rows: Vec<PredictionRow>,
}

/// The runs (directories holding `vmstat-delta.txt`) of each setting under `dir`, by label.
fn settings(dir: &Path) -> Result<Vec<(String, Vec<PathBuf>)>, String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| err(dir, e))? {
        let path = entry.map_err(|e| err(dir, e))?.path();
        let Some(label) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        if !path.is_dir() || !label.starts_with("dm") {
            continue;
        }
        let mut runs: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|e| err(&path, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("vmstat-delta.txt").is_file())
            .collect();
        runs.sort();
        if !runs.is_empty() {
            out.push((label, runs));
        }
    }
    out.sort();
    Ok(out)
}

fn delta(run: &Path) -> Result<VmStat, String> {
    let p = run.join("vmstat-delta.txt");
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    VmStat::parse_delta(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// Compares every `dm1-X` setting under `dir` (a `lab real` output directory) with its
/// `dm0-X`, replaying each `dm0-X` trace under `vanilla` and `defrag_mode`, `seeds` times
/// each (the daemons' timing drawn per seed, [`super::daemon_timing`]); `progress` is told
/// which trace is replayed.
pub fn predict(dir: &Path, seeds: u32, progress: &mut dyn FnMut(&Path)) -> Result<Vec<Prediction>, String> {
    let all = settings(dir)?;
    let policies = ["vanilla", "defrag_mode"].map(|n| policy_named(n).expect("a shipped policy"));
    let mut out = Vec::new();
    for (base, base_runs) in all.iter().filter(|(l, _)| l.starts_with("dm0-")) {
        let other_label = format!("dm1-{}", &base[4..]);
        let Some((_, other_runs)) = all.iter().find(|(l, _)| *l == other_label) else { continue };
        let real = |runs: &[PathBuf]| runs.iter().map(|r| delta(r)).collect::<Result<Vec<_>, _>>();
        let (real_base, real_other) = (real(base_runs)?, real(other_runs)?);
        let mut replays = Vec::new();
        for run in base_runs {
            progress(run);
            let report = super::run(
                run,
                &policies,
                super::Options { mode: Some(Loop::Closed), seeds, ..Default::default() },
                &mut |_| {},
            )?;
            replays.push(report.policies);
        }
        let rows = ROWS
            .iter()
            .map(|&name| {
                let spread =
                    |ds: &[VmStat]| Spread::of(ds.iter().filter_map(|d| real_value(name, d)).collect());
                let (rv, rd) = (spread(&real_base), spread(&real_other));
                let real_change = rv.as_ref().zip(rd.as_ref()).and_then(|(v, d)| change(v.mean, d.mean));
                let real_spread = [&rv, &rd]
                    .iter()
                    .filter_map(|s| s.as_ref())
                    .map(Spread::relative_percent)
                    .fold(0.0, f64::max);
                let predicted = Spread::of(
                    replays
                        .iter()
                        .flat_map(|p| p[0].seeds.iter().zip(&p[1].seeds))
                        .filter_map(|(vanilla, defrag_mode)| {
                            let v = predicted_value(name, &vanilla.vmstat)?;
                            change(v, predicted_value(name, &defrag_mode.vmstat)?)
                        })
                        .collect(),
                );
                let ratio = real_change
                    .zip(predicted.as_ref())
                    .and_then(|(r, p)| (r.abs() > f64::EPSILON).then(|| p.mean / r));
                let agrees = real_change.zip(predicted.as_ref()).map(|(r, p)| {
                    if r.abs() > real_spread {
                        p.mean.signum() == r.signum() && p.mean != 0.0
                    } else {
                        p.mean.abs() <= real_spread
                    }
                });
                PredictionRow {
                    name,
                    real_vanilla: rv,
                    real_defrag_mode: rd,
                    real_change,
                    real_spread,
                    predicted,
                    ratio,
                    agrees,
                }
            })
            .collect();
        out.push(Prediction { settings: (base.clone(), other_label), rows });
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no dm0-X and dm1-X settings with runs to compare (a `lab real` output directory)",
            dir.display()
        ));
    }
    Ok(out)
}

/// The comparison as a table.
pub fn render(predictions: &[Prediction]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:+.1}%"));
    for p in predictions {
        let _ = writeln!(o, "{} -> {}: real change (vanilla runs -> defrag_mode runs) against predicted (replays of the vanilla traces)", p.settings.0, p.settings.1);
        let _ = writeln!(
            o,
            "{:<26} {:>12} {:>10} {:>12} {:>22} {:>8} {:>7}",
            "", "real change", "spread", "predicted", "predicted range", "ratio", "agrees"
        );
        for r in &p.rows {
            let range =
                r.predicted.as_ref().map_or("-".to_owned(), |s| format!("{:+.1}% .. {:+.1}%", s.min, s.max));
            let ratio = r.ratio.map_or("-".to_owned(), |x| format!("{x:.2}"));
            let agrees = match r.agrees {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            let _ = writeln!(
                o,
                "{:<26} {:>12} {:>10} {:>12} {:>22} {:>8} {:>7}",
                r.name,
                pct(r.real_change),
                format!("{:.1}%", r.real_spread),
                pct(r.predicted.as_ref().map(|s| s.mean)),
                range,
                ratio,
                agrees
            );
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_from_the_real_delta() {
        let d = VmStat::parse_delta(
            "thp_fault_alloc=90\nthp_fault_fallback=10\ncompact_migrate_scanned=5\ncompact_free_scanned=7\n\
             allocstall_normal=2\nallocstall_movable=3\npgscan_kswapd=11\n",
        )
        .unwrap();
        let v: Vec<Option<f64>> = ROWS.iter().map(|r| real_value(r, &d)).collect();
        assert_eq!(v, [Some(90.0), Some(12.0), Some(5.0), Some(11.0)]);
        assert_eq!(real_value("THP success %", &VmStat::parse_delta("pswpout=1\n").unwrap()), None);
    }

    #[test]
    fn change_is_relative_to_the_first() {
        assert_eq!(change(10.0, 15.0), Some(50.0));
        assert_eq!(change(0.0, 15.0), None);
    }

    #[test]
    fn a_directory_without_both_settings_is_refused() {
        let dir = std::env::temp_dir().join(format!("pageblock-predict-{}", std::process::id()));
        let run = dir.join("dm0-always-madvise/run1");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("vmstat-delta.txt"), "pswpout=0\n").unwrap();
        let err = predict(&dir, 1, &mut |_| {}).unwrap_err();
        assert!(err.contains("no dm0-X and dm1-X settings"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
