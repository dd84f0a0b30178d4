//! The harness's table across runs: per setting, each row's mean and its spread (lowest and
//! highest run), since real runs of one setting vary several times over.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use pageblock_formats::vmstat::{thp_success_percent, PRESSURE_ROWS};
use pageblock_view::Spread;

/// A row of one run: its name and value (`None`: none, as THP success without faults).
type Row = (String, Option<f64>);

/// One finished run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The setting's label (`dm1-always-madvise`).
    pub setting: String,
    /// 1-based run number within the setting.
    pub run: usize,
    /// The run's recording directory, relative to the output directory.
    pub dir: String,
    /// Wall time of the recorded load, seconds.
    pub elapsed_s: f64,
    /// The recorder's exit code (the load's: 0 when the build succeeded).
    pub exit_code: u8,
    /// Events recorded.
    pub events: u64,
    /// Events lost.
    pub lost_events: u64,
    /// Hog size, MiB (0: none).
    pub hog_mib: u64,
    /// Each CPU's ring buffer when the run began, KiB: the session's size, allocated before
    /// its first hog, not allocated by the run's own recording.
    pub ring_buffer_kb: u64,
    /// kswapd0's CPU time, ms.
    pub kswapd_cpu_ms: u64,
    /// kcompactd0's CPU time, ms.
    pub kcompactd_cpu_ms: u64,
    /// The vmstat delta (every event counter).
    pub vmstat: BTreeMap<String, u64>,
    /// The mTHP counters' delta.
    pub mthp: BTreeMap<String, u64>,
}

impl RunResult {
    /// THP faults served with a huge page, percent of huge page faults (`None` without any).
    pub fn thp_success(&self) -> Option<f64> {
        thp_success_percent(|n| self.vmstat.get(n).copied())
    }

    /// The rows of the table, by name.
    fn rows(&self) -> Vec<Row> {
        let mut rows = vec![("thp_success_%".to_owned(), self.thp_success())];
        rows.extend(
            PRESSURE_ROWS
                .iter()
                .map(|&r| (r.to_owned(), Some(self.vmstat.get(r).copied().unwrap_or(0) as f64))),
        );
        rows.push(("kswapd_cpu_ms".into(), Some(self.kswapd_cpu_ms as f64)));
        rows.push(("kcompactd_cpu_ms".into(), Some(self.kcompactd_cpu_ms as f64)));
        rows.push(("elapsed_s".into(), Some(self.elapsed_s)));
        rows.push(("lost_events".into(), Some(self.lost_events as f64)));
        rows
    }
}

/// The table: settings in the order first run; rows: THP success, the vmstat rows, the
/// daemons' CPU time, elapsed time and lost events.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The settings.
    pub settings: Vec<String>,
    /// Per row, per setting, the spread.
    pub rows: Vec<(String, Vec<Option<Spread>>)>,
    /// Every run.
    pub runs: Vec<RunResult>,
}

impl Summary {
    /// The table of `runs`.
    pub fn of(runs: &[RunResult]) -> Summary {
        let mut settings: Vec<String> = Vec::new();
        for r in runs {
            if !settings.contains(&r.setting) {
                settings.push(r.setting.clone());
            }
        }
        // Each run's rows, once.
        let values: Vec<(&str, Vec<Row>)> = runs.iter().map(|r| (r.setting.as_str(), r.rows())).collect();
        let names: Vec<String> =
            values.first().map(|(_, rows)| rows.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default();
        let rows = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let per = settings
                    .iter()
                    .map(|s| {
                        Spread::of(
                            values
                                .iter()
                                .filter(|(setting, _)| setting == s)
                                .filter_map(|(_, r)| r[i].1)
                                .collect(),
                        )
                    })
                    .collect();
                (name, per)
            })
            .collect();
        Summary { settings, rows, runs: runs.to_vec() }
    }

    /// The text table: `mean (min–max)` per setting.
    pub fn render(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|(_, per)| per.iter().map(|s| s.as_ref().map_or_else(|| "-".to_owned(), cell)).collect())
            .collect();
        let name_w = self.rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let col_w: Vec<usize> = (0..self.settings.len())
            .map(|j| {
                cells.iter().map(|c| c[j].chars().count()).chain([self.settings[j].len()]).max().unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let counts: Vec<String> = self
            .settings
            .iter()
            .map(|s| format!("{s}: {}", self.runs.iter().filter(|r| &r.setting == s).count()))
            .collect();
        let _ = writeln!(
            out,
            "Real kernel, mean (lowest-highest) per run; runs per setting: {}\n",
            counts.join(", ")
        );
        let _ = write!(out, "{:name_w$}", "");
        for (s, w) in self.settings.iter().zip(&col_w) {
            let _ = write!(out, "  {s:>w$}");
        }
        out.push('\n');
        for ((name, _), row) in self.rows.iter().zip(&cells) {
            let _ = write!(out, "{name:name_w$}");
            for (c, w) in row.iter().zip(&col_w) {
                let _ = write!(out, "  {c:>w$}");
            }
            out.push('\n');
        }
        out
    }
}

fn cell(s: &Spread) -> String {
    let f = |v: f64| if v.abs() >= 100.0 || v == v.trunc() { format!("{v:.0}") } else { format!("{v:.1}") };
    format!("{} ({}-{})", f(s.mean), f(s.min), f(s.max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(setting: &str, n: usize, alloc: u64, fallback: u64) -> RunResult {
        let vmstat =
            [("thp_fault_alloc".to_owned(), alloc), ("thp_fault_fallback".to_owned(), fallback)].into();
        RunResult {
            ring_buffer_kb: 1024,
            setting: setting.into(),
            run: n,
            dir: format!("{setting}/run{n}"),
            elapsed_s: 10.0,
            exit_code: 0,
            events: 5,
            lost_events: 0,
            hog_mib: 0,
            kswapd_cpu_ms: 0,
            kcompactd_cpu_ms: 0,
            vmstat,
            mthp: BTreeMap::new(),
        }
    }

    #[test]
    fn each_setting_gets_its_mean_and_spread() {
        let runs = [run("dm0", 1, 90, 10), run("dm1", 1, 50, 50), run("dm0", 2, 70, 30)];
        let s = Summary::of(&runs);
        assert_eq!(s.settings, ["dm0", "dm1"]);
        let (name, thp) = &s.rows[0];
        assert_eq!(name, "thp_success_%");
        let dm0 = thp[0].as_ref().unwrap();
        assert_eq!((dm0.mean, dm0.min, dm0.max), (80.0, 70.0, 90.0));
        let text = s.render();
        assert!(text.contains("runs per setting: dm0: 2, dm1: 1"), "{text}");
        assert!(text.contains("thp_success_%"), "{text}");
        assert!(text.contains("80 (70-90)"), "{text}");
    }

    #[test]
    fn a_run_without_huge_page_faults_has_no_success_rate() {
        let s = Summary::of(&[run("dm0", 1, 0, 0)]);
        assert!(s.rows[0].1[0].is_none());
        assert!(s.render().lines().any(|l| l.starts_with("thp_success_%") && l.trim_end().ends_with('-')));
    }
}
