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
mod throttle;

pub use direct::try_to_free_pages;
pub use kswapd::KSWAPD_WAKE_DELAY_US;
pub use lru::{LruKind, LruList, Lruvec};
pub use shrink::{NodeFree, ReclaimCost};
pub use swap_io::{SwapDevice, SwapLatency};
pub use throttle::NOPROGRESS_THROTTLE_US;

pub use crate::scan_control::{PassCounts, ReclaimStat, ScanControl, DEF_PRIORITY};

/// `SWAP_CLUSTER_MAX`: the reclaim batch.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `SWAP_CLUSTER_MAX_SKIPPED`: folios of zones a request cannot use that one isolation sets
/// aside before it takes them like the others.
pub const SWAP_CLUSTER_MAX_SKIPPED: u64 = SWAP_CLUSTER_MAX << 10;
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

    /// The owner's page cache pages dirty or under writeback (its part of
    /// `NR_ZONE_WRITE_PENDING`).
    fn write_pending(&self) -> u64 {
        0
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

/// Count a finished reclaim invocation's events on the node.
pub(crate) fn count_reclaim(node: &crate::node::NodeShared, sc: &ScanControl) {
    use crate::stats::VmEvent as E;
    let s = &sc.stat;
    let (scan, steal, priority) = if sc.kswapd {
        (E::PgscanKswapd, E::PgstealKswapd, E::PgscanPriorityKswapd)
    } else {
        (E::PgscanDirect, E::PgstealDirect, E::PgscanPriorityDirect)
    };
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
        (E::NrRefKeepAnon, s.nr_ref_keep[0]),
        (E::NrRefKeepFile, s.nr_ref_keep[1]),
        (E::NrActivateAnon, s.nr_activate[0]),
        (E::NrActivateFile, s.nr_activate[1]),
        (priority, s.priority_pages),
    ] {
        if n > 0 {
            node.count(ev, n);
        }
    }
}
