//! Reclaim (`mm/vmscan.c`): take memory back from its users when free memory runs low —
//! in the background by kswapd ([`kswapd`]), or by the allocating task itself when that is
//! not enough ([`direct`]).
//!
//! What can be reclaimed is on the node's LRU lists ([`lru`]): anonymous memory (swapped
//! out), page cache (dropped) and reclaimable slab (shrunk). [`shrink`] picks the victims.
//! The user of a reclaimed page learns of it through [`Unmap`] (the kernel's
//! `try_to_unmap` and the page cache's removal), and the page is freed through the one
//! allocation path. The simulator keeps the LRU lists; the library keeps none (its memory
//! belongs to its caller) and its `shrink_node` asks the caller's registered shrinkers.

pub mod direct;
#[cfg(test)]
mod dirty_tests;
pub mod kswapd;
pub mod lru;
mod reclaim_compaction;
pub mod shrink;
pub mod swap_io;

pub use direct::try_to_free_pages;
pub use kswapd::{Daemons, KSWAPD_WAKE_DELAY_US};
pub use lru::{LruKind, LruList, Lruvec};
pub use shrink::{NodeFree, ReclaimCost};
pub use swap_io::{SwapDevice, SwapLatency};

/// `DEF_PRIORITY`: a reclaim pass scans `size >> priority` pages of each list.
pub const DEF_PRIORITY: u32 = 12;
/// `SWAP_CLUSTER_MAX`: the reclaim batch.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `MAX_RECLAIM_RETRIES`: kswapd gives up on a node after this many passes that freed
/// nothing (`kswapd_failures`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// The owner of reclaimable memory: forget a page that reclaim takes.
pub trait Unmap {
    /// Unmap the block of 2^`order` pages at `pfn` of kind `kind` (swap an anonymous page
    /// out, drop a file page from the cache keeping a shadow for refault detection, free a
    /// slab page's objects); `workingset` (`PG_workingset`: it was active once) goes into
    /// the shadow entry. Return false if it cannot go now (pinned, locked): it stays.
    fn try_to_unmap(&self, pfn: u64, order: u32, kind: LruKind, workingset: bool) -> bool;

    /// `folio_check_dirty_writeback()`: whether the page cache page at `pfn` is dirty or
    /// under writeback. Reclaim cannot write page cache itself (6.18's file systems have no
    /// `->writepage`), so a dirty page waits for the owner's flusher. By default every page
    /// is clean.
    fn folio_check_dirty_writeback(&self, _pfn: u64) -> DirtyWriteback {
        DirtyWriteback::default()
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)` at `now_us`: a reclaim batch met only
    /// dirty page cache not yet queued for writeback; the flusher starts writing every dirty
    /// page.
    fn wakeup_flusher_threads(&self, _now_us: u64) {}

    /// The owner's writeback up to `now_us`: the pfns of page cache pages whose write
    /// completed (`folio_end_writeback`; the node rotates those reclaim marked).
    fn writeback_completed(&self, _now_us: u64) -> Vec<u64> {
        Vec::new()
    }

    /// When the next `pages` pages of the owner's page cache writeback in flight complete,
    /// in order (fewer if fewer are in flight).
    fn writeback_ends_us(&self, _pages: u64) -> Vec<u64> {
        Vec::new()
    }
}

/// What `folio_check_dirty_writeback()` finds of a page cache page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirtyWriteback {
    /// `PG_dirty`: written, not yet queued for writeback.
    pub dirty: bool,
    /// `PG_writeback`: being written back.
    pub writeback: bool,
}

/// What a reclaim pass did, by kind (the vmstat events it feeds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStat {
    /// `pgscan_anon`.
    pub pgscan_anon: u64,
    /// `pgscan_file`.
    pub pgscan_file: u64,
    /// `pgsteal_anon`.
    pub pgsteal_anon: u64,
    /// `pgsteal_file`.
    pub pgsteal_file: u64,
    /// `pswpout`: anonymous pages written to swap.
    pub pswpout: u64,
    /// `pgactivate`.
    pub pgactivate: u64,
    /// `pgdeactivate`.
    pub pgdeactivate: u64,
    /// `slabs_scanned`.
    pub slabs_scanned: u64,
}

/// `struct scan_control`: one reclaim invocation's goal and progress.
#[derive(Clone, Debug)]
pub struct ScanControl {
    /// Pages to reclaim before a direct reclaimer may stop.
    pub nr_to_reclaim: u64,
    /// Current scan priority (12 = lightest).
    pub priority: u32,
    /// The order reclaim works for (kswapd drops it to 0 once it reclaimed enough).
    pub order: u32,
    /// The highest zone (node zone index) whose pages count.
    pub reclaim_idx: usize,
    /// Anonymous memory may be swapped out (boosted kswapd runs do not swap).
    pub may_swap: bool,
    /// kswapd (scans every list in proportion) rather than a direct reclaimer.
    pub kswapd: bool,
    /// The request may compact (`gfp_compaction_allowed`: it may do I/O), so reclaim may
    /// work on until compaction has room (`should_continue_reclaim`).
    pub compaction_allowed: bool,
    /// Age the active lists whatever `prepare_scan_control` finds (the retry of a reclaim
    /// that skipped them and took nothing).
    pub force_deactivate: bool,
    /// A pass left an active list alone because it may not be deactivated.
    pub skipped_deactivate: bool,
    /// Pages scanned so far.
    pub nr_scanned: u64,
    /// Pages reclaimed so far.
    pub nr_reclaimed: u64,
    /// Per-kind detail.
    pub stat: ReclaimStat,
    /// The current `shrink_node` pass's isolation counts (`sc->nr`, reset per pass).
    pub nr: PassCounts,
    /// Time spent asleep in `reclaim_throttle`, in microseconds.
    pub throttled_us: u64,
}

/// What one `shrink_node` pass met (`sc->nr`): the pages it took off the inactive lists,
/// and those of them still under writeback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassCounts {
    /// `nr.taken`: pages isolated from the inactive lists.
    pub taken: u64,
    /// `nr.writeback`: under writeback, met for the first time with `PG_reclaim` unset or by
    /// a direct reclaimer.
    pub writeback: u64,
    /// `nr.immediate`: under writeback and met again by kswapd while the node is flagged
    /// `PGDAT_WRITEBACK` — pages cycle through the LRU faster than they are written.
    pub immediate: u64,
}

impl ScanControl {
    /// A fresh scan at [`DEF_PRIORITY`].
    pub fn new(nr_to_reclaim: u64, order: u32, reclaim_idx: usize, kswapd: bool) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            order,
            reclaim_idx,
            may_swap: true,
            kswapd,
            compaction_allowed: true,
            force_deactivate: false,
            skipped_deactivate: false,
            nr_scanned: 0,
            nr_reclaimed: 0,
            stat: ReclaimStat::default(),
            nr: PassCounts::default(),
            throttled_us: 0,
        }
    }

    /// The reclaimer's time in this invocation so far: [`kswapd::KSWAPD_SCAN_NS_PER_PAGE`]
    /// per page scanned, plus its throttled sleeps. I/O it submits is queued at the
    /// invocation's start plus this.
    pub fn elapsed_us(&self) -> u64 {
        kswapd::scan_time_us(self.nr_scanned) + self.throttled_us
    }
}

/// Count a finished reclaim invocation's events on the node.
pub(crate) fn count_reclaim(node: &crate::node::NodeShared, sc: &ScanControl) {
    use crate::stats::VmEvent as E;
    let s = &sc.stat;
    let (scan, steal) =
        if sc.kswapd { (E::PgscanKswapd, E::PgstealKswapd) } else { (E::PgscanDirect, E::PgstealDirect) };
    for (ev, n) in [
        (scan, s.pgscan_anon + s.pgscan_file),
        (steal, s.pgsteal_anon + s.pgsteal_file),
        (E::PgscanAnon, s.pgscan_anon),
        (E::PgscanFile, s.pgscan_file),
        (E::PgstealAnon, s.pgsteal_anon),
        (E::PgstealFile, s.pgsteal_file),
        (E::Pswpout, s.pswpout),
        (E::PgActivate, s.pgactivate),
        (E::PgDeactivate, s.pgdeactivate),
        (E::SlabsScanned, s.slabs_scanned),
    ] {
        if n > 0 {
            node.count(ev, n);
        }
    }
}
