//! Shrinkers: how the owner of reclaimable memory gives pages back when the allocator runs
//! low (`struct shrinker`, `shrink_slab`, `do_shrink_slab`).
//!
//! The library does not know what its callers' memory holds, so it keeps no LRU lists of its
//! own (the simulator's `Lruvec` models the kernel's anon and file lists). A cache, a buffer
//! pool or a VMM's balloon registers a [`Shrinker`]; every reclaim pass — kswapd's in the
//! background, direct reclaim on an allocating thread — asks each shrinker how much it could
//! free (`count_objects`) and then asks it to free a share (`scan_objects`), as the kernel
//! asks its slab caches: `2 × (freeable >> priority)` pages per pass (`DEFAULT_SEEKS`),
//! offered in batches of [`SHRINK_BATCH`], all of it at priority 0. The owner frees what it
//! chooses through the [`ShrinkControl`] it is handed; what it freed is what the pass
//! reclaimed.
//!
//! Not modelled: `nr_deferred` (work a shrinker could not do carried to the next pass) and
//! memcg- or NUMA-aware shrinkers.
//!
//! A shrinker runs with no allocator lock held and with `PF_MEMALLOC` set on its thread: an
//! allocation it makes does not enter direct reclaim again.

use std::cell::Cell;
use std::sync::{Arc, RwLock};

use pageblock_core::scan_control::ScanControl;
use pageblock_core::{page_alloc, FreeError, Pfn};

use crate::movable::{Movable, MovableError, Pinned};
use crate::pgdat::Pgdat;

/// `SHRINK_BATCH`: pages offered to a shrinker per call.
pub const SHRINK_BATCH: u64 = 128;

/// The owner of memory it can give back on request. It runs on kswapd's thread or on any
/// allocating thread, so it must be `Send + Sync`; it needs no reference to the allocator
/// (the [`ShrinkControl`] pins and frees), and should hold none: the allocator holds it.
pub trait Shrinker: Send + Sync {
    /// `count_objects`: pages it could free now.
    fn count_objects(&self) -> u64;

    /// `scan_objects`: free up to `sc.nr_to_scan()` pages through `sc`.
    fn scan_objects(&self, sc: &mut ShrinkControl<'_>);
}

/// One call's request to a shrinker (`struct shrink_control`), and the way it frees.
pub struct ShrinkControl<'a> {
    pgdat: &'a Pgdat,
    cpu: usize,
    nr_to_scan: u64,
    nr_freed: u64,
}

impl ShrinkControl<'_> {
    /// Pages to free (at most) in this call.
    pub fn nr_to_scan(&self) -> u64 {
        self.nr_to_scan
    }

    /// Pages freed through this control so far.
    pub fn nr_freed(&self) -> u64 {
        self.nr_freed
    }

    /// Pin a movable allocation (to write its contents back before freeing it, say).
    pub fn pin<'m>(&'m self, m: &'m mut Movable) -> Result<Pinned<'m>, MovableError> {
        self.pgdat.movable.get().ok_or(MovableError::Foreign)?.pin(self.pgdat, m)
    }

    /// Free a movable allocation; on refusal the handle comes back unchanged.
    pub fn free_movable(&mut self, m: Movable) -> Result<(), (Movable, MovableError)> {
        let Some(table) = self.pgdat.movable.get() else {
            return Err((m, MovableError::Foreign));
        };
        let pages = 1u64 << m.order();
        table.free(self.pgdat, self.cpu, m)?;
        self.nr_freed += pages;
        Ok(())
    }

    /// Free a block allocated with `alloc_pages`.
    pub fn free_pages(&mut self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        page_alloc::free_pages(self.pgdat, self.cpu, pfn, order)?;
        self.nr_freed += 1 << order;
        Ok(())
    }
}

/// Identifies a registered shrinker (for [`crate::Allocator::unregister_shrinker`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShrinkerId(u64);

/// The registered shrinkers (`shrinker_list`).
#[derive(Default)]
pub(crate) struct Shrinkers {
    list: RwLock<Vec<(ShrinkerId, Arc<dyn Shrinker>)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Shrinkers {
    pub(crate) fn register(&self, s: Arc<dyn Shrinker>) -> ShrinkerId {
        let id = ShrinkerId(self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.write().push((id, s));
        id
    }

    pub(crate) fn unregister(&self, id: ShrinkerId) -> bool {
        let mut list = self.write();
        let before = list.len();
        list.retain(|(i, _)| *i != id);
        list.len() != before
    }

    /// Pages all shrinkers could free now.
    pub(crate) fn count_objects(&self) -> u64 {
        self.snapshot().iter().map(|s| s.count_objects()).sum()
    }

    /// The shrinkers, copied out so that none runs under the registry's lock.
    fn snapshot(&self) -> Vec<Arc<dyn Shrinker>> {
        self.list.read().unwrap_or_else(|p| p.into_inner()).iter().map(|(_, s)| Arc::clone(s)).collect()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<(ShrinkerId, Arc<dyn Shrinker>)>> {
        self.list.write().unwrap_or_else(|p| p.into_inner())
    }
}

thread_local! {
    /// `PF_MEMALLOC`: this thread is reclaiming.
    static IN_RECLAIM: Cell<bool> = const { Cell::new(false) };
}

/// Is this thread inside a shrinker?
pub(crate) fn in_reclaim() -> bool {
    IN_RECLAIM.with(Cell::get)
}

/// `shrink_slab()`: one reclaim pass over every shrinker at `sc.priority`, counted in `sc`.
pub(crate) fn shrink_slab(pgdat: &Pgdat, cpu: usize, sc: &mut ScanControl) {
    let was = IN_RECLAIM.with(|r| r.replace(true));
    for shrinker in pgdat.shrinkers.snapshot() {
        let freeable = shrinker.count_objects();
        if freeable == 0 {
            continue;
        }
        // delta = (freeable >> priority) * 4 / DEFAULT_SEEKS (never above the kernel's cap of
        // twice the freeable, as no work is deferred from earlier passes).
        let mut total_scan = 2 * (freeable >> sc.priority);
        while total_scan >= SHRINK_BATCH || (total_scan > 0 && total_scan >= freeable) {
            let nr_to_scan = total_scan.min(SHRINK_BATCH);
            let mut ctl = ShrinkControl { pgdat, cpu, nr_to_scan, nr_freed: 0 };
            shrinker.scan_objects(&mut ctl);
            sc.nr_scanned += nr_to_scan;
            sc.stat.slabs_scanned += nr_to_scan;
            sc.nr_reclaimed += ctl.nr_freed;
            total_scan -= nr_to_scan;
            // A call that freed nothing ends this shrinker's pass (`SHRINK_STOP`).
            if ctl.nr_freed == 0 {
                break;
            }
        }
    }
    IN_RECLAIM.with(|r| r.set(was));
}
