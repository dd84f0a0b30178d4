//! The running counters of one statistics pass.

use std::collections::{BTreeMap, BTreeSet};

use pageblock_formats::compaction::CompactionEventKind;
use pageblock_formats::ftrace::Dialect;
use pageblock_formats::kmem::KMEM_EVENT_NAMES;

use super::lifetimes::Lifetimes;
use super::{
    AllocStats, DrainStats, FallbackPair, FallbackStats, GfpCount, GfpMix, LostStats, OrderMigratetype,
    RefillStats, TaskEvents, TimeSpan, TraceStats, GFP_TOP,
};
use crate::{GfpTable, RecordKind, Task, TraceReader, TraceRecord};

/// Pages in a block of `order` (saturating for orders no machine has).
fn pages(order: u8) -> u64 {
    1u64.checked_shl(u32::from(order)).unwrap_or(u64::MAX)
}

fn bump<K: Ord>(map: &mut BTreeMap<K, u64>, key: K) {
    *map.entry(key).or_insert(0) += 1;
}

/// Counters, updated record by record.
pub(super) struct Collector {
    kmem: [u64; 6],
    compaction: [u64; CompactionEventKind::ALL.len()],
    /// Reclaim events, by `VmscanEvent` index.
    vmscan: [u64; crate::VmscanEvent::NAMES.len()],
    alloc: AllocStats,
    alloc_by: BTreeMap<(u8, i8), u64>,
    gfp_allocs: Vec<u64>,
    lifetimes: Lifetimes,
    refill: RefillStats,
    drain: DrainStats,
    fallbacks: FallbackStats,
    fallback_by: BTreeMap<(i8, i8), u64>,
    lost: LostStats,
    lost_events: u64,
    first_us: Option<u64>,
    last_us: Option<u64>,
    cpus: BTreeSet<u32>,
    last_cpu: Option<u16>,
    by_task: [TaskEvents; Task::ALL.len()],
}

impl Collector {
    pub(super) fn new() -> Self {
        Collector {
            kmem: [0; 6],
            compaction: [0; CompactionEventKind::ALL.len()],
            vmscan: [0; crate::VmscanEvent::NAMES.len()],
            alloc: AllocStats::default(),
            alloc_by: BTreeMap::new(),
            gfp_allocs: Vec::new(),
            lifetimes: Lifetimes::new(),
            refill: RefillStats::default(),
            drain: DrainStats::default(),
            fallbacks: FallbackStats::default(),
            fallback_by: BTreeMap::new(),
            lost: LostStats::default(),
            lost_events: 0,
            first_us: None,
            last_us: None,
            cpus: BTreeSet::new(),
            last_cpu: None,
            by_task: Task::ALL.map(|t| TaskEvents { task: t.name(), ..TaskEvents::default() }),
        }
    }

    /// Counts one record.
    pub(super) fn add(&mut self, r: &TraceRecord) {
        if self.last_cpu != Some(r.cpu) {
            self.cpus.insert(u32::from(r.cpu));
            self.last_cpu = Some(r.cpu);
        }
        if let RecordKind::Lost { events } = r.kind {
            self.lost.markers += 1;
            match events.count() {
                Some(n) => {
                    self.lost_events = self.lost_events.saturating_add(n);
                    let e = self.lost.events_by_cpu.entry(u32::from(r.cpu)).or_insert(0);
                    *e = e.saturating_add(n);
                }
                None => self.lost.markers_without_count += 1,
            }
            return;
        }
        self.first_us.get_or_insert(r.time_us);
        self.last_us = Some(r.time_us);
        self.kind(r);
    }

    fn kind(&mut self, r: &TraceRecord) {
        if let Some(i) = r.kind.kmem_index() {
            self.kmem[i] += 1;
        }
        match r.kind {
            RecordKind::Alloc { order, migratetype, gfp, failed } => {
                bump(&mut self.alloc_by, (order, migratetype));
                let i = gfp.0 as usize;
                if i >= self.gfp_allocs.len() {
                    self.gfp_allocs.resize(i + 1, 0);
                }
                self.gfp_allocs[i] += 1;
                if failed {
                    self.alloc.failed += 1;
                    bump(&mut self.alloc.failed_by_order, order);
                } else {
                    self.lifetimes.alloc(r.pfn, r.time_us);
                    let t = &mut self.by_task[r.task as usize];
                    t.allocs += 1;
                    t.alloc_pages = t.alloc_pages.saturating_add(pages(order));
                }
            }
            RecordKind::Free { order } => {
                self.lifetimes.free(r.pfn, r.time_us, false);
                let t = &mut self.by_task[r.task as usize];
                t.frees += 1;
                t.free_pages = t.free_pages.saturating_add(pages(order));
            }
            RecordKind::FreeBatched => self.lifetimes.free(r.pfn, r.time_us, true),
            RecordKind::ZoneLocked { order, percpu_refill, .. } => {
                if percpu_refill {
                    self.refill.events += 1;
                    self.refill.pages = self.refill.pages.saturating_add(pages(order));
                    bump(&mut self.refill.events_by_order, order);
                } else {
                    self.refill.other_zone_locked += 1;
                }
            }
            RecordKind::PcpuDrain { order, .. } => {
                self.drain.pages = self.drain.pages.saturating_add(pages(order));
            }
            RecordKind::Extfrag {
                alloc_migratetype,
                fallback_migratetype,
                fragmenting,
                change_ownership,
                ..
            } => {
                self.fallbacks.fragmenting += u64::from(fragmenting);
                self.fallbacks.change_ownership += u64::from(change_ownership);
                bump(&mut self.fallback_by, (alloc_migratetype, fallback_migratetype));
            }
            RecordKind::Compaction(k) => self.compaction[k as usize] += 1,
            RecordKind::TryToCompactPages { .. } => {
                self.compaction[CompactionEventKind::TryToCompactPages as usize] += 1;
            }
            RecordKind::Vmscan(v) => self.vmscan[v.index()] += 1,
            RecordKind::Lost { .. } => {}
        }
    }

    /// The statistics, with what the reader counted besides records.
    pub(super) fn finish<R: std::io::Read>(self, reader: &TraceReader<R>) -> TraceStats {
        let counts = reader.counts();
        let mut events: BTreeMap<&'static str, u64> = KMEM_EVENT_NAMES.into_iter().zip(self.kmem).collect();
        for (k, n) in CompactionEventKind::ALL.into_iter().zip(self.compaction) {
            if n > 0 {
                events.insert(k.name(), n);
            }
        }
        for (name, n) in crate::VmscanEvent::NAMES.into_iter().zip(self.vmscan) {
            if n > 0 {
                events.insert(name, n);
            }
        }
        let alloc_by = self.alloc_by.into_iter();
        let fallback_by = self.fallback_by.into_iter();
        TraceStats {
            lines: counts.lines,
            events,
            bad_lines: counts.bad_lines,
            lost_events: self.lost_events,
            seconds: 0.0,
            dialect: reader.dialect().map(|d| match d {
                Dialect::Ftrace => "ftrace",
                Dialect::PerfScript => "perf-script",
            }),
            comments: counts.comments,
            other_events: counts.other_events,
            first_bad_line: reader.first_bad_line().map(ToString::to_string),
            truncated: reader.truncated().map(ToString::to_string),
            lost: self.lost,
            time: TimeSpan {
                first_us: self.first_us,
                last_us: self.last_us,
                seconds: self
                    .last_us
                    .zip(self.first_us)
                    .map_or(0.0, |(l, f)| l.saturating_sub(f) as f64 / 1e6),
            },
            cpus: self.cpus.into_iter().collect(),
            alloc: AllocStats {
                total: self.kmem[0],
                by_order_migratetype: alloc_by
                    .map(|((order, migratetype), count)| OrderMigratetype { order, migratetype, count })
                    .collect(),
                ..self.alloc
            },
            gfp: gfp_mix(reader.gfp_table(), &self.gfp_allocs),
            lifetimes: self.lifetimes.finish(),
            refill: self.refill,
            drain: DrainStats { events: self.kmem[4], ..self.drain },
            fallbacks: FallbackStats {
                total: self.kmem[5],
                by_migratetype: fallback_by
                    .map(|((a, f), count)| FallbackPair {
                        alloc_migratetype: a,
                        fallback_migratetype: f,
                        count,
                    })
                    .collect(),
                ..self.fallbacks
            },
            by_task: self.by_task.to_vec(),
        }
    }
}

/// The most frequent masks, most frequent first (ties: first seen first).
fn gfp_mix(table: &GfpTable, allocs: &[u64]) -> GfpMix {
    let mut used: Vec<GfpCount> = table
        .iter()
        .filter_map(|(id, gfp)| {
            let n = allocs.get(id.0 as usize).copied().unwrap_or(0);
            (n > 0).then(|| GfpCount { gfp: gfp.render(), mask: format!("{:#x}", gfp.bits()), allocs: n })
        })
        .collect();
    let distinct = used.len();
    used.sort_by_key(|g| std::cmp::Reverse(g.allocs));
    used.truncate(GFP_TOP);
    GfpMix { distinct, top: used }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_kinds_index_their_counters() {
        for (i, k) in CompactionEventKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
        }
        assert_eq!(pages(9), 512);
        assert_eq!(pages(200), u64::MAX);
    }
}
