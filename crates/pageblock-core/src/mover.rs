//! What moves pages: the driver's [`Mover`] (`migrate_folio` and the owner's page-table
//! update) and migration's vocabulary (`enum migrate_mode`, the per-folio failures, the folio
//! state the migrate scanner reads). Data and the driver's hook only; compaction
//! ([`crate::compaction`]) drives it.

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

    /// Split the isolated block of 2^`order` pages at `from` into base pages
    /// (`split_folio_to_list`), each to move on its own. Compaction asks when it has no free
    /// block of the folio's order to move it into (`-ENOMEM` in `migrate_pages_batch`).
    /// Returns whether the owner split it. By default it does not (an owner that holds the
    /// block whole, as a library's handle does): the block goes back and the run ends for
    /// want of memory, as for a folio that cannot be split.
    fn split(&self, _from: Pfn, _order: u32) -> bool {
        false
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
