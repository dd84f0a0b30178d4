//! Movable memory that really moves: allocations handed out as [`Movable`] handles, which
//! resolve to an address only while [`Pinned`], so that compaction may copy their bytes
//! elsewhere whenever they are not.
//!
//! This is the library's `struct page` reverse map and migration entry in one table:
//!
//! * a **slot** per live handle holds where its block is now (`pfn`), its order, and a state
//!   word — the handle's refcount and lock in one;
//! * the **reverse map** (`rmap`, one word per page of the node) names the slot whose block
//!   starts at a pfn, so that compaction, which finds blocks by pfn, finds their owner;
//! * the block's **memmap tag** says a handle owns it (`AllocTag::HANDLE`, set when the
//!   handle is made, as `folio_add_lru` sets `PG_lru`), so a raw `free_pages` of any of its
//!   pages is refused by the compare it already makes, and only the handle frees it.
//!
//! Compaction calls [`Mover::migrate`] with a block it has isolated (memmap state
//! `Isolated`) and a destination it allocated. The move claims the slot (`LIVE` →
//! `MIGRATING`), copies the bytes (arena mode), points the slot and the reverse map at the
//! destination, and releases the slot. A pinned slot cannot be claimed: the block stays
//! (`-EAGAIN`: compaction retries it within the same batch, then puts it back).
//!
//! # Invariants
//!
//! * A slot is `FREE` or holds one block: `pfn` heads an allocated block of `order` whose
//!   memmap tag is the handle tag; while the slot is not `FREE`, `rmap[pfn]` names it
//!   (except while it is being freed). A block with the handle tag has a slot (except
//!   between its tagging and publication). `Allocator::verify` checks both ways.
//! * `PINNED` and `MIGRATING` exclude each other: bytes never move under a reader.
//! * A handle is owned by one caller (not `Clone`); `pin` borrows it mutably, `free` consumes
//!   it, so a pinned handle cannot be freed and there is at most one pin at a time.
//!
//! The states, with the transitions and who makes them:
//!
//! ```text
//! FREE --alloc--> LIVE --pin--> PINNED --unpin--> LIVE
//!                 LIVE --migrate--> MIGRATING --done--> LIVE
//!                 LIVE --free--> FREEING --pages freed--> FREE
//! ```

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::memmap::PageState;
use pageblock_core::types::PAGE_SIZE;
use pageblock_core::{page_alloc, FreeError, Owner, Pfn};

use crate::pgdat::Pgdat;
use crate::sync::SpinLock;

mod verify;
pub(crate) use verify::verify_handles;
#[cfg(test)]
mod verify_tests;

const FREE: u32 = 0;
const LIVE: u32 = 1;
const PINNED: u32 = 2;
const MIGRATING: u32 = 3;
const FREEING: u32 = 4;

/// Tells handles of different allocators apart.
static NEXT_TABLE_ID: AtomicU32 = AtomicU32::new(1);

/// A movable allocation of 2^order pages. Resolve it with [`crate::Allocator::pin`]; give it
/// back with [`crate::Allocator::free_movable`]. Dropping a handle without freeing it leaks
/// its pages, as forgetting a pfn would.
#[must_use = "a movable allocation is only given back by `free_movable`"]
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Movable {
    table: u32,
    slot: u32,
    order: u32,
}

impl Movable {
    /// The allocation's order.
    pub fn order(&self) -> u32 {
        self.order
    }
}

/// A [`Movable`] pinned in place: its pages do not move until this is dropped.
pub struct Pinned<'a> {
    slot: &'a Slot,
    pfn: Pfn,
    order: u32,
    bytes: Option<NonNull<u8>>,
    /// The handle is borrowed mutably for as long as the pin lives.
    _handle: PhantomData<&'a mut Movable>,
}

impl Pinned<'_> {
    /// Where the block is while pinned.
    pub fn pfn(&self) -> Pfn {
        self.pfn
    }

    /// The block's order.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// The block's bytes (arena mode; `None` for a metadata-only allocator).
    pub fn bytes(&self) -> Option<&[u8]> {
        // SAFETY: the pages are this handle's and cannot move or be freed while pinned; the
        // handle's unique borrow excludes any other pin.
        self.bytes.map(|p| unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len()) })
    }

    /// The block's bytes, writable (arena mode; `None` for a metadata-only allocator).
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        // SAFETY: as in `bytes`, and `&mut self` makes this the only view.
        self.bytes.map(|p| unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len()) })
    }

    fn len(&self) -> usize {
        (PAGE_SIZE << self.order) as usize
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        // Release: the caller's writes are visible to a migration that claims the slot next.
        self.slot.state.store(LIVE, Ordering::Release);
    }
}

/// Why a handle operation was refused (nothing changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MovableError {
    /// The handle belongs to another allocator.
    Foreign,
    /// Freeing the block failed in the allocator (a bug: the handle owned it).
    Free(FreeError),
}

impl std::fmt::Display for MovableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MovableError::Foreign => write!(f, "the handle belongs to another allocator"),
            MovableError::Free(e) => write!(f, "freeing the handle's block failed: {e}"),
        }
    }
}

impl std::error::Error for MovableError {}

/// One live handle's record.
#[derive(Default)]
struct Slot {
    pfn: AtomicU64,
    order: AtomicU32,
    state: AtomicU32,
}

/// The handle slots and the reverse map of one node.
pub(crate) struct MovableTable {
    id: u32,
    slots: Box<[Slot]>,
    /// Slots never used yet start here.
    next_unused: AtomicU32,
    /// Slots given back.
    free_slots: SpinLock<Vec<u32>>,
    /// `rmap[pfn - first_pfn]`: 1 + the slot whose block starts at that pfn, or 0.
    rmap: Box<[AtomicU32]>,
    first_pfn: u64,
    live: AtomicUsize,
}

impl MovableTable {
    /// A table for the node's pfn span: one slot and one reverse-map word per page.
    pub(crate) fn new(first_pfn: u64, nr_pages: u64) -> MovableTable {
        MovableTable {
            id: NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed),
            slots: (0..nr_pages).map(|_| Slot::default()).collect(),
            next_unused: AtomicU32::new(0),
            free_slots: SpinLock::new(Vec::new()),
            rmap: (0..nr_pages).map(|_| AtomicU32::new(0)).collect(),
            first_pfn,
            live: AtomicUsize::new(0),
        }
    }

    /// Live handles.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    fn rmap(&self, pfn: u64) -> &AtomicU32 {
        &self.rmap[(pfn - self.first_pfn) as usize]
    }

    /// The slot whose block starts at `pfn`, if any.
    fn owner_of(&self, pfn: u64) -> Option<&Slot> {
        let i = pfn.checked_sub(self.first_pfn)?;
        let s = self.rmap.get(i as usize)?.load(Ordering::Acquire);
        s.checked_sub(1).map(|s| &self.slots[s as usize])
    }

    /// Make the block `pfn`/`order`, just allocated with a movable mask, a handle's: tag it
    /// in the memmap, then publish it under a new handle. `None` if the block stopped being
    /// its caller's before it was tagged (a raw free of a guessed pfn took it): the caller
    /// allocates again. (A raw block has no owner the allocator knows, so until it is
    /// tagged it is as exposed to such a free as any raw block.)
    pub(crate) fn adopt(&self, pgdat: &Pgdat, pfn: Pfn, order: u32) -> Option<Movable> {
        let node = &pgdat.shared;
        let zone = node.zone(node.zone_of(pfn.0).expect("an allocated block lies in a zone"));
        // Compaction never isolates a raw block here (`Mover::moves_handles_only`), so a
        // refusal means the block is no longer its caller's.
        zone.set_handle_owned(pfn, order).ok().map(|()| self.publish(pfn, order))
    }

    /// Publish the allocated block `pfn`/`order` under a new handle.
    fn publish(&self, pfn: Pfn, order: u32) -> Movable {
        let slot = self.free_slots.lock().pop().unwrap_or_else(|| {
            // At most one live block per page, so the slots never run out.
            self.next_unused.fetch_add(1, Ordering::Relaxed)
        });
        let s = &self.slots[slot as usize];
        s.pfn.store(pfn.0, Ordering::Relaxed);
        s.order.store(order, Ordering::Relaxed);
        s.state.store(LIVE, Ordering::Release);
        self.rmap(pfn.0).store(slot + 1, Ordering::Release);
        self.live.fetch_add(1, Ordering::Relaxed);
        Movable { table: self.id, slot, order }
    }

    fn slot(&self, m: &Movable) -> Result<&Slot, MovableError> {
        if m.table != self.id {
            return Err(MovableError::Foreign);
        }
        Ok(&self.slots[m.slot as usize])
    }

    /// Take the slot from `LIVE` to `to`, waiting out a migration in progress.
    fn claim(slot: &Slot, to: u32) {
        let mut spins = 0u32;
        while slot.state.compare_exchange(LIVE, to, Ordering::Acquire, Ordering::Relaxed).is_err() {
            backoff(&mut spins);
        }
    }

    /// Pin `m` where it is.
    pub(crate) fn pin<'a>(&'a self, pgdat: &Pgdat, m: &'a mut Movable) -> Result<Pinned<'a>, MovableError> {
        let slot = self.slot(m)?;
        Self::claim(slot, PINNED);
        let pfn = Pfn(slot.pfn.load(Ordering::Relaxed));
        let bytes = pgdat.arena.as_ref().and_then(|a| a.page_ptr(pfn.0));
        Ok(Pinned { slot, pfn, order: m.order, bytes, _handle: PhantomData })
    }

    /// Free `m`'s block on CPU `cpu`, as its handle (the only owner the memmap lets free
    /// it). A block compaction has isolated is freed once the migration gives it back (the
    /// slot's `FREEING` state makes that migration refuse).
    /// Regression (stress test): the first version re-read the state after a refused free
    /// and gave up when the put-back had happened in between.
    pub(crate) fn free(&self, pgdat: &Pgdat, cpu: usize, m: Movable) -> Result<(), (Movable, MovableError)> {
        let slot = match self.slot(&m) {
            Ok(s) => s,
            Err(e) => return Err((m, e)),
        };
        Self::claim(slot, FREEING);
        let pfn = slot.pfn.load(Ordering::Relaxed);
        self.rmap(pfn).store(0, Ordering::Release);
        let mut spins = 0u32;
        loop {
            match page_alloc::free_pages_as(pgdat, cpu, Pfn(pfn), m.order, Owner::Handle) {
                Ok(()) => break,
                // The block is ours, so "already free" means a compaction run holds it
                // isolated (or did a moment ago and has put it back): try again.
                Err(FreeError::DoubleFree { .. }) if !on_free_list(pgdat, pfn) => backoff(&mut spins),
                Err(e) => {
                    self.rmap(pfn).store(m.slot + 1, Ordering::Release);
                    slot.state.store(LIVE, Ordering::Release);
                    return Err((m, MovableError::Free(e)));
                }
            }
        }
        slot.state.store(FREE, Ordering::Release);
        self.free_slots.lock().push(m.slot);
        self.live.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Is `pfn` on a buddy or per-CPU list (really free, not merely isolated)?
fn on_free_list(pgdat: &Pgdat, pfn: u64) -> bool {
    let node = &pgdat.shared;
    node.zone_of(pfn).is_some_and(|z| {
        let zone = node.zone(z);
        let state = zone.memmap().info((pfn - zone.config().start_pfn) as u32).state;
        matches!(state, PageState::Buddy | PageState::Pcp)
    })
}

/// Spin briefly, then yield: the other side holds the slot for one page copy at most.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Compaction's move of a handle's block (`migrate_folio`): claim the slot, copy the bytes,
/// repoint the handle and the reverse map. A pinned handle is a transient obstacle, as a
/// page's extra reference is (`-EAGAIN`: compaction tries again a few times); a block with
/// no handle (a raw allocation), a dying handle or a stale reverse-map entry is refused
/// (`-EBUSY`). Either way the block stays.
impl Mover for Pgdat {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let Some(table) = self.movable.get() else {
            return Err(MigrateFail::Busy);
        };
        let Some(slot) = table.owner_of(from.0) else {
            return Err(MigrateFail::Busy);
        };
        let claimed = slot.state.compare_exchange(LIVE, MIGRATING, Ordering::Acquire, Ordering::Relaxed);
        if let Err(state) = claimed {
            return Err(if state == PINNED { MigrateFail::Again } else { MigrateFail::Busy });
        }
        if slot.pfn.load(Ordering::Relaxed) != from.0 || slot.order.load(Ordering::Relaxed) != order {
            slot.state.store(LIVE, Ordering::Release);
            return Err(MigrateFail::Busy);
        }
        if let Some(arena) = &self.arena {
            let (Some(src), Some(dst)) = (arena.page_ptr(from.0), arena.page_ptr(to.0)) else {
                slot.state.store(LIVE, Ordering::Release);
                return Err(MigrateFail::Busy);
            };
            // SAFETY: `from` is the handle's block, isolated by the caller and claimed here
            // (no pin can read or write it); `to` is a block of the same order the caller
            // allocated for this move and nobody else holds. Both lie in the arena and are
            // distinct blocks, so the ranges do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), (PAGE_SIZE << order) as usize)
            };
        }
        let id = table.rmap(from.0).load(Ordering::Relaxed);
        slot.pfn.store(to.0, Ordering::Relaxed);
        table.rmap(to.0).store(id, Ordering::Release);
        table.rmap(from.0).store(0, Ordering::Release);
        slot.state.store(LIVE, Ordering::Release);
        Ok(())
    }

    /// Raw blocks have no handle to repoint: only handles' blocks are isolated.
    fn moves_handles_only(&self) -> bool {
        true
    }
}
