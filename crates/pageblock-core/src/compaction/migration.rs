//! Migration of the isolated batch (`migrate_pages` with `compaction_alloc` and
//! `compaction_free`), and the isolation rules that decide which blocks reach it.
//!
//! A block the mover refuses with `-EAGAIN` is retried in later passes over the batch; one
//! refused with `-EBUSY`, or still refused after the last pass, fails (`pgmigrate_fail`)
//! and goes back to its owner (`putback_movable_pages`). An async run makes
//! `NR_MAX_MIGRATE_PAGES_RETRY` passes. A synchronous run (`migrate_pages_sync`) first makes
//! `NR_MAX_MIGRATE_ASYNC_RETRY` async passes over the batch, then retries every block left,
//! one at a time, in its own mode for the remaining `NR_MAX_MIGRATE_SYNC_RETRY` passes;
//! only that last attempt's failures count.
//!
//! A large folio with no free block of its order left to move into is split into base pages
//! when its owner can split it ([`Mover::split`]); once the batch is done, its pages get one
//! async pass of their own, and the split counts as the batch's one failure.

use super::compact_zone::{compaction_alloc, compaction_free, CompactControl};
use super::migrate::idx;
use super::{FolioState, MigrateFail, MigrateMode, Mover};
use crate::free_pages::free_pages_as;
use crate::locks::NodeLocks;
use crate::memmap::PageInfo;
use crate::stats::VmEvent;
use crate::types::Pfn;
use crate::zone::free::Owner;
use crate::zone::ZoneShared;

/// `NR_MAX_MIGRATE_PAGES_RETRY`: passes over the batch in all.
const NR_MAX_MIGRATE_PAGES_RETRY: u32 = 10;
/// `NR_MAX_MIGRATE_ASYNC_RETRY`: the async passes a synchronous migration begins with.
const NR_MAX_MIGRATE_ASYNC_RETRY: u32 = 3;
/// `NR_MAX_MIGRATE_SYNC_RETRY`: the passes left for each block in the run's own mode.
const NR_MAX_MIGRATE_SYNC_RETRY: u32 = NR_MAX_MIGRATE_PAGES_RETRY - NR_MAX_MIGRATE_ASYNC_RETRY;

/// What stopped a batch of migrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MigrateError {
    /// No free page left to migrate into (`-ENOMEM`).
    NoMemory,
    /// Some blocks did not move (the count of failures `migrate_pages` returns).
    Failed,
}

/// A block isolated for migration: its pfn and its state before isolation.
type Isolated = (u64, PageInfo);

impl CompactControl {
    /// The isolation rules of `isolate_migratepages_block` for an allocated movable block in
    /// state `f`: a pinned anonymous page would fail to move; a file page needs `__GFP_FS`
    /// (its migration may enter the file system); an unevictable page needs
    /// `vm.compact_unevictable_allowed`; and a run that may not wait on writeback
    /// (`ISOLATE_ASYNC_MIGRATE`: every mode but `MIGRATE_SYNC`) leaves pages under writeback
    /// and dirty pages it could not move without writing them first.
    pub(super) fn may_isolate(&self, f: FolioState, unevictable_allowed: bool) -> bool {
        let async_migrate = self.mode != MigrateMode::Sync;
        !(f.pinned && !f.file
            || f.file && !self.gfp_fs
            || f.unevictable && !unevictable_allowed
            || async_migrate && f.writeback
            || async_migrate && f.dirty && f.file && f.no_migrate_folio)
    }
}

/// `migrate_pages()` for the isolated batch: each block gets a destination from the free
/// scanner's pages (`compaction_alloc`), the mover moves it, the old block is freed. Blocks
/// that fail are put back; when no destination is left, every block not yet moved is put
/// back too.
pub(super) fn migrate_pages<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn Mover,
    cc: &mut CompactControl,
) -> Result<(), MigrateError> {
    let batch = std::mem::take(&mut cc.migratepages);
    let mut split = Vec::new();
    let failed = if cc.mode == MigrateMode::Async {
        migrate_pages_batch(
            l,
            mover,
            cc,
            batch,
            MigrateMode::Async,
            NR_MAX_MIGRATE_PAGES_RETRY,
            Some(&mut split),
        )
    } else {
        migrate_pages_sync(l, mover, cc, batch, &mut split)
    };
    // Every block has moved or goes back now.
    cc.nr_migratepages = 0;
    let zone = l.node().zone(cc.zone);
    let mut failed = match failed {
        Ok(f) => f,
        Err(rest) => {
            putback_movable_pages(zone, &rest);
            putback_movable_pages(zone, &split);
            return Err(MigrateError::NoMemory);
        }
    };
    let was_split = !split.is_empty();
    if was_split {
        // The split folios' pages, with the least effort: one async pass.
        cc.nr_migratepages = pages(&split);
        match migrate_pages_batch(l, mover, cc, split, MigrateMode::Async, 1, None) {
            Ok(f) => failed.extend(f),
            // Counted as failed already: only back to their owners.
            Err(rest) => putback_movable_pages(zone, &rest),
        }
        cc.nr_migratepages = 0;
    }
    if failed.is_empty() && !was_split {
        return Ok(());
    }
    l.node().count(VmEvent::PgMigrateFail, pages(&failed));
    putback_movable_pages(zone, &failed);
    Err(MigrateError::Failed)
}

/// `migrate_pages_sync()`: async passes over the batch first, then each block left alone in
/// the run's mode.
fn migrate_pages_sync<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn Mover,
    cc: &mut CompactControl,
    batch: Vec<Isolated>,
    split: &mut Vec<Isolated>,
) -> Result<Vec<Isolated>, Vec<Isolated>> {
    let left = migrate_pages_batch(
        l,
        mover,
        cc,
        batch,
        MigrateMode::Async,
        NR_MAX_MIGRATE_ASYNC_RETRY,
        Some(&mut *split),
    )?;
    let mut failed = Vec::new();
    let mut rest = left.into_iter();
    while let Some(block) = rest.next() {
        match migrate_pages_batch(
            l,
            mover,
            cc,
            vec![block],
            cc.mode,
            NR_MAX_MIGRATE_SYNC_RETRY,
            Some(&mut *split),
        ) {
            Ok(f) => failed.extend(f),
            Err(mut back) => {
                l.node().count(VmEvent::PgMigrateFail, pages(&failed));
                back.extend(failed);
                back.extend(rest);
                return Err(back);
            }
        }
    }
    Ok(failed)
}

/// `migrate_pages_batch()`: up to `passes` passes over `batch` in `mode`; returns the blocks
/// that did not move (`-EBUSY`, or still `-EAGAIN` after the last pass), or, when the free
/// scanner found no destination (`-ENOMEM`), every block not moved — all but the untried
/// ones counted as failed, as the kernel counts them. With `split`, a large folio without a
/// destination that its owner splits goes there as base pages instead, and the pass goes on.
fn migrate_pages_batch<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn Mover,
    cc: &mut CompactControl,
    batch: Vec<Isolated>,
    mode: MigrateMode,
    passes: u32,
    mut split: Option<&mut Vec<Isolated>>,
) -> Result<Vec<Isolated>, Vec<Isolated>> {
    let node = l.node();
    let zone = node.zone(cc.zone);
    let mut failed = Vec::new();
    let mut pending = batch;
    for _ in 0..passes {
        let mut retry = Vec::new();
        let mut blocks = std::mem::take(&mut pending).into_iter();
        while let Some((src, info)) = blocks.next() {
            let Some(dst) = compaction_alloc(l, cc, info) else {
                if let Some(split) = split.as_deref_mut().filter(|_| info.order > 0) {
                    if mover.split(Pfn(src), info.order) {
                        split.extend(split_isolated(zone, src, info));
                        continue;
                    }
                }
                node.count(VmEvent::PgMigrateFail, (1 << info.order) + pages(&retry) + pages(&failed));
                let mut back = vec![(src, info)];
                back.extend(retry);
                back.extend(failed);
                back.extend(blocks);
                return Err(back);
            };
            match mover.migrate(Pfn(src), Pfn(dst), info.order, mode) {
                Ok(()) => {
                    node.count(VmEvent::PgMigrateSuccess, 1 << info.order);
                    putback(zone, src, info);
                    // The old copy is freed like any page (to this CPU's lists for small
                    // orders), by the owner its tag names. A racing free of a stale handle
                    // may have taken it already: nothing to do then.
                    let _ = free_pages_as(l, cc.cpu, Pfn(src), info.order, Owner::of(info.tag));
                }
                Err(fail) => {
                    compaction_free(zone, cc, dst, info.order);
                    match fail {
                        MigrateFail::Again => retry.push((src, info)),
                        MigrateFail::Busy => failed.push((src, info)),
                    }
                }
            }
        }
        pending = retry;
        if pending.is_empty() {
            break;
        }
    }
    failed.extend(pending);
    Ok(failed)
}

/// `split_folio_to_list()` on the memmap: the isolated block at `pfn` becomes isolated base
/// pages, each returned with its state before isolation.
fn split_isolated(zone: &ZoneShared, pfn: u64, info: PageInfo) -> Vec<Isolated> {
    let mm = zone.memmap();
    let base = PageInfo { order: 0, ..info };
    (pfn..pfn + (1 << info.order))
        .map(|p| {
            mm.set_info(idx(zone, p), PageInfo { state: crate::memmap::PageState::Isolated, ..base });
            (p, base)
        })
        .collect()
}

/// The pages in `blocks`.
fn pages(blocks: &[Isolated]) -> u64 {
    blocks.iter().map(|&(_, info)| 1u64 << info.order).sum()
}

/// `putback_movable_pages()`: blocks isolated for migration are their owners' again.
fn putback_movable_pages(zone: &ZoneShared, blocks: &[Isolated]) {
    for &(pfn, info) in blocks {
        putback(zone, pfn, info);
    }
}

/// One block back to its owner.
fn putback(zone: &ZoneShared, pfn: u64, info: PageInfo) {
    zone.memmap().set_info(idx(zone, pfn), info);
}

#[cfg(test)]
mod tests;
