//! Compaction (`mm/compaction.c`): make free high-order blocks by moving movable pages out of
//! the bottom of a zone into free pages at its top.
//!
//! Two scanners walk a zone pageblock by pageblock toward each other: the **migrate scanner**
//! (`migrate.rs`) from the low end, isolating movable allocated pages; the **free scanner**
//! (`isolate.rs`) from the high end, isolating free pages to move them into. Each page is then
//! moved by a [`Mover`] and its old copy freed, so free blocks merge at the low end. A run
//! ends when the scanners meet, or earlier when a free block of the wanted order exists
//! (`compact_zone.rs`). What makes it worth trying, and when to stop trying, is decided by
//! the fragmentation index ([`suitable`]) and by deferral after failures (`crate::zone::defer`).
//!
//! Before walking, each scanner looks at a few entries of the MOVABLE free lists for a
//! pageblock worth visiting (`fast_search.rs`). An async run only trylocks the zone lock;
//! finding it held (the thread-safe library) ends the run `Contended` at the next pageblock
//! boundary.
//!
//! Migration can fail: the migrate scanner skips what the kernel's isolation rules skip
//! (pinned anonymous pages, writeback and unmovable dirty pages outside `MIGRATE_SYNC`), and
//! [`Mover::migrate`] may refuse a block, transiently (`-EAGAIN`, retried up to the kernel's
//! pass limits) or not (`-EBUSY`); a failed block goes back to its owner (`migration.rs`).
//!
//! Not modelled: the LRU-isolation throttle (`too_many_isolated`) and fatal signals. Of the
//! scheduler only `need_resched()` between zones is ([`crate::NodeLocks::need_resched`]):
//! a driver that knows how often the asking tasks found it set says so.
//!
//! # Invariants
//!
//! * A page is in exactly one place during a run: allocated to its owner, isolated by the
//!   migrate scanner (state `Isolated`, still the owner's until moved), isolated by the free
//!   scanner (state `Isolated`, held in the run's `freepages`), on a free list or a CPU's list.
//!   Free + allocated + per-CPU + isolated pages equal the managed pages at every step
//!   (`verify` counts `Isolated` heads).
//! * Every page a run isolated is back — moved, put back or freed — when the run returns.

mod compact_zone;
mod fast_search;
mod isolate;
mod kcompactd;
mod migrate;
mod migration;
#[cfg(test)]
mod scan_tests;
pub mod suitable;

pub(crate) use compact_zone::compaction_allocated;
pub use compact_zone::{compact_node, try_to_compact_pages};
pub use kcompactd::{
    fragmentation_score_node, kcompactd_pass, kcompactd_work_requested, wakeup_kcompactd, KcompactdPass,
    KcompactdWork, KCOMPACTD_PASS_MIN_US, KCOMPACTD_SCAN_NS_PER_PFN, PROACTIVE_INTERVAL_US,
};
pub use suitable::{compaction_zonelist_suitable, fragmentation_index};

pub use crate::mover::{FolioState, MigrateFail, MigrateMode, Mover};
pub use crate::zone::defer::COMPACT_MAX_DEFER_SHIFT;

/// `COMPACT_CLUSTER_MAX` (= `SWAP_CLUSTER_MAX`): pages isolated for migration per batch.
pub const COMPACT_CLUSTER_MAX: u64 = 32;

/// `compact_gap(order)`: the free pages compaction needs on top of the watermark to have
/// room to migrate into.
pub const fn compact_gap(order: u32) -> u64 {
    2 << order
}

/// What a compaction attempt achieved, in the kernel's value order (the slow path compares
/// them and `try_to_compact_pages` returns the largest over the zones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompactResult {
    /// `COMPACT_NOT_SUITABLE_ZONE`.
    NotSuitableZone,
    /// `COMPACT_SKIPPED`: compaction did not start (not possible, or reclaim is the better
    /// step first).
    Skipped,
    /// `COMPACT_DEFERRED`: recent failures at this order; not tried.
    Deferred,
    /// `COMPACT_NO_SUITABLE_PAGE`.
    NoSuitablePage,
    /// `COMPACT_CONTINUE`.
    Continue,
    /// `COMPACT_COMPLETE`: the whole zone was scanned without success.
    Complete,
    /// `COMPACT_PARTIAL_SKIPPED`: part of the zone was scanned (skip hints) without success.
    PartialSkipped,
    /// `COMPACT_CONTENDED`: gave up on lock contention or a pending signal.
    Contended,
    /// `COMPACT_SUCCESS`: a suitable free block exists now.
    Success,
}

/// How hard direct compaction tries (`enum compact_priority`): a lower value works harder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompactPriority {
    /// `COMPACT_PRIO_SYNC_FULL` (`MIN_COMPACT_PRIORITY`): wait for everything.
    SyncFull,
    /// `COMPACT_PRIO_SYNC_LIGHT` (`MIN_COMPACT_COSTLY_PRIORITY`, `DEF_COMPACT_PRIORITY`).
    SyncLight,
    /// `COMPACT_PRIO_ASYNC` (`INIT_COMPACT_PRIORITY`): never block.
    Async,
}

impl CompactPriority {
    /// `DEF_COMPACT_PRIORITY`.
    pub const DEFAULT: CompactPriority = CompactPriority::SyncLight;
    /// `INIT_COMPACT_PRIORITY`.
    pub const INIT: CompactPriority = CompactPriority::Async;

    /// The next harder priority, if any.
    pub fn harder(self) -> Option<CompactPriority> {
        match self {
            CompactPriority::Async => Some(CompactPriority::SyncLight),
            CompactPriority::SyncLight => Some(CompactPriority::SyncFull),
            CompactPriority::SyncFull => None,
        }
    }
}
