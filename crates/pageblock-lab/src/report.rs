//! What a workload run did: requests and outcomes per order and migratetype.

use std::collections::BTreeMap;

use pageblock_core::MigrateType;

/// Attempts and successes of one kind of request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Requests made.
    pub attempts: u64,
    /// Requests that got a block.
    pub successes: u64,
}

impl Outcome {
    /// Requests that failed.
    pub fn failures(&self) -> u64 {
        self.attempts - self.successes
    }

    /// Success rate in percent (100 if nothing was asked).
    pub fn success_percent(&self) -> f64 {
        if self.attempts == 0 {
            100.0
        } else {
            self.successes as f64 * 100.0 / self.attempts as f64
        }
    }
}

/// Outcomes of a run, keyed by (order, migratetype), plus frees per order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Operations performed.
    pub ops: u64,
    /// Allocation outcomes.
    pub allocs: BTreeMap<(u32, MigrateType), Outcome>,
    /// Blocks freed per order.
    pub frees: BTreeMap<u32, u64>,
}

impl RunReport {
    /// Record an allocation attempt.
    pub fn record_alloc(&mut self, order: u32, mt: MigrateType, ok: bool) {
        self.ops += 1;
        let o = self.allocs.entry((order, mt)).or_default();
        o.attempts += 1;
        o.successes += ok as u64;
    }

    /// Record a free.
    pub fn record_free(&mut self, order: u32) {
        self.ops += 1;
        *self.frees.entry(order).or_default() += 1;
    }

    /// Outcomes of all requests of `order`, any type.
    pub fn by_order(&self, order: u32) -> Outcome {
        self.allocs.iter().filter(|((o, _), _)| *o == order).fold(Outcome::default(), |acc, (_, x)| Outcome {
            attempts: acc.attempts + x.attempts,
            successes: acc.successes + x.successes,
        })
    }

    /// Orders that were requested, ascending.
    pub fn orders(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.allocs.keys().map(|(o, _)| *o).collect();
        v.dedup();
        v
    }
}
