//! Compaction (`mm/compaction.c`): make free high-order blocks by moving movable pages out of
//! the bottom of a zone into free pages at its top.
//!
//! Two scanners walk a zone pageblock by pageblock toward each other: the **migrate scanner**
//! (`migrate.rs`) from the low end, isolating movable allocated pages; the **free scanner**
//! (`isolate.rs`) from the high end, isolating free pages to move them into. Each page is then
//! moved by a [`Mover`] and its old copy freed, so free blocks merge at the low end. A run
//! ends when the scanners meet, or earlier when a free block of the wanted order exists
//! (`compact_zone.rs`). What makes it worth trying, and when to stop trying, is decided by
//! the fragmentation index ([`suitable`]) and by deferral after failures (`defer.rs`).
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
//! Not modelled: the LRU-isolation throttle (`too_many_isolated`), `need_resched` and fatal
//! signals: the simulator has no scheduler or signals, so nothing would set them.
//!
//! # Invariants
//!
//! * A page is in exactly one place during a run: allocated to its owner, isolated by the
//!   migrate scanner (state `Isolated`, still the owner's until moved), isolated by the free
//!   scanner (state `Isolated`, held in the run's `freepages`), on a free list or a CPU's list.
//!   Free + allocated + per-CPU + isolated pages equal the managed pages at every step
//!   (`verify` counts `Isolated` heads).
//! * Every page a run isolated is back — moved, put back or freed — when the run returns.

mod capture;
mod compact_zone;
pub(crate) mod defer;
mod fast_search;
mod isolate;
mod kcompactd;
mod migrate;
mod migration;
#[cfg(test)]
mod scan_tests;
pub mod suitable;

pub(crate) use capture::Capture;
pub(crate) use compact_zone::compaction_allocated;
pub use compact_zone::{compact_node, try_to_compact_pages};
pub use defer::ZoneCompaction;
pub use kcompactd::{
    fragmentation_score_node, kcompactd_pass, kcompactd_work_requested, wakeup_kcompactd, KcompactdPass,
    KcompactdWork, COMPACT_MAX_DEFER_SHIFT, KCOMPACTD_PASS_MIN_US, KCOMPACTD_SCAN_NS_PER_PFN,
    PROACTIVE_INTERVAL_US,
};
pub use suitable::{compaction_zonelist_suitable, fragmentation_index};

use crate::types::Pfn;

/// Moves the contents of an allocated block to another place (`migrate_folio` and the
/// owner's page-table update). The simulator moves the owner's record; a library that owns
/// real memory copies the bytes. Called with no allocator lock held.
pub trait Mover {
    /// Move the block of 2^`order` pages at `from` to `to` (a block of the same order,
    /// allocated for it), waiting as `mode` allows. On an error the block stays where it
    /// was: [`MigrateFail::Again`] is worth retrying at once (compaction retries it up to
    /// the kernel's pass limits), [`MigrateFail::Busy`] is not (in this mode).
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, mode: MigrateMode) -> Result<(), MigrateFail>;

    /// The state of the block at `pfn` that decides whether the migrate scanner may isolate
    /// it (the page flags and counts `isolate_migratepages_block` reads). By default a clean
    /// anonymous page nobody pins: every movable block is a candidate.
    fn folio_state(&self, _pfn: Pfn, _order: u32) -> FolioState {
        FolioState::default()
    }

    /// Whether this mover moves only blocks published under a movable handle
    /// ([`crate::memmap::AllocTag::handle`]), asked once per run. The migrate scanner then
    /// isolates no other block (the kernel isolates only `PageLRU` and `__PageMovable`
    /// pages): a library's raw block has no owner to update, and isolating it for nothing
    /// would refuse its owner's free meanwhile. By default (`false`) every block allocated
    /// movable and not pinned is a candidate.
    fn moves_handles_only(&self) -> bool {
        false
    }
}

/// Why a block did not move (`migrate_pages`' per-folio errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MigrateFail {
    /// `-EAGAIN`: a transient obstacle — the page is locked, or holds a reference beyond
    /// its mappings (a pin, a racing lookup). Retried within the same `migrate_pages` call.
    Again,
    /// `-EBUSY`: not in this mode (under writeback and the mode may not wait, dirty with no
    /// way to move it without writing it first), or the block is gone. Not retried.
    Busy,
}

/// What the migrate scanner sees of an allocated movable block before isolating it: the
/// flags `isolate_migratepages_block` tests. The default is a clean anonymous page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FolioState {
    /// Page cache (`folio_mapping()` is set); otherwise anonymous.
    pub file: bool,
    /// Referenced beyond its mappings (a GUP pin: refcount > mapcount). An anonymous page
    /// like this is not isolated; a file page is, and fails to move with `-EAGAIN`.
    pub pinned: bool,
    /// `PG_unevictable` (mlocked): isolated only if `vm.compact_unevictable_allowed`.
    pub unevictable: bool,
    /// `PG_writeback`: isolated only by `MIGRATE_SYNC` runs, which wait for it.
    pub writeback: bool,
    /// `PG_dirty`.
    pub dirty: bool,
    /// A file page whose mapping has no `migrate_folio` operation: dirty, it must be written
    /// out before it moves, so only `MIGRATE_SYNC` runs isolate it.
    pub no_migrate_folio: bool,
}

/// How a run may wait (`enum migrate_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MigrateMode {
    /// `MIGRATE_ASYNC`: never block; direct compaction's first attempt.
    Async,
    /// `MIGRATE_SYNC_LIGHT`: may block, but not on writeback (kcompactd, later attempts).
    SyncLight,
    /// `MIGRATE_SYNC`: may block on anything (`/proc/sys/vm/compact_memory`).
    Sync,
}

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
