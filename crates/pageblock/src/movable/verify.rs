//! The handle table against the memmap, for [`crate::Allocator::verify`]: the two records
//! of who owns a movable block must name the same blocks.
//!
//! * Every block the memmap tags as a handle's ([`AllocTag::HANDLE`]) is named by the reverse
//!   map at its head, and that slot is live and holds the block's pfn and order.
//! * Every live slot's block is such a block, and the reverse map at its head names it.
//!
//! Each rule maps one side into the other; with equal counts (and every reverse-map entry
//! belonging to a live slot) the handles and the handle-tagged blocks are in one-to-one
//! correspondence, so no page has two owners and no handle's page lacks one.

use std::sync::atomic::Ordering;

use pageblock_core::memmap::{AllocTag, PageState};
use pageblock_core::{Invariant, VerifyError};

use super::{MovableTable, FREE, LIVE, PINNED};
use crate::pgdat::Pgdat;

macro_rules! ensure {
    ($cond:expr, $inv:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(VerifyError::new($inv, format!($($arg)*)));
        }
    };
}

/// Check that the handle table (if any handle was ever made) and the memmap agree. Meant
/// for a quiescent allocator: a handle may be pinned, none migrating or being freed.
pub(crate) fn verify_handles(pgdat: &Pgdat) -> Result<(), VerifyError> {
    let table = pgdat.movable.get();
    let mut tagged = 0usize;
    for zone in pgdat.shared.zones() {
        let mm = zone.memmap();
        for e in mm.extents(0, mm.len() as u32) {
            if e.info.state != PageState::Allocated || !e.info.tag.handle {
                continue;
            }
            let pfn = zone.config().start_pfn + u64::from(e.idx);
            let slot = table.and_then(|t| t.owner_of(pfn));
            ensure!(
                slot.is_some_and(|s| s.state.load(Ordering::Acquire) != FREE
                    && s.pfn.load(Ordering::Relaxed) == pfn
                    && s.order.load(Ordering::Relaxed) == e.info.order),
                Invariant::OrphanHandleBlock,
                "pfn {pfn:#x}: a handle's block of order {} in the memmap, but no live handle holds it",
                e.info.order
            );
            tagged += 1;
        }
    }
    let Some(table) = table else {
        return Ok(());
    };
    let live = verify_slots(pgdat, table)?;
    ensure!(
        live == tagged,
        Invariant::HandleCount,
        "{live} live handles, {tagged} handle blocks in the memmap"
    );
    ensure!(
        live == table.live(),
        Invariant::HandleCount,
        "{live} live handles, the table counts {}",
        table.live()
    );
    let named = table.rmap.iter().filter(|r| r.load(Ordering::Acquire) != 0).count();
    ensure!(
        named == live,
        Invariant::HandleRmap,
        "the reverse map names {named} blocks for {live} live handles"
    );
    Ok(())
}

/// Every live slot's block is allocated to a handle in the memmap, with the slot's order,
/// and the reverse map names the slot at its head. Returns the live slots.
fn verify_slots(pgdat: &Pgdat, table: &MovableTable) -> Result<usize, VerifyError> {
    let node = &pgdat.shared;
    let used = table.next_unused.load(Ordering::Relaxed) as usize;
    let mut live = 0;
    for (i, slot) in table.slots[..used].iter().enumerate() {
        let state = slot.state.load(Ordering::Acquire);
        if state == FREE {
            continue;
        }
        ensure!(
            state == LIVE || state == PINNED,
            Invariant::HandleState,
            "handle {i}: state {state} in a quiescent allocator"
        );
        let (pfn, order) = (slot.pfn.load(Ordering::Relaxed), slot.order.load(Ordering::Relaxed));
        let Some(z) = node.zone_of(pfn) else {
            return Err(VerifyError::new(
                Invariant::HandleBlock,
                format!("handle {i}: pfn {pfn:#x} lies outside the node"),
            ));
        };
        let zone = node.zone(z);
        let info = zone.memmap().info((pfn - zone.config().start_pfn) as u32);
        ensure!(
            info.state == PageState::Allocated && info.tag == AllocTag::HANDLE && info.order == order,
            Invariant::HandleBlock,
            "handle {i}: its block {pfn:#x} of order {order} is {info:?} in the memmap"
        );
        let named = table.rmap(pfn).load(Ordering::Acquire);
        ensure!(
            named as usize == i + 1,
            Invariant::HandleRmap,
            "handle {i}: the reverse map at {pfn:#x} holds {named}, not {}",
            i + 1
        );
        live += 1;
    }
    Ok(live)
}
