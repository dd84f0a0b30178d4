//! mmtests compare tables (`compare-kernels.sh` → `Compare.pm`/`PrintGeneric.pm`), the
//! format kernel developers read benchmark results in:
//!
//! ```text
//! Min       alloc-odr4-1        8539.00 (   0.00%)     8762.00 (  -2.61%)
//! ```
//!
//! One row per (statistic, operation): the statistic left-aligned to the longest statistic,
//! the operation to the longest operation, then each column's value as `%12.2f` and its
//! difference from the first column as ` (%7.2f%%)`. The sign convention is mmtests': positive
//! always means better — `pndiff` (`100 − new/base·100`) where lower is better, `pdiff`
//! (`new/base·100 − 100`) where higher is better, with mmtests' edge cases for zeros.

use std::fmt::Write as _;

/// Which direction is better for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Lower values are better (latencies, work): `pndiff`.
    Lower,
    /// Higher values are better (throughput): `pdiff`.
    Higher,
}

/// mmtests `pndiff`: improvement of `new` over `base` when lower is better.
pub fn pndiff(base: f64, new: f64) -> f64 {
    if new == base {
        0.0
    } else if new == 0.0 {
        100.0
    } else if base == 0.0 {
        -99.0
    } else {
        100.0 - new * 100.0 / base
    }
}

/// mmtests `pdiff`: improvement of `new` over `base` when higher is better.
pub fn pdiff(base: f64, new: f64) -> f64 {
    if new == base || new == 0.0 {
        0.0
    } else if base == 0.0 || base.is_nan() {
        100.0
    } else {
        new * 100.0 / base - 100.0
    }
}

/// One row: a statistic of an operation, one value per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `Min`, `Amean`, `Stddev`, `Max`, ...
    pub stat: String,
    /// The operation (`alloc-odr4-1`).
    pub op: String,
    /// Which direction is better.
    pub better: Better,
    /// One value per column; the first is the baseline.
    pub values: Vec<f64>,
}

/// A compare table: column headers (one or more header lines per column) and rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Header lines; each has one label per column.
    pub headers: Vec<Vec<String>>,
    /// The rows, in print order.
    pub rows: Vec<Row>,
}

/// `FieldLength` and `CompareLength`: mmtests' defaults.
const FIELD: usize = 12;
const COMPARE: usize = 7;

impl Table {
    /// Render in mmtests' layout. Header labels are right-aligned over their columns.
    pub fn render(&self) -> String {
        let w_stat = self.rows.iter().map(|r| r.stat.len()).max().unwrap_or(0);
        let w_op = self.rows.iter().map(|r| r.op.len()).max().unwrap_or(0);
        let column = FIELD + COMPARE + 5; // "%12.2f" + " (" + "%7.2f" + "%)"
        let mut out = String::new();
        for header in &self.headers {
            let _ = write!(out, "{:w$}", "", w = w_stat + 1 + w_op);
            for label in header {
                let _ = write!(out, "{label:>column$}");
            }
            out.push('\n');
        }
        for row in &self.rows {
            let _ = write!(out, "{:<w_stat$} {:<w_op$}", row.stat, row.op);
            let base = row.values.first().copied().unwrap_or(f64::NAN);
            for &v in &row.values {
                let diff = match row.better {
                    Better::Lower => pndiff(base, v),
                    Better::Higher => pdiff(base, v),
                };
                // Normalise -0.00 to 0.00 as C's printf of 0.0 would.
                let diff = if diff == 0.0 { 0.0 } else { diff };
                let _ = write!(out, "{v:FIELD$.2} ({diff:COMPARE$.2}%)");
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stat: &str, op: &str, better: Better, values: &[f64]) -> Row {
        Row { stat: stat.into(), op: op.into(), better, values: values.to_vec() }
    }

    /// The seed 000 table's first line, byte for byte (its widest names are `BAmean.95` and
    /// `alloc-odr4-1024`).
    #[test]
    fn reproduces_the_seed_line() {
        let t = Table {
            headers: vec![],
            rows: vec![
                row("Min", "alloc-odr4-1", Better::Lower, &[8539.0, 8762.0]),
                row("BAmean.95", "alloc-odr4-1024", Better::Lower, &[1.0, 1.0]),
            ],
        };
        let first = t.render().lines().next().unwrap().to_owned();
        assert_eq!(first, "Min       alloc-odr4-1        8539.00 (   0.00%)     8762.00 (  -2.61%)");
    }

    #[test]
    fn sign_convention_is_positive_for_better() {
        assert!((pndiff(8539.0, 8762.0) - -2.6115).abs() < 1e-3);
        assert!((pdiff(0.44, 1.08) - 145.4545).abs() < 1e-3);
        assert_eq!(pndiff(100.0, 50.0), 50.0, "halving a latency is +50%");
        assert_eq!(pndiff(100.0, 200.0), -100.0);
        assert_eq!(pndiff(5.0, 0.0), 100.0);
        assert_eq!(pndiff(0.0, 5.0), -99.0);
        assert_eq!(pdiff(0.0, 5.0), 100.0);
        assert_eq!(pdiff(5.0, 0.0), 0.0);
    }

    #[test]
    fn stddev_row_and_headers() {
        let t = Table {
            headers: vec![
                vec!["vanilla".into(), "vanilla".into()],
                vec!["no-monitor".into(), "monitor".into()],
            ],
            rows: vec![row("Stddev", "alloc-odr4-1", Better::Lower, &[7.29, 90.78])],
        };
        let text = t.render();
        assert!(
            text.ends_with("Stddev alloc-odr4-1        7.29 (   0.00%)       90.78 (-1145.27%)\n"),
            "{text}"
        );
        let header = text.lines().next().unwrap();
        assert!(header.ends_with("vanilla                 vanilla"), "{header:?}");
    }
}
