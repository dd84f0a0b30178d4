//! How often an asking task found `need_resched()` set, and the draw a replay makes of it.
//!
//! Async direct compaction walks the request's zonelist and stops after any zone once the
//! scheduler wants the CPU back (`try_to_compact_pages`). On this machine's A workload that
//! is why the kernel's asks reach ZONE_DMA32 less often than a simulation that never yields:
//! of 4,979 async order-9 asks, the 691 that began with need-resched set reached no zone
//! after ZONE_NORMAL. The simulation has no scheduler, but the trace shows the flag on every
//! `mm_compaction_try_to_compact_pages` line: a replay draws, at each check, whether it is
//! set at the rate the trace's async asks had it (at least [`MIN_TRACED_ASKS`] of them),
//! else at this machine's rate. A task that began without it could still have it set
//! between two zones; the trace cannot show that, so the rate is a floor.
//!
//! Seeds number from 1, as the daemons' timing does; the same seed draws the same flags.

use pageblock_trace::{RecordKind, TraceRecord};

use crate::prng::Prng;

/// Fewer traced async asks with flags than this and a replay uses this machine's rate.
pub const MIN_TRACED_ASKS: u64 = 30;

/// This machine's rate (6.18, 2 CPUs): async asks that began with need-resched set, and
/// all async asks, in recordings A5 and C11 (three runs of each setting; B4's 103 asks had
/// none set). Per run it ranged from 8.3% to 16.3%.
pub const MACHINE_NEED_RESCHED: (u64, u64) = (5_313, 43_504);

/// `priority` of an async ask (`COMPACT_PRIO_ASYNC`).
const COMPACT_PRIO_ASYNC: u8 = 2;

/// The trace's async asks, and how many began with need-resched set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeedResched {
    asks: u64,
    set: u64,
}

impl NeedResched {
    /// Read one record.
    pub fn observe(&mut self, rec: &TraceRecord) {
        if let RecordKind::TryToCompactPages {
            priority: COMPACT_PRIO_ASYNC, need_resched: Some(set), ..
        } = rec.kind
        {
            self.asks += 1;
            self.set += u64::from(set);
        }
    }

    /// Whether a replay draws at the trace's own rate.
    pub fn from_trace(&self) -> bool {
        self.asks >= MIN_TRACED_ASKS
    }

    /// `(set, asks)` of the rate a replay draws at.
    fn rate(&self) -> (u64, u64) {
        if self.from_trace() {
            (self.set, self.asks)
        } else {
            MACHINE_NEED_RESCHED
        }
    }

    /// Where the rate comes from, as the report says it.
    pub fn source(&self) -> String {
        let (set, asks) = self.rate();
        let pct = 100.0 * set as f64 / asks as f64;
        if self.from_trace() {
            format!("{pct:.1}%, the trace's ({set} of {asks} async asks began with it set)")
        } else {
            format!(
                "{pct:.1}%, this machine's (the trace has {} async asks with flags, {MIN_TRACED_ASKS} needed)",
                self.asks
            )
        }
    }

    /// Seed `seed`'s draw: each call says whether need-resched is set, at the rate.
    pub fn draw(&self, seed: u64) -> Box<dyn FnMut() -> bool> {
        // A stream of its own, so that adding draws here leaves the daemons' timing as it was.
        let mut rng = Prng::new(seed ^ 0x6e65_6564_5f72_6573);
        let (set, asks) = self.rate();
        Box::new(move || rng.below(asks) < set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_trace::{GfpId, Task};

    fn ask(priority: u8, need_resched: Option<bool>) -> TraceRecord {
        let kind = RecordKind::TryToCompactPages { order: 9, gfp: GfpId(0), priority, need_resched };
        TraceRecord { time_us: 0, pfn: 0, cpu: 0, task: Task::Other, kind }
    }

    #[test]
    fn only_async_asks_with_flags_count() {
        let mut n = NeedResched::default();
        for r in [ask(2, Some(true)), ask(2, Some(false)), ask(1, Some(true)), ask(2, None)] {
            n.observe(&r);
        }
        assert_eq!(n, NeedResched { asks: 2, set: 1 });
        assert!(!n.from_trace());
        assert!(n.source().contains("this machine's"), "{}", n.source());
    }

    #[test]
    fn a_seed_draws_at_the_traces_rate_the_same_way_every_time() {
        let mut n = NeedResched::default();
        for k in 0..200 {
            n.observe(&ask(2, Some(k % 4 == 0)));
        }
        assert!(n.from_trace());
        assert_eq!(n.source(), "25.0%, the trace's (50 of 200 async asks began with it set)");
        let draws = |seed| {
            let mut d = n.draw(seed);
            (0..4000).map(|_| d()).collect::<Vec<_>>()
        };
        let a = draws(1);
        assert_eq!(a, draws(1), "reproducible");
        assert_ne!(a, draws(2));
        let set = a.iter().filter(|&&s| s).count();
        assert!((900..1100).contains(&set), "about a quarter: {set}");
        let never = NeedResched { asks: 40, set: 0 };
        let mut d = never.draw(3);
        assert!((0..1000).all(|_| !d()), "a trace whose asks never had it set never draws it");
    }
}
