//! What a trace says about the machine's state when it began, gathered while it is read:
//!
//! * the pfn range its allocations and frees touch, and the lowest such pfn in each zone of
//!   the recording's `before.zoneinfo` (where the managed pages are);
//! * blocks it frees before it ever allocates them: allocated when the trace began (a free
//!   inside an earlier allocation, or of a pfn freed before, is not);
//! * the first pageblock type each pageblock shows: the free list a block was taken from or
//!   drained to, or a fallback's source type.

use std::ops::Range;

use rustc_hash::FxHashMap;

use pageblock_core::migratetype::MigrateType;
use pageblock_core::{show, ZoneType};

use pageblock_core::pfn_table::PfnTable;
use pageblock_trace::{RecordKind, TraceRecord};

/// Per pfn: the largest order allocated at it, plus one (0: never allocated)...
const ALLOCATED_ORDER: u8 = 0x1f;
/// ... and whether it was freed.
const FREED: u8 = 0x80;

/// The facts, and what gathering them needs to know.
#[derive(Debug)]
pub struct TraceFacts {
    /// Lowest and highest pfn of an allocation or free.
    pub pfn_range: Option<(u64, u64)>,
    /// Per zone span of the recording, the lowest allocated or freed pfn inside it.
    pub lowest_in_zone: Vec<(ZoneType, Range<u64>, Option<u64>)>,
    /// Blocks `(pfn, order)` freed before they are allocated.
    pub first_frees: Vec<(u64, u32)>,
    /// The first type shown per pageblock (`pfn >> pageblock_order`).
    pub votes: FxHashMap<u64, MigrateType>,
    pageblock_order: u32,
    max_order: u32,
    config_cma: bool,
    /// `ALLOCATED_ORDER | FREED` per pfn.
    pages: PfnTable<u8>,
}

impl TraceFacts {
    /// Facts about a trace of a machine with these pageblock and max orders, CMA configured
    /// or not, and (when known) these zone spans.
    pub fn new(
        pageblock_order: u32,
        max_order: u32,
        config_cma: bool,
        spans: Vec<(ZoneType, Range<u64>)>,
    ) -> Self {
        TraceFacts {
            pfn_range: None,
            lowest_in_zone: spans.into_iter().map(|(t, r)| (t, r, None)).collect(),
            first_frees: Vec::new(),
            votes: FxHashMap::default(),
            pageblock_order,
            max_order,
            config_cma,
            pages: PfnTable::default(),
        }
    }

    /// Take in one record.
    pub fn observe(&mut self, r: &TraceRecord) {
        match r.kind {
            RecordKind::Alloc { failed: false, order, .. } => {
                self.page_event(r.pfn);
                let p = self.pages.entry(r.pfn);
                // Orders beyond the field (no real event has them) cover as much as any.
                let stored = order.min(ALLOCATED_ORDER - 1) + 1;
                *p = (*p & FREED) | (*p & ALLOCATED_ORDER).max(stored);
            }
            RecordKind::Free { order } => {
                self.page_event(r.pfn);
                let p = self.pages.entry(r.pfn);
                let first_free = *p & FREED == 0;
                *p |= FREED;
                let first = first_free && !self.covered(r.pfn);
                self.first_frees.extend(first.then_some((r.pfn, u32::from(order))));
            }
            RecordKind::ZoneLocked { migratetype, .. }
            | RecordKind::PcpuDrain { migratetype, .. }
            | RecordKind::Extfrag { fallback_migratetype: migratetype, .. } => self.vote(r.pfn, migratetype),
            _ => {}
        }
    }

    fn page_event(&mut self, pfn: u64) {
        let (lo, hi) = self.pfn_range.unwrap_or((pfn, pfn));
        self.pfn_range = Some((lo.min(pfn), hi.max(pfn)));
        for (_, span, lowest) in &mut self.lowest_in_zone {
            if span.contains(&pfn) {
                *lowest = Some(lowest.map_or(pfn, |l| l.min(pfn)));
            }
        }
    }

    /// True if an earlier allocation covers `pfn`.
    fn covered(&mut self, pfn: u64) -> bool {
        (0..=self.max_order).any(|o| {
            let head = pfn & !((1u64 << o) - 1);
            let a = self.pages.get(head) & ALLOCATED_ORDER;
            a != 0 && u32::from(a - 1) >= o
        })
    }

    fn vote(&mut self, pfn: u64, abi_migratetype: i8) {
        let shown = MigrateType::ALL
            .into_iter()
            .find(|&m| show::abi_migratetype(self.config_cma, m) == i32::from(abi_migratetype))
            .filter(|m| m.is_mergeable() || *m == MigrateType::HighAtomic);
        if let Some(mt) = shown {
            self.votes.entry(pfn >> self.pageblock_order).or_insert(mt);
        }
    }

    /// The lowest allocated or freed pfn in the recording's zone `t`.
    pub fn lowest_in(&self, t: ZoneType) -> Option<u64> {
        self.lowest_in_zone.iter().find(|(z, _, _)| *z == t).and_then(|(_, _, l)| *l)
    }

    /// Done reading: drop what only gathering needed.
    pub fn finish(&mut self) {
        self.pages = PfnTable::default();
    }
}
