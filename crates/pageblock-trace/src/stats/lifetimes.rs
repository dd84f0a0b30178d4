//! Page lifetimes: each `mm_page_alloc` paired with the next free of the same pfn.
//!
//! Pairing is by exact pfn (the `page=` pointer is hashed and says nothing). A trace starts
//! and ends mid-run, per-CPU buffers overflow independently and a block may be freed in
//! pieces, so some frees have no allocation in the trace and some allocations are never
//! freed in it: both are counted, not guessed at. An allocation of a pfn that is still live
//! (its free was lost) replaces the older one and is counted too.
//!
//! `mm_page_free_batched` is a second notification on 6.x kernels: `free_unref_folios()`
//! traces `mm_page_free` for each folio in `free_pages_prepare()`, then
//! `mm_page_free_batched` as it puts the folio on a per-CPU list (in the real 6.18 trace
//! every one of its 371,607 batched frees follows an `mm_page_free` of the same pfn on the
//! same CPU). So a batched free ends a lifetime only if the pfn is still live (a kernel
//! that traces it alone), and is otherwise counted apart, not as a free without an
//! allocation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use hdrhistogram::Histogram;
use serde::Serialize;

/// A hasher for pfns: one multiply, high bits folded down (order-9 pfns share their low
/// nine bits, which must not all land in one bucket).
#[derive(Default)]
struct PfnHasher(u64);

impl Hasher for PfnHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, pfn: u64) {
        let h = pfn.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

/// Lifetime percentiles in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LifetimePercentiles {
    /// Shortest.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Longest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

/// The lifetime section of the statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LifetimeStats {
    /// Allocations whose free was seen.
    pub paired: u64,
    /// `mm_page_free` of a pfn with no live allocation in the trace.
    pub frees_without_alloc: u64,
    /// `mm_page_free_batched` of a pfn that is not live: on 6.x kernels, the second event
    /// of a free already counted (see the module docs).
    pub batched_of_freed_pfn: u64,
    /// Allocations not freed by the end of the trace.
    pub allocs_never_freed: u64,
    /// Allocations of a pfn that was still live (the free in between was not in the trace).
    pub allocs_of_live_pfn: u64,
    /// Distribution of the paired lifetimes (µs); `None` if nothing was paired.
    pub us: Option<LifetimePercentiles>,
}

/// The pairing state of one pass.
pub(super) struct Lifetimes {
    live: HashMap<u64, u64, BuildHasherDefault<PfnHasher>>,
    histogram: Histogram<u64>,
    stats: LifetimeStats,
}

impl Lifetimes {
    pub(super) fn new() -> Self {
        Lifetimes {
            live: HashMap::default(),
            histogram: Histogram::new(3).expect("3 significant figures is a valid precision"),
            stats: LifetimeStats::default(),
        }
    }

    /// A successful allocation of `pfn` at `time_us`.
    pub(super) fn alloc(&mut self, pfn: u64, time_us: u64) {
        if self.live.insert(pfn, time_us).is_some() {
            self.stats.allocs_of_live_pfn += 1;
        }
    }

    /// A free of `pfn` at `time_us` (`batched`: `mm_page_free_batched`).
    pub(super) fn free(&mut self, pfn: u64, time_us: u64, batched: bool) {
        match self.live.remove(&pfn) {
            Some(start) => {
                self.stats.paired += 1;
                let lifetime = time_us.saturating_sub(start);
                if self.histogram.record(lifetime).is_err() {
                    self.histogram.saturating_record(lifetime);
                }
            }
            None if batched => self.stats.batched_of_freed_pfn += 1,
            None => self.stats.frees_without_alloc += 1,
        }
    }

    pub(super) fn finish(self) -> LifetimeStats {
        let h = &self.histogram;
        let us = (!h.is_empty()).then(|| LifetimePercentiles {
            min: h.min(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        });
        LifetimeStats { allocs_never_freed: self.live.len() as u64, us, ..self.stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_by_pfn_and_counts_the_rest() {
        let mut l = Lifetimes::new();
        l.alloc(512, 10);
        l.alloc(1024, 20);
        l.free(512, 110, false);
        l.free(512, 111, true);
        l.free(7, 120, false);
        l.alloc(1024, 30);
        l.free(1024, 1030, true);
        l.alloc(1536, 40);
        l.alloc(2048, 0);
        l.free(2048, 3_600_000_000, false);
        let s = l.finish();
        assert_eq!((s.paired, s.frees_without_alloc, s.batched_of_freed_pfn), (3, 1, 1));
        assert_eq!((s.allocs_never_freed, s.allocs_of_live_pfn), (1, 1));
        let us = s.us.unwrap();
        assert_eq!(us.min, 100);
        assert!(us.max.abs_diff(3_600_000_000) < 3_600_000, "an hour, not clamped: {}", us.max);
        assert_eq!(Lifetimes::new().finish().us, None);
    }
}
