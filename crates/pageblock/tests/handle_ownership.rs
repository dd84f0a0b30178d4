//! A page owned by a movable handle is freed only through its handle (issue 20): the raw
//! free paths refuse its head, its interior pages and any order of it with a typed error and
//! change nothing, and `verify()` checks that the handle table and the memmap agree.

use pageblock::{Allocator, FreeError, Gfp, Movable, Pfn, Policy};
use pageblock_core::memmap::{AllocTag, PageInfo};
use pageblock_core::migratetype::MigrateType;
use pageblock_core::VmEvent;

mod common;
use common::{fill, intact, state_words};

fn quiet() -> Allocator {
    Allocator::with_arena_quiet(16 << 20, 2, Policy::default()).unwrap()
}

/// A new handle of `order` and where it is.
fn handle(a: &Allocator, order: u32) -> (Movable, Pfn) {
    let mut m = a.alloc_movable(order, Gfp::HIGHUSER_MOVABLE).unwrap();
    let pfn = a.pin(&mut m).unwrap().pfn();
    (m, pfn)
}

#[test]
fn free_pages_refuses_a_handles_page_and_no_two_handles_share_it() {
    let a = quiet();
    let (mut m, pfn) = handle(&a, 0);
    fill(&a, &mut m, 1);
    let before = state_words(&a);
    assert_eq!(a.free_pages(pfn, 0), Err(FreeError::HandleOwned { pfn }));
    assert_eq!(a.on_cpu(1).unwrap().free_pages(pfn, 0), Err(FreeError::HandleOwned { pfn }));
    assert_eq!(state_words(&a), before, "a refused free changes nothing");
    // Whatever the next handle gets, it is not the first one's page.
    let mut other = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    assert_ne!(a.pin(&mut other).unwrap().pfn(), pfn);
    fill(&a, &mut other, 2);
    assert!(intact(&a, &mut m, 1), "writes through one handle never reach another");
    a.verify().unwrap();
    a.free_movable(other).unwrap();
    a.free_movable(m).unwrap();
    a.verify().unwrap();
}

#[test]
fn batch_frees_refuse_a_handles_page_at_its_index() {
    let a = quiet();
    let (m, pfn) = handle(&a, 0);
    let raw = a.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let before = state_words(&a);
    let e = a.free_pages_batch(&[pfn, raw], 0).unwrap_err();
    assert_eq!((e.freed, e.error), (0, FreeError::HandleOwned { pfn }));
    let e = a.on_cpu(1).unwrap().free_pages_batch(&[pfn], 0).unwrap_err();
    assert_eq!((e.freed, e.error), (0, FreeError::HandleOwned { pfn }));
    assert_eq!(state_words(&a), before);
    a.free_pages_batch(&[raw], 0).unwrap();
    a.free_movable(m).unwrap();
    a.verify().unwrap();
}

#[test]
fn every_order_and_interior_page_of_a_handles_block_is_refused() {
    let a = quiet();
    let (m, head) = handle(&a, 3);
    let before = state_words(&a);
    for order in 0..=4 {
        assert_eq!(a.free_pages(head, order), Err(FreeError::HandleOwned { pfn: head }), "order {order}");
    }
    for i in 1..8 {
        let pfn = Pfn(head.0 + i);
        assert_eq!(a.free_pages(pfn, 0), Err(FreeError::HandleOwned { pfn }), "page {i}");
    }
    assert_eq!(a.free_pages(Pfn(head.0 + 4), 2), Err(FreeError::HandleOwned { pfn: Pfn(head.0 + 4) }));
    assert_eq!(state_words(&a), before);
    a.verify().unwrap();
    a.free_movable(m).unwrap();
    a.verify().unwrap();
}

#[test]
fn pinning_a_handles_block_by_pfn_is_refused() {
    let a = quiet();
    let (m, pfn) = handle(&a, 0);
    assert_eq!(a.shared().set_pinned(pfn, 0, true), Err(FreeError::HandleOwned { pfn }));
    a.free_movable(m).unwrap();
}

#[test]
fn verify_checks_that_handles_and_the_memmap_agree() {
    let a = quiet();
    let (m, pfn) = handle(&a, 1);
    let raw = a.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    a.verify().unwrap();
    let mm = a.shared().zone(0).memmap();
    let idx = |p: Pfn| (p.0 - a.shared().zone(0).config().start_pfn) as u32;
    let owned = mm.info(idx(pfn));
    // The handle's block, tagged as a raw movable allocation (what a raw free and a new
    // allocation of the page would leave): its handle no longer owns it.
    mm.set_info(idx(pfn), PageInfo { tag: AllocTag::of(MigrateType::Movable), ..owned });
    let e = a.verify().unwrap_err().to_string();
    assert!(e.contains("handle 0") && e.contains(&format!("{:#x}", pfn.0)), "{e}");
    mm.set_info(idx(pfn), owned);
    a.verify().unwrap();
    // A raw block tagged as a handle's: no handle holds it.
    let plain = mm.info(idx(raw));
    mm.set_info(idx(raw), PageInfo { tag: AllocTag::HANDLE, ..plain });
    let e = a.verify().unwrap_err().to_string();
    assert!(e.contains("no live handle") && e.contains(&format!("{:#x}", raw.0)), "{e}");
    mm.set_info(idx(raw), plain);
    a.free_pages(raw, 0).unwrap();
    a.free_movable(m).unwrap();
    a.verify().unwrap();
}

/// Raw blocks have no owner the allocator could update, so compaction must not even isolate
/// them: an isolated block's owner, freeing it at that moment, was refused (`DoubleFree`).
/// Found by `no_two_owners.rs`'s threads; here, single-threaded, the isolation shows as a
/// refused move (`pgmigrate_fail`).
#[test]
fn compaction_never_isolates_a_raw_movable_block() {
    let a = quiet();
    // A live handle lets compaction run. Made first, low in the zone, it has room to move
    // into (a move that finds no free page counts as failed too, `-ENOMEM`).
    let m = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let mut raw = Vec::new();
    while let Ok(p) = a.alloc_pages(0, Gfp::HIGHUSER_MOVABLE) {
        raw.push(p);
    }
    let kept: Vec<Pfn> = raw.iter().copied().filter(|p| p.0 % 2 == 1).collect();
    let freed: Vec<Pfn> = raw.iter().copied().filter(|p| p.0 % 2 == 0).collect();
    a.free_pages_batch(&freed, 0).unwrap();
    a.drain_all_pages();
    a.compact_memory();
    assert!(a.shared().event(VmEvent::CompactMigrateScanned) > 0, "the migrate scanner ran");
    assert_eq!(a.shared().event(VmEvent::PgMigrateFail), 0, "a raw block was isolated");
    a.free_pages_batch(&kept, 0).unwrap();
    a.free_movable(m).unwrap();
    a.verify().unwrap();
}
