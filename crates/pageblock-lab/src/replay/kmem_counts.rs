//! The kmem tracepoints a replay compares, one field per tracepoint: the simulation's counts
//! and the trace's are the same type, so a report row reads a field (a misspelt one does not
//! compile) instead of looking a name up and printing 0 when it is not there.

use pageblock_formats::kmem::KMEM_EVENT_NAMES;
use serde::Serialize;

use super::engine::EventCounts;

/// How many times each compared kmem tracepoint fired (serialized by tracepoint name, in
/// name order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KmemCounts {
    /// `mm_page_alloc` (failed ones included).
    pub mm_page_alloc: u64,
    /// `mm_page_alloc_extfrag`.
    pub mm_page_alloc_extfrag: u64,
    /// `mm_page_alloc_zone_locked`.
    pub mm_page_alloc_zone_locked: u64,
    /// `mm_page_free`.
    pub mm_page_free: u64,
    /// `mm_page_pcpu_drain`.
    pub mm_page_pcpu_drain: u64,
}

impl KmemCounts {
    /// The simulation's counts.
    pub fn simulated(e: &EventCounts) -> KmemCounts {
        KmemCounts {
            mm_page_alloc: e.page_alloc,
            mm_page_alloc_extfrag: e.extfrag,
            mm_page_alloc_zone_locked: e.zone_locked,
            mm_page_free: e.page_free,
            mm_page_pcpu_drain: e.pcpu_drain,
        }
    }

    /// A trace's counts, from counters kept by index in [`KMEM_EVENT_NAMES`] (as the trace
    /// reader keeps them).
    pub fn traced(by_index: &[u64; KMEM_EVENT_NAMES.len()]) -> KmemCounts {
        let n = |name: &str| {
            let i = KMEM_EVENT_NAMES.iter().position(|&k| k == name);
            by_index[i.expect("a kmem tracepoint the trace reader counts")]
        };
        KmemCounts {
            mm_page_alloc: n("mm_page_alloc"),
            mm_page_alloc_extfrag: n("mm_page_alloc_extfrag"),
            mm_page_alloc_zone_locked: n("mm_page_alloc_zone_locked"),
            mm_page_free: n("mm_page_free"),
            mm_page_pcpu_drain: n("mm_page_pcpu_drain"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_reads_its_own_tracepoint() {
        let by_index = [1, 2, 3, 4, 5, 6];
        let k = KmemCounts::traced(&by_index);
        let v = serde_json::to_value(k).unwrap();
        let fields = v.as_object().unwrap();
        assert_eq!(fields.len(), 5, "mm_page_free_batched is not compared: {v}");
        for (name, n) in KMEM_EVENT_NAMES.iter().zip(by_index) {
            if let Some(got) = fields.get(*name) {
                assert_eq!(got, n, "{name}");
            }
        }
    }
}
