//! Invariant 10 of docs/ARCHITECTURE.md proved: each test builds a valid allocator with a
//! handle and a raw block (verify() passes), corrupts one record of the handle table or the
//! memmap, and expects the [`Invariant`] that names it.

use std::sync::atomic::Ordering;

use pageblock_core::memmap::{AllocTag, PageInfo};
use pageblock_core::{Gfp, Invariant, MigrateType, Pfn, Policy};

use super::{MovableTable, MIGRATING};
use crate::Allocator;

/// A valid allocator, the pfn of its one handle's block (order 1) and of a raw block.
fn valid() -> (Allocator, u64, u64) {
    let a = Allocator::with_arena_quiet(4 << 20, 1, Policy::default()).unwrap();
    let mut m = a.alloc_movable(1, Gfp::HIGHUSER_MOVABLE).unwrap();
    let handle = a.pin(&mut m).unwrap().pfn().0;
    let Pfn(raw) = a.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    a.verify().expect("the fixture is valid");
    (a, handle, raw)
}

fn broken(a: &Allocator) -> Invariant {
    a.verify().expect_err("verify() missed the corruption").invariant
}

fn table(a: &Allocator) -> &MovableTable {
    a.pgdat.movable.get().expect("a handle was made")
}

/// Retag the allocated block at `pfn` in the memmap.
fn retag(a: &Allocator, pfn: u64, tag: AllocTag) {
    let node = &a.pgdat.shared;
    let zone = node.zone(node.zone_of(pfn).unwrap());
    let idx = (pfn - zone.config().start_pfn) as u32;
    zone.memmap().set_info(idx, PageInfo { tag, ..zone.memmap().info(idx) });
}

#[test]
fn a_raw_block_tagged_as_a_handles() {
    let (a, _, raw) = valid();
    retag(&a, raw, AllocTag::HANDLE);
    assert_eq!(broken(&a), Invariant::OrphanHandleBlock);
}

#[test]
fn a_handles_block_tagged_as_raw() {
    let (a, handle, _) = valid();
    retag(&a, handle, AllocTag::of(MigrateType::Movable));
    assert_eq!(broken(&a), Invariant::HandleBlock);
}

#[test]
fn a_handle_left_migrating() {
    let (a, _, _) = valid();
    table(&a).slots[0].state.store(MIGRATING, Ordering::Release);
    assert_eq!(broken(&a), Invariant::HandleState);
}

#[test]
fn the_reverse_map_names_a_raw_block() {
    let (a, _, raw) = valid();
    table(&a).rmap(raw).store(1, Ordering::Release);
    assert_eq!(broken(&a), Invariant::HandleRmap);
}

#[test]
fn the_live_count_off_by_one() {
    let (a, _, _) = valid();
    table(&a).live.fetch_add(1, Ordering::Relaxed);
    assert_eq!(broken(&a), Invariant::HandleCount);
}
