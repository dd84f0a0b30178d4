//! A figure over several runs: each run's value, their mean, lowest and highest — how the
//! real-kernel harness's table (`lab real`) and its prediction check (`--compare`) report a
//! row, since real runs vary several-fold.

use serde::Serialize;

/// Values over runs: mean, lowest, highest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Each run's value (runs without one, such as THP success without faults, left out).
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (`None` without any).
    pub fn of(values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread { values, mean, min, max })
    }

    /// (highest − lowest) / mean, percent (0 for a mean of 0).
    pub fn relative_percent(&self) -> f64 {
        if self.mean.abs() < f64::EPSILON {
            0.0
        } else {
            100.0 * (self.max - self.min) / self.mean.abs()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_range_and_relative_spread() {
        let s = Spread::of(vec![8.0, 12.0, 10.0]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.relative_percent()), (10.0, 8.0, 12.0, 40.0));
        assert_eq!(Spread::of(vec![0.0, 0.0]).unwrap().relative_percent(), 0.0);
        assert_eq!(Spread::of(Vec::new()), None);
    }
}
