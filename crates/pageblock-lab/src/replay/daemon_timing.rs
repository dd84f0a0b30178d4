//! The daemons' timing in a replay: what the trace tells, and what a seed draws of what it
//! does not.
//!
//! * **kswapd's wake-up latency.** A trace recording the vmscan events shows each wake-up
//!   of a sleeping kswapd (`mm_vmscan_wakeup_kswapd`, which fires only when kswapd waits and
//!   the node is unbalanced) and the start of its next run (`mm_vmscan_kswapd_wake`); the
//!   time between the two is the scheduling latency the allocators race against. A replay
//!   draws each simulated wake-up's latency from the trace's own (at least
//!   [`MIN_TRACED_WAKES`] of them), else from those measured on this machine.
//! * **Where the periodic daemons are in their periods** when the trace begins: the next
//!   vmstat round (every second) and kcompactd's next timeout (every 500 ms). The trace
//!   cannot tell; a seed draws both uniformly.
//!
//! Seeds number from 1; the same seed gives the same replay.

use pageblock_core::compaction::PROACTIVE_INTERVAL_US;
use pageblock_core::DaemonPhases;
use pageblock_core::STAT_INTERVAL_US;
use pageblock_trace::{RecordKind, TraceRecord, VmscanEvent};

use crate::prng::Prng;

/// Fewer traced wake-ups than this and the replay uses [`MACHINE_WAKE_LATENCY_US`].
pub const MIN_TRACED_WAKES: usize = 30;

/// kswapd's wake-up latency on this machine (6.18, 2 CPUs), µs: the percentiles 0, 1, ..,
/// 99 of 31,235 wake-ups in recordings B and C (three runs of each setting), from each
/// `mm_vmscan_wakeup_kswapd` to the next `mm_vmscan_kswapd_wake`. Median 87 µs, mean 544 µs,
/// largest 46 ms.
pub const MACHINE_WAKE_LATENCY_US: [u64; 100] = [
    0, 6, 7, 8, 10, 12, 17, 21, 24, 26, 28, 30, 31, 33, 34, 36, 37, 38, 39, 41, 42, 43, 44, 45, 46, 46, 47,
    48, 49, 50, 51, 51, 52, 53, 54, 55, 56, 57, 57, 58, 59, 60, 62, 63, 64, 66, 69, 72, 76, 81, 87, 97, 113,
    132, 146, 160, 174, 184, 194, 203, 215, 230, 246, 263, 276, 289, 304, 322, 342, 360, 381, 406, 432, 460,
    489, 518, 554, 595, 640, 691, 747, 813, 888, 957, 1043, 1139, 1249, 1345, 1446, 1565, 1691, 1852, 2050,
    2275, 2511, 2746, 2963, 3207, 3487, 3921,
];

/// kswapd wake-up latencies read from a trace, in µs.
#[derive(Clone, Debug, Default)]
pub struct WakeLatencies {
    traced_us: Vec<u64>,
    /// The latest `mm_vmscan_wakeup_kswapd` not yet followed by a run.
    pending_us: Option<u64>,
}

impl WakeLatencies {
    /// Read one record (in trace order).
    pub fn observe(&mut self, rec: &TraceRecord) {
        match rec.kind {
            RecordKind::Vmscan(VmscanEvent::WakeupKswapd) => {
                self.pending_us.get_or_insert(rec.time_us);
            }
            RecordKind::Vmscan(VmscanEvent::KswapdWake) => {
                if let Some(woken) = self.pending_us.take() {
                    self.traced_us.push(rec.time_us.saturating_sub(woken));
                }
            }
            _ => {}
        }
    }

    /// Whether a replay draws from the trace's own latencies.
    pub fn from_trace(&self) -> bool {
        self.traced_us.len() >= MIN_TRACED_WAKES
    }

    /// Where a replay draws the latencies from, as the report says it.
    pub fn source(&self) -> String {
        if self.from_trace() {
            let mut v = self.traced_us.clone();
            v.sort_unstable();
            format!("the trace's {} wake-ups (median {} µs)", v.len(), v[v.len() / 2])
        } else {
            format!(
                "this machine's (median {} µs; the trace has {} wake-ups, {MIN_TRACED_WAKES} needed)",
                MACHINE_WAKE_LATENCY_US[50],
                self.traced_us.len()
            )
        }
    }

    /// The latencies a replay draws from.
    fn pool(&self) -> &[u64] {
        if self.from_trace() {
            &self.traced_us
        } else {
            &MACHINE_WAKE_LATENCY_US
        }
    }

    /// Seed `seed`'s daemon timing: a kswapd wake-up latency drawn for each wake-up, and the
    /// periodic daemons' phases.
    pub fn timing(&self, seed: u64) -> (Box<dyn FnMut() -> u64>, DaemonPhases) {
        let mut rng = Prng::new(seed);
        let phases = DaemonPhases {
            vmstat_us: 1 + rng.below(STAT_INTERVAL_US),
            kcompactd_us: 1 + rng.below(PROACTIVE_INTERVAL_US),
        };
        let pool = self.pool().to_vec();
        let draw = move || pool[rng.below(pool.len() as u64) as usize];
        (Box::new(draw), phases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_trace::Task;

    fn rec(time_us: u64, v: VmscanEvent) -> TraceRecord {
        TraceRecord { time_us, pfn: 0, cpu: 0, task: Task::Other, kind: RecordKind::Vmscan(v) }
    }

    #[test]
    fn a_latency_runs_from_the_first_wake_up_to_the_next_run() {
        let mut w = WakeLatencies::default();
        for (t, v) in [
            (5, VmscanEvent::KswapdWake), // a run without a traced wake-up (its nap ended)
            (10, VmscanEvent::WakeupKswapd),
            (12, VmscanEvent::WakeupKswapd),
            (50, VmscanEvent::KswapdWake),
            (60, VmscanEvent::KswapdWake),
            (70, VmscanEvent::WakeupKswapd),
            (71, VmscanEvent::KswapdWake),
        ] {
            w.observe(&rec(t, v));
        }
        assert_eq!(w.traced_us, vec![40, 1]);
        assert!(!w.from_trace(), "too few: the machine's latencies");
    }

    #[test]
    fn a_seed_draws_the_same_timing_every_time_and_seeds_differ() {
        let mut w = WakeLatencies::default();
        for k in 0..MIN_TRACED_WAKES as u64 {
            w.observe(&rec(1000 * k, VmscanEvent::WakeupKswapd));
            w.observe(&rec(1000 * k + 7 + k % 3, VmscanEvent::KswapdWake));
        }
        assert!(w.from_trace());
        let draws = |seed| {
            let (mut draw, phases) = w.timing(seed);
            ((0..50).map(|_| draw()).collect::<Vec<_>>(), phases)
        };
        let (a, pa) = draws(1);
        assert_eq!((a.clone(), pa), draws(1), "reproducible");
        assert!(a.iter().all(|d| (7..=9).contains(d)), "drawn from the trace's latencies: {a:?}");
        let (b, pb) = draws(2);
        assert!(a != b && pa != pb);
        assert!((1..=STAT_INTERVAL_US).contains(&pa.vmstat_us));
        assert!((1..=PROACTIVE_INTERVAL_US).contains(&pa.kcompactd_us));
        let (mut machine, _) = WakeLatencies::default().timing(3);
        assert!((0..50).all(|_| MACHINE_WAKE_LATENCY_US.contains(&machine())), "no trace: the machine's");
    }
}
