//! The vocabulary of compaction that the allocation path speaks (`enum compact_result`,
//! `enum compact_priority`, `include/linux/compaction.h`).
//!
//! The slow path asks for direct compaction through [`crate::NodeLocks`]; compaction itself
//! (the migrate and free scanners, deferral, kcompactd) is not modelled yet, so every driver
//! answers [`CompactResult::Skipped`] — "compaction did not start" — and the slow path takes
//! the branches the kernel takes when compaction cannot run.

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
