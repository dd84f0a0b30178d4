//! A fixed sampling rate: sample k is due at `start + k * interval`, however long each
//! inspection takes, and ticks already missed are skipped rather than caught up.

use std::time::{Duration, Instant};

/// The first tick after `now` (`None`: beyond what an `Instant` can hold).
pub fn next_tick(start: Instant, interval: Duration, now: Instant) -> Option<Instant> {
    let elapsed = now.saturating_duration_since(start).as_nanos();
    let k = elapsed / interval.as_nanos().max(1) + 1;
    let offset = interval.as_nanos().checked_mul(k)?;
    start.checked_add(Duration::from_nanos(u64::try_from(offset).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_keep_a_fixed_rate_and_skip_the_missed_ones() {
        let t0 = Instant::now();
        let s = Duration::from_secs(5);
        // A quick inspection: the next tick is one interval after the start, not after it.
        assert_eq!(next_tick(t0, s, t0 + Duration::from_millis(900)), Some(t0 + s));
        // Later samples stay on the grid: no drift by the inspection time.
        assert_eq!(next_tick(t0, s, t0 + s + Duration::from_millis(900)), Some(t0 + 2 * s));
        // An inspection that overran two ticks skips them.
        assert_eq!(next_tick(t0, s, t0 + Duration::from_millis(12_100)), Some(t0 + 3 * s));
        // Exactly on a tick: the next one.
        assert_eq!(next_tick(t0, s, t0 + s), Some(t0 + 2 * s));
        // An interval too long for the clock never comes, and does not panic.
        assert_eq!(next_tick(t0, Duration::MAX, t0 + s), None);
    }
}
