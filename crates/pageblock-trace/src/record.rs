//! [`TraceRecord`]: one decoded trace event in 32 bytes, for replay and statistics.
//!
//! Only what an allocator replay or a statistic needs survives decoding: the time, the pfn,
//! the CPU, which kind of task it was ([`Task`]: the reclaim and compaction daemons apart from
//! everyone else) and a [`RecordKind`] with the event's small fields. Page pointers, comms,
//! pids and irq flags are dropped; gfp masks are interned ([`GfpId`], see
//! [`GfpTable`](super::GfpTable)).

use pageblock_formats::compaction::CompactionEventKind;
use pageblock_formats::kmem::KMEM_EVENT_NAMES;

/// An interned gfp mask: an index into the reader's [`GfpTable`](super::GfpTable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfpId(pub u32);

/// The dropped-event count of a `CPU:n [LOST …]` line, kept in 8 bytes of 4-byte alignment
/// so that a [`TraceRecord`] stays 32 bytes. Like the kernel (`lost_events == (unsigned
/// long)-1`), an all-ones count means "unknown" (`CPU:n [LOST EVENTS]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LostEvents {
    low: u32,
    high: u32,
}

impl LostEvents {
    /// A marker with `events` dropped events (`None`: the count is unknown).
    pub fn new(events: Option<u64>) -> Self {
        let v = events.unwrap_or(u64::MAX);
        LostEvents { low: v as u32, high: (v >> 32) as u32 }
    }

    /// How many events were dropped, when the kernel knew.
    pub fn count(self) -> Option<u64> {
        let v = u64::from(self.high) << 32 | u64::from(self.low);
        (v != u64::MAX).then_some(v)
    }
}

/// What happened, with the event's fields that replay and statistics use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// `mm_page_alloc`: the end of `__alloc_pages`. `migratetype` is the requested type.
    Alloc {
        /// Allocation order.
        order: u8,
        /// Requested migratetype (from the gfp mask).
        migratetype: i8,
        /// The gfp mask.
        gfp: GfpId,
        /// The allocation failed (`page=0000000000000000 pfn=0x0`, perf `page=(nil)`); the
        /// record's pfn is then 0.
        failed: bool,
    },
    /// `mm_page_free`.
    Free {
        /// Order of the freed block.
        order: u8,
    },
    /// `mm_page_free_batched`: a folio freed in a batch. The event prints a literal
    /// `order=0`, so the real order is unknown (the matching allocation knows it). On 6.x
    /// kernels it is the **second** event of such a free: `free_unref_folios()` has traced
    /// `mm_page_free` (with the order) for the same page just before, on the same CPU, so a
    /// replay must not free the page again.
    FreeBatched,
    /// `mm_page_alloc_zone_locked`: a block taken off a buddy free list under the zone lock.
    ZoneLocked {
        /// Order of the block.
        order: u8,
        /// The free list it came from.
        migratetype: i8,
        /// For a per-CPU list refill (`percpu_refill=1`).
        percpu_refill: bool,
    },
    /// `mm_page_pcpu_drain`: a page going back from a per-CPU list to the buddy lists.
    PcpuDrain {
        /// Order of the page.
        order: u8,
        /// The free list it goes to.
        migratetype: i8,
    },
    /// `mm_page_alloc_extfrag`: an allocation fell back to another migratetype.
    Extfrag {
        /// Requested order.
        alloc_order: u8,
        /// Order of the block taken.
        fallback_order: u8,
        /// Requested migratetype.
        alloc_migratetype: i8,
        /// Migratetype of the list the block came from.
        fallback_migratetype: i8,
        /// `fallback_order < pageblock_order`, computed here as the kernel's print fmt does
        /// (perf/libtraceevent print `fragmenting=10`, a known libtraceevent bug).
        fragmenting: bool,
        /// The pageblock changed owner.
        change_ownership: bool,
    },
    /// A compaction event (which one only; `mm_compaction_try_to_compact_pages` is
    /// [`RecordKind::TryToCompactPages`]).
    Compaction(CompactionEventKind),
    /// `mm_compaction_try_to_compact_pages`: an allocation asks for direct compaction (the
    /// request that asked, and how hard).
    TryToCompactPages {
        /// The order of the request.
        order: u8,
        /// Its mask.
        gfp: GfpId,
        /// The kernel's `enum compact_priority`: 0 sync full, 1 sync light, 2 async.
        priority: u8,
        /// Whether the asking task had `need_resched()` set as it began (the line's flag
        /// characters; `None` without them). Async compaction gives up on the zones left
        /// once it is set.
        need_resched: Option<bool>,
    },
    /// A reclaim event (which one only).
    Vmscan(VmscanEvent),
    /// `CPU:n [LOST …]`: the CPU's ring buffer dropped events before the next line.
    Lost {
        /// How many.
        events: LostEvents,
    },
}

impl RecordKind {
    /// For a kmem event, its index in `KMEM_EVENT_NAMES` (where counters of the six are kept).
    #[inline]
    pub fn kmem_index(&self) -> Option<usize> {
        Some(match self {
            RecordKind::Alloc { .. } => 0,
            RecordKind::Free { .. } => 1,
            RecordKind::FreeBatched => 2,
            RecordKind::ZoneLocked { .. } => 3,
            RecordKind::PcpuDrain { .. } => 4,
            RecordKind::Extfrag { .. } => 5,
            RecordKind::Compaction(_)
            | RecordKind::TryToCompactPages { .. }
            | RecordKind::Vmscan(_)
            | RecordKind::Lost { .. } => return None,
        })
    }

    /// The tracepoint name, or `None` for a lost-events marker.
    pub fn event_name(&self) -> Option<&'static str> {
        match self {
            RecordKind::Compaction(k) => Some(k.name()),
            RecordKind::TryToCompactPages { .. } => Some(CompactionEventKind::TryToCompactPages.name()),
            RecordKind::Vmscan(v) => Some(v.name()),
            _ => self.kmem_index().map(|i| KMEM_EVENT_NAMES[i]),
        }
    }
}

/// The reclaim tracepoints a replay reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VmscanEvent {
    /// `mm_vmscan_direct_reclaim_begin`: a task starts reclaiming for its own allocation of
    /// `order` with `gfp` (the request that stalled: `allocstall_*` counts one); the pages
    /// the task frees until its end, on any CPU, are reclaim's ([`Task::DirectReclaim`]).
    DirectReclaimBegin {
        /// The order of the request.
        order: u8,
        /// Its mask.
        gfp: GfpId,
    },
    /// `mm_vmscan_direct_reclaim_end`.
    DirectReclaimEnd,
    /// `mm_vmscan_wakeup_kswapd`: an allocation woke a sleeping kswapd (the tracepoint fires
    /// only when kswapd waits and the node is unbalanced).
    WakeupKswapd,
    /// `mm_vmscan_kswapd_wake`: kswapd starts a `balance_pgdat` run.
    KswapdWake,
    /// `mm_vmscan_lru_shrink_inactive`: one batch of reclaim's looks at an inactive list.
    LruShrinkInactive(ShrinkInactive),
}

/// What a replay reads of `mm_vmscan_lru_shrink_inactive`: how one `shrink_inactive_list()`
/// call judged the pages it took off a list's tail. A call takes up to `SWAP_CLUSTER_MAX`
/// pages and at most one large folio more, so each count fits 16 bits; a larger one (from a
/// malformed or future kernel's line) is held as 65,535.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShrinkInactive {
    /// `nr_scanned`.
    pub scanned: u16,
    /// `nr_reclaimed`: freed by this call.
    pub reclaimed: u16,
    /// `nr_activate_anon + nr_activate_file` (a call looks at one list).
    pub activated: u16,
    /// `nr_ref_keep`: kept on the list, young for the first time.
    pub ref_keep: u16,
    /// `priority`.
    pub priority: u8,
    /// The file list, else the anonymous one.
    pub file: bool,
}

impl ShrinkInactive {
    /// The record of a parsed event.
    pub fn of(e: &pageblock_formats::vmscan::MmVmscanLruShrinkInactive) -> ShrinkInactive {
        let n = |v: i64| u16::try_from(v.max(0)).unwrap_or(u16::MAX);
        ShrinkInactive {
            scanned: n(e.nr_scanned),
            reclaimed: n(e.nr_reclaimed),
            activated: n(i64::from(e.nr_activate_anon) + i64::from(e.nr_activate_file)),
            ref_keep: n(e.nr_ref_keep),
            priority: u8::try_from(e.priority.clamp(0, i32::from(u8::MAX))).unwrap_or(u8::MAX),
            file: e.file,
        }
    }
}

impl VmscanEvent {
    /// Every event's tracepoint name, by [`VmscanEvent::index`].
    pub const NAMES: [&'static str; 5] = [
        "mm_vmscan_direct_reclaim_begin",
        "mm_vmscan_direct_reclaim_end",
        "mm_vmscan_wakeup_kswapd",
        "mm_vmscan_kswapd_wake",
        "mm_vmscan_lru_shrink_inactive",
    ];

    /// The event's place in [`VmscanEvent::NAMES`].
    pub fn index(self) -> usize {
        match self {
            VmscanEvent::DirectReclaimBegin { .. } => 0,
            VmscanEvent::DirectReclaimEnd => 1,
            VmscanEvent::WakeupKswapd => 2,
            VmscanEvent::KswapdWake => 3,
            VmscanEvent::LruShrinkInactive(_) => 4,
        }
    }

    /// The tracepoint's name.
    pub fn name(self) -> &'static str {
        VmscanEvent::NAMES[self.index()]
    }

    /// The index of the event `name` names, if a replay reads it.
    pub fn index_of(name: &[u8]) -> Option<usize> {
        VmscanEvent::NAMES.iter().position(|n| n.as_bytes() == name)
    }

    /// The event of index `i` whose payload says nothing a replay reads (all but
    /// `mm_vmscan_direct_reclaim_begin` and `mm_vmscan_lru_shrink_inactive`).
    pub fn without_payload(i: usize) -> Option<VmscanEvent> {
        [VmscanEvent::DirectReclaimEnd, VmscanEvent::WakeupKswapd, VmscanEvent::KswapdWake]
            .get(i.checked_sub(1)?)
            .copied()
    }
}

/// The task an event happened in, as far as a replay must tell them apart: a page kswapd or
/// kcompactd frees is the kernel's own decision (reclaim, migration), not the workload's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Task {
    /// Any other task (the workload, and the kernel working on its behalf).
    #[default]
    Other,
    /// `kswapdN`: background reclaim.
    Kswapd,
    /// `kcompactdN`: background compaction.
    Kcompactd,
    /// A task inside its own direct reclaim (`mm_vmscan_direct_reclaim_begin` to `_end`,
    /// whichever CPUs it ran on meanwhile): what it frees is reclaim's, not the workload's.
    /// The reader tells it from [`Task::Other`] by the task's pid.
    DirectReclaim,
    /// A task inside its own direct compaction (`mm_compaction_begin` to `_end`): what it
    /// frees are migration sources.
    DirectCompaction,
}

impl Task {
    /// The kind of the task named `comm` (leading spaces, as ftrace pads it, are skipped);
    /// never one of the direct-work kinds, which need the task's history.
    #[inline]
    pub fn of_comm(comm: &[u8]) -> Task {
        let start = comm.iter().position(|&c| c != b' ').unwrap_or(comm.len());
        let comm = &comm[start..];
        if comm.first() != Some(&b'k') {
            Task::Other
        } else if comm.starts_with(b"kswapd") {
            Task::Kswapd
        } else if comm.starts_with(b"kcompactd") {
            Task::Kcompactd
        } else {
            Task::Other
        }
    }

    /// Every kind, in declaration order.
    pub const ALL: [Task; 5] =
        [Task::Other, Task::Kswapd, Task::Kcompactd, Task::DirectReclaim, Task::DirectCompaction];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Task::Other => "other",
            Task::Kswapd => "kswapd",
            Task::Kcompactd => "kcompactd",
            Task::DirectReclaim => "direct reclaim",
            Task::DirectCompaction => "direct compaction",
        }
    }
}

/// One decoded trace line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    /// Timestamp in microseconds (a lost-events marker, which has none, carries the time of
    /// the line before it).
    pub time_us: u64,
    /// The page frame number (0 for failed allocations and markers). For compaction events:
    /// the migrate scanner's pfn at `mm_compaction_begin` and `_end`, the start of the range
    /// at `mm_compaction_isolate_migratepages`, 0 for the others.
    pub pfn: u64,
    /// The CPU (a record's CPU number fits 16 bits, as every Linux `NR_CPUS` does).
    pub cpu: u16,
    /// The kind of task it happened in.
    pub task: Task,
    /// What happened.
    pub kind: RecordKind,
}

const _: () = assert!(std::mem::size_of::<TraceRecord>() <= 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_counts_round_trip_and_all_ones_is_unknown() {
        for v in [Some(0), Some(1), Some(u64::from(u32::MAX) + 5), Some(u64::MAX - 1), None] {
            assert_eq!(LostEvents::new(v).count(), v);
        }
        assert_eq!(LostEvents::new(Some(u64::MAX)).count(), None, "the kernel's own sentinel");
    }

    #[test]
    fn daemons_are_told_by_their_comm() {
        assert_eq!(Task::of_comm(b"         kswapd0"), Task::Kswapd);
        assert_eq!(Task::of_comm(b"kswapd1"), Task::Kswapd);
        assert_eq!(Task::of_comm(b"      kcompactd0"), Task::Kcompactd);
        assert_eq!(Task::of_comm(b"kworker/0:1"), Task::Other);
        assert_eq!(Task::of_comm(b"cc1"), Task::Other);
        assert_eq!(Task::of_comm(b""), Task::Other);
    }

    #[test]
    fn small_and_named() {
        assert_eq!(std::mem::size_of::<TraceRecord>(), 32);
        assert_eq!(RecordKind::FreeBatched.event_name(), Some("mm_page_free_batched"));
        let k = RecordKind::Compaction(CompactionEventKind::KcompactdSleep);
        assert_eq!(k.event_name(), Some("mm_compaction_kcompactd_sleep"));
        assert_eq!(RecordKind::Lost { events: LostEvents::new(None) }.event_name(), None);
    }
}
