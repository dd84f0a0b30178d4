//! Counters: zone statistics (`enum zone_stat_item`), allocator events (`enum vm_event_item`,
//! plus pageblock's own decision and work counters), all from one declarative list.
//!
//! Every counter is a [`Counter`]: an atomic written only by the holder of the zone lock
//! (single writer, so a relaxed load + store is enough — the kernel's `WRITE_ONCE`) and read
//! by anyone at any time with a relaxed load (`READ_ONCE`). A monitor reading statistics
//! therefore never waits for the zone lock and never stalls allocation.
//!
//! Each event says whether the kernel has it under the same name in `/proc/vmstat`. Only those
//! are printed in the kernel-format vmstat; the others (fallback decisions and the
//! deterministic work units the lab compares) appear in pageblock's own reports.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A statistics counter with a single writer (the zone-lock holder) and lock-free readers.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter starting at `v`.
    pub const fn new(v: u64) -> Counter {
        Counter(AtomicU64::new(v))
    }

    /// The current value (`READ_ONCE`).
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    /// Overwrite the value (`WRITE_ONCE`). Only the single writer may call this.
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed);
    }

    /// Add `d`. Only the single writer may call this: it is not an atomic read-modify-write.
    #[inline]
    pub fn add(&self, d: u64) {
        self.set(self.get().wrapping_add(d));
    }

    /// Subtract `d`. Only the single writer may call this.
    #[inline]
    pub fn sub(&self, d: u64) {
        self.set(self.get().wrapping_sub(d));
    }

    /// Add a signed delta. Only the single writer may call this.
    #[inline]
    pub fn add_signed(&self, d: i64) {
        self.set(self.get().wrapping_add_signed(d));
    }

    /// Add `d` with an atomic read-modify-write, for counters with several writers.
    #[inline]
    pub fn add_shared(&self, d: u64) {
        self.0.fetch_add(d, Relaxed);
    }
}

/// Zone statistics kept exact on every free-list change (`enum zone_stat_item`, the subset
/// the allocator maintains). Printed in zoneinfo and vmstat under these names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneStat {
    /// `NR_FREE_PAGES`: free pages on the buddy lists, except isolated ones.
    NrFreePages,
    /// `NR_FREE_PAGES_BLOCKS` (6.15+): free pages sitting in free blocks of at least
    /// `pageblock_order`, except isolated ones.
    NrFreePagesBlocks,
    /// `NR_FREE_CMA_PAGES`: free pages on CMA lists.
    NrFreeCmaPages,
}

/// Number of [`ZoneStat`] items.
pub const NR_ZONE_STATS: usize = 3;

impl ZoneStat {
    /// All items, in the kernel's print order.
    pub const ALL: [ZoneStat; NR_ZONE_STATS] =
        [ZoneStat::NrFreePages, ZoneStat::NrFreePagesBlocks, ZoneStat::NrFreeCmaPages];

    /// The name `/proc/zoneinfo` and `/proc/vmstat` print.
    pub const fn name(self) -> &'static str {
        match self {
            ZoneStat::NrFreePages => "nr_free_pages",
            ZoneStat::NrFreePagesBlocks => "nr_free_pages_blocks",
            ZoneStat::NrFreeCmaPages => "nr_free_cma",
        }
    }
}

macro_rules! vm_events {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, kernel: $kernel:literal; )*) => {
        /// An allocator event or unit of work, counted in [`crate::ZoneCounters`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum VmEvent {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl VmEvent {
            /// Every event, in declaration order.
            pub const ALL: &'static [VmEvent] = &[$(VmEvent::$variant,)*];

            /// The counter's name (the kernel's `vmstat_text[]` name where it has one).
            pub const fn name(self) -> &'static str {
                match self { $(VmEvent::$variant => $name,)* }
            }

            /// True if the kernel prints this counter in `/proc/vmstat` under this name.
            pub const fn in_kernel_vmstat(self) -> bool {
                match self { $(VmEvent::$variant => $kernel,)* }
            }
        }
    };
}

vm_events! {
    /// Base pages allocated from this zone (`PGALLOC_<zone>`; the vmstat renderer prints it
    /// as `pgalloc_normal` etc. for the zone's type).
    PgAlloc = "pgalloc", kernel: true;
    /// Base pages freed (`PGFREE`).
    PgFree = "pgfree", kernel: true;
    /// Allocations served by this zone (`NUMA_HIT`: on a single node every allocation is a
    /// local hit; `numa_local` prints the same count).
    NumaHit = "numa_hit", kernel: true;
    /// Allocation requests that found no page after every step available to them.
    PgAllocFail = "pgalloc_fail", kernel: false;
    /// Requests that reached the OOM killer (`__alloc_pages_may_oom` with a victim to find);
    /// there is no OOM killer here, so each of them failed.
    PgAllocOom = "pgalloc_oom", kernel: false;
    /// Direct compaction attempts asked for (`try_to_compact_pages` entered, as its
    /// tracepoint `mm_compaction_try_to_compact_pages` counts them): those that ran, and
    /// those skipped (too little free memory, a lack of memory rather than fragmentation) or
    /// deferred before compacting.
    CompactAttempt = "compact_attempt", kernel: false;
    /// Zone compactions for a request that passed the suitability checks and scanned (where
    /// the kernel's tracepoint `mm_compaction_begin` fires in a task, not kcompactd).
    CompactDirectBegin = "compact_direct_begin", kernel: false;
    /// Direct compaction attempts that ran (`COMPACTSTALL`).
    CompactStall = "compact_stall", kernel: true;
    /// Direct compaction attempts after which the request still failed (`COMPACTFAIL`).
    CompactFail = "compact_fail", kernel: true;
    /// Direct compaction attempts after which the request succeeded (`COMPACTSUCCESS`).
    CompactSuccess = "compact_success", kernel: true;
    /// Pages kswapd scanned on the LRU lists (`PGSCAN_KSWAPD`).
    PgscanKswapd = "pgscan_kswapd", kernel: true;
    /// Pages direct reclaim scanned (`PGSCAN_DIRECT`).
    PgscanDirect = "pgscan_direct", kernel: true;
    /// Pages kswapd reclaimed (`PGSTEAL_KSWAPD`).
    PgstealKswapd = "pgsteal_kswapd", kernel: true;
    /// Pages direct reclaim reclaimed (`PGSTEAL_DIRECT`).
    PgstealDirect = "pgsteal_direct", kernel: true;
    /// Anonymous pages scanned (`PGSCAN_ANON`).
    PgscanAnon = "pgscan_anon", kernel: true;
    /// File pages scanned (`PGSCAN_FILE`).
    PgscanFile = "pgscan_file", kernel: true;
    /// Anonymous pages reclaimed (`PGSTEAL_ANON`).
    PgstealAnon = "pgsteal_anon", kernel: true;
    /// File pages reclaimed (`PGSTEAL_FILE`).
    PgstealFile = "pgsteal_file", kernel: true;
    /// Pages swapped out (`PSWPOUT`).
    Pswpout = "pswpout", kernel: true;
    /// Pages swapped back in (`PSWPIN`), reported by the memory's owner.
    Pswpin = "pswpin", kernel: true;
    /// Pages moved to an active list (`PGACTIVATE`).
    PgActivate = "pgactivate", kernel: true;
    /// Pages moved to an inactive list (`PGDEACTIVATE`).
    PgDeactivate = "pgdeactivate", kernel: true;
    /// Slab objects (here: slab pages) the shrinkers scanned (`SLABS_SCANNED`).
    SlabsScanned = "slabs_scanned", kernel: true;
    /// kswapd balancing runs (`PAGEOUTRUN`).
    Pageoutrun = "pageoutrun", kernel: true;
    /// Anonymous pages reclaim's looks kept on the inactive list, young for the first time
    /// (`FOLIOREF_KEEP`; the tracepoint `mm_vmscan_lru_shrink_inactive`'s `nr_ref_keep`).
    NrRefKeepAnon = "nr_ref_keep_anon", kernel: false;
    /// File pages kept so (`nr_ref_keep` of the file list's records).
    NrRefKeepFile = "nr_ref_keep_file", kernel: false;
    /// Anonymous pages reclaim's looks at the inactive list activated (the tracepoint's
    /// `nr_activate_anon`: used again, under writeback, or not unmappable).
    NrActivateAnon = "nr_activate_anon", kernel: false;
    /// File pages so activated (`nr_activate_file`: also dirty ones).
    NrActivateFile = "nr_activate_file", kernel: false;
    /// kswapd's inactive-list pages scanned, each weighted by the priority it was scanned at
    /// (over `pgscan_kswapd`: the mean priority, as the tracepoint's `priority` gives it).
    PgscanPriorityKswapd = "pgscan_priority_kswapd", kernel: false;
    /// The same for direct reclaim (over `pgscan_direct`).
    PgscanPriorityDirect = "pgscan_priority_direct", kernel: false;
    /// Reclaimed anonymous pages faulted back in (`WORKINGSET_REFAULT_ANON`).
    WorkingsetRefaultAnon = "workingset_refault_anon", kernel: true;
    /// Reclaimed file pages read again (`WORKINGSET_REFAULT_FILE`).
    WorkingsetRefaultFile = "workingset_refault_file", kernel: true;
    /// Huge page faults served with a huge page (`THP_FAULT_ALLOC`).
    ThpFaultAlloc = "thp_fault_alloc", kernel: true;
    /// Huge page faults that fell back to base pages (`THP_FAULT_FALLBACK`).
    ThpFaultFallback = "thp_fault_fallback", kernel: true;
    /// Base pages compaction migrated (`PGMIGRATE_SUCCESS`).
    PgMigrateSuccess = "pgmigrate_success", kernel: true;
    /// Base pages compaction failed to migrate (`PGMIGRATE_FAIL`).
    PgMigrateFail = "pgmigrate_fail", kernel: true;
    /// Pfns the migrate scanner examined, skipped extents included
    /// (`COMPACTMIGRATE_SCANNED`; kcompactd's runs count here too).
    CompactMigrateScanned = "compact_migrate_scanned", kernel: true;
    /// Pfns the free scanner examined (`COMPACTFREE_SCANNED`).
    CompactFreeScanned = "compact_free_scanned", kernel: true;
    /// Pages isolated by either scanner (`COMPACTISOLATED`).
    CompactIsolated = "compact_isolated", kernel: true;
    /// kcompactd runs (`KCOMPACTD_WAKE`).
    CompactDaemonWake = "compact_daemon_wake", kernel: true;
    /// Pfns the migrate scanner examined for kcompactd (`KCOMPACTD_MIGRATE_SCANNED`).
    CompactDaemonMigrateScanned = "compact_daemon_migrate_scanned", kernel: true;
    /// Pfns the free scanner examined for kcompactd (`KCOMPACTD_FREE_SCANNED`).
    CompactDaemonFreeScanned = "compact_daemon_free_scanned", kernel: true;
    /// Requests refused by the zone watermark check (`zone_watermark_fast` failed).
    WatermarkFail = "watermark_fail", kernel: false;
    /// Requests retried without ALLOC_NOFRAGMENT after failing with it
    /// (`get_page_from_freelist`'s relaxation).
    NoFragmentRelaxed = "nofragment_relaxed", kernel: false;
    /// Fallback allocations: every `mm_page_alloc_extfrag` event.
    Extfrag = "pgalloc_extfrag", kernel: false;
    /// Fallbacks that took less than a pageblock from a foreign block (`fragmenting=1`).
    ExtfragFragmenting = "pgalloc_extfrag_fragmenting", kernel: false;
    /// Fallbacks after which the block belonged to the requester (`change_ownership=1`).
    ExtfragChangeOwnership = "pgalloc_extfrag_change_ownership", kernel: false;
    /// Fallbacks in which an unmovable request took a foreign block over (`claimer`, the
    /// per-migratetype counters of the defrag_mode series' bpftrace script).
    ClaimerUnmovable = "claimer_unmovable", kernel: false;
    /// Fallbacks in which a movable request took a foreign block over.
    ClaimerMovable = "claimer_movable", kernel: false;
    /// Fallbacks in which a reclaimable request took a foreign block over.
    ClaimerReclaimable = "claimer_reclaimable", kernel: false;
    /// Fallbacks in which an unmovable request took pages from a foreign block it did not
    /// take over (`steal`).
    StealUnmovable = "steal_unmovable", kernel: false;
    /// Fallbacks in which a movable request took pages from a foreign block.
    StealMovable = "steal_movable", kernel: false;
    /// Fallbacks in which a reclaimable request took pages from a foreign block.
    StealReclaimable = "steal_reclaimable", kernel: false;
    /// Fallbacks that left foreign pages in an unmovable block (`pollute`, by the polluted
    /// block's type).
    PolluteUnmovable = "pollute_unmovable", kernel: false;
    /// Fallbacks that left foreign pages in a movable block.
    PolluteMovable = "pollute_movable", kernel: false;
    /// Fallbacks that left foreign pages in a reclaimable block.
    PolluteReclaimable = "pollute_reclaimable", kernel: false;
    /// Claims of whole free pageblocks (`try_to_claim_block`, `current_order >= pageblock_order`).
    ClaimWholeBlock = "rmqueue_claim_whole_block", kernel: false;
    /// Claims of a partly used pageblock that met the half-block rule.
    ClaimPartialBlock = "rmqueue_claim_partial_block", kernel: false;
    /// Claim attempts rejected by the half-block rule or a zone-straddling block.
    ClaimFail = "rmqueue_claim_fail", kernel: false;
    /// Single blocks stolen from a foreign pageblock (`__rmqueue_steal`).
    Steal = "rmqueue_steal", kernel: false;
    /// Base pages allocated from CMA pageblocks.
    PgAllocCma = "pgalloc_cma", kernel: false;
    /// Base pages allocated from the HIGHATOMIC reserve.
    PgAllocHighAtomic = "pgalloc_highatomic", kernel: false;
    /// Pageblocks moved into the HIGHATOMIC reserve (`reserve_highatomic_pageblock`).
    HighAtomicReserve = "highatomic_reserve", kernel: false;
    /// Pageblocks released from the HIGHATOMIC reserve (`unreserve_highatomic_pageblock`).
    HighAtomicUnreserve = "highatomic_unreserve", kernel: false;
    /// Successful watermark boosts (`boost_watermark` returned true).
    WatermarkBoost = "watermark_boost", kernel: false;
    /// Work: free-list heads examined while searching (deterministic cost unit).
    WorkFreelistProbe = "work_freelist_probe", kernel: false;
    /// Work: merge steps taken while freeing (buddies absorbed).
    WorkMergeStep = "work_merge_step", kernel: false;
    /// Work: free blocks moved between lists by block conversion (`move_freepages_block`).
    WorkBlockMove = "work_block_move", kernel: false;
    /// Work: pages examined by pageblock scans (claim's free/movable count).
    WorkPagesScanned = "work_pages_scanned", kernel: false;
}

/// Number of [`VmEvent`]s.
pub const NR_VM_EVENTS: usize = VmEvent::ALL.len();

/// One [`Counter`] per [`VmEvent`], indexed by `ev as usize`.
#[derive(Debug)]
pub struct EventCounters([Counter; NR_VM_EVENTS]);

impl Default for EventCounters {
    fn default() -> Self {
        EventCounters(std::array::from_fn(|_| Counter::default()))
    }
}

impl std::ops::Deref for EventCounters {
    type Target = [Counter; NR_VM_EVENTS];

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut names: Vec<&str> = VmEvent::ALL.iter().map(|e| e.name()).collect();
        names.extend(ZoneStat::ALL.iter().map(|s| s.name()));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(names.iter().all(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
    }

    #[test]
    fn counter_single_writer_arithmetic() {
        let c = Counter::new(5);
        c.add(3);
        c.sub(2);
        c.add_signed(-6);
        assert_eq!(c.get(), 0);
        c.add_shared(7);
        assert_eq!(c.get(), 7);
    }
}
