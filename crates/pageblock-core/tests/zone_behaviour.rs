//! Deterministic scenarios, one kernel behaviour each.

mod common;

use common::{buddyinfo, fingerprint};
use pageblock_core::trace::RecordingSink;
use pageblock_core::{
    AllocError, FreeError, Gfp, MigrateType, Pfn, Policy, TraceEvent, VmEvent, Zone, ZoneConfig, ZoneStat,
};

fn zone(mib: u64) -> Zone {
    Zone::new(ZoneConfig::normal(mib << 20), Policy::default()).unwrap()
}

fn recorded(zone: &mut Zone) -> Vec<TraceEvent> {
    let mut sink = zone.take_trace_sink().expect("a sink was installed");
    let rec = sink.as_any().downcast_mut::<RecordingSink>().expect("a RecordingSink");
    std::mem::take(&mut rec.events)
}

#[test]
fn boot_frees_everything_into_max_order_movable_blocks() {
    let z = zone(64);
    assert_eq!(z.managed_pages(), 16384);
    assert_eq!(buddyinfo(&z), vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16]);
    assert_eq!(z.shared().free_areas().mt_nr_free(10, MigrateType::Movable), Some(16));
    assert_eq!(z.counters().zone_stat(ZoneStat::NrFreePagesBlocks), 16384);
    let first: Vec<u64> = z.free_list(10, MigrateType::Movable).take(3).map(|p| p.0).collect();
    assert_eq!(first, vec![0x100000, 0x100400, 0x100800], "boot frees to the tail, in pfn order");
    z.verify().unwrap();
}

#[test]
fn unaligned_zone_boots_with_smaller_edge_blocks() {
    let cfg = ZoneConfig { start_pfn: 0x1001, present_pages: 5000, ..ZoneConfig::normal(0) };
    let z = Zone::new(cfg, Policy::default()).unwrap();
    let census = z.verify().unwrap();
    assert_eq!(census.free, 5000);
    assert_eq!(z.nr_free_pages(), 5000);
}

#[test]
fn alloc_splits_the_lowest_block_and_free_merges_it_back() {
    let mut z = zone(64);
    let before = fingerprint(&z);
    let p = z.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    assert_eq!(p, Pfn(0x100000), "the head of the lowest list is split, the low half kept");
    assert_eq!(buddyinfo(&z), vec![1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 15]);
    z.verify().unwrap();
    z.free_pages(p, 0).unwrap();
    z.verify().unwrap();
    assert_eq!(buddyinfo(&z), vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16]);
    assert_eq!(z.counters().event(VmEvent::PgAlloc), 1);
    assert_eq!(z.counters().event(VmEvent::PgFree), 16384 + 1);
    assert_ne!(before, fingerprint(&z), "the merged block went to the head, not back to its old place");
}

#[test]
fn first_unmovable_request_claims_the_largest_movable_block() {
    let mut z = zone(64);
    z.set_trace_sink(Some(Box::new(RecordingSink::default())));
    let p = z.alloc_pages(0, Gfp::KERNEL).unwrap();
    // The claim takes a whole order-10 block (two pageblocks) and retypes both.
    assert_eq!(z.pageblock_migratetype(p.0), MigrateType::Unmovable);
    assert_eq!(z.pageblock_migratetype(p.0 + 512), MigrateType::Unmovable);
    assert_eq!(z.counters().event(VmEvent::ClaimWholeBlock), 1);
    let events = recorded(&mut z);
    let extfrag = events.iter().find_map(|e| match e {
        TraceEvent::PageAllocExtfrag {
            fallback_order,
            change_ownership,
            alloc_migratetype,
            fallback_migratetype,
            ..
        } => Some((*fallback_order, *change_ownership, *alloc_migratetype, *fallback_migratetype)),
        _ => None,
    });
    assert_eq!(extfrag, Some((10, true, MigrateType::Unmovable, MigrateType::Movable)));
    assert!(matches!(events.last(), Some(TraceEvent::PageAlloc { pfn: Some(_), order: 0, .. })));
    z.verify().unwrap();
}

#[test]
fn misuse_is_refused_and_changes_nothing() {
    let mut z = zone(16);
    let a = z.alloc_pages(2, Gfp::KERNEL).unwrap();
    let b = z.alloc_pages(0, Gfp::KERNEL).unwrap();
    z.free_pages(b, 0).unwrap();
    let before = fingerprint(&z);
    let end = z.end_pfn();
    let cases = [
        (Pfn(0), 0, FreeError::OutOfRange { pfn: Pfn(0) }),
        (Pfn(end), 0, FreeError::OutOfRange { pfn: Pfn(end) }),
        (a, 11, FreeError::OrderTooLarge { order: 11 }),
        (Pfn(a.0 + 1), 1, FreeError::Unaligned { pfn: Pfn(a.0 + 1), order: 1 }),
        (Pfn(end - 1), 1, FreeError::Unaligned { pfn: Pfn(end - 1), order: 1 }),
        (a, 1, FreeError::WrongOrder { pfn: a, order: 1, allocated_order: 2 }),
        (Pfn(a.0 + 2), 0, FreeError::NotAllocated { pfn: Pfn(a.0 + 2) }),
        (b, 0, FreeError::DoubleFree { pfn: b }),
    ];
    for (pfn, order, want) in cases {
        assert_eq!(z.free_pages(pfn, order), Err(want), "free({pfn}, {order})");
        assert_eq!(before, fingerprint(&z), "state changed after refused free({pfn}, {order})");
    }
    z.verify().unwrap();
    assert_eq!(z.alloc_pages(11, Gfp::KERNEL), Err(AllocError::OrderTooLarge { order: 11, max_order: 10 }));
    let both = Gfp::MOVABLE | Gfp::RECLAIMABLE;
    assert_eq!(z.alloc_pages(0, both), Err(AllocError::InvalidGfp(both)));
    assert_eq!(before, fingerprint(&z), "refused allocations change nothing");
    z.free_pages(a, 2).unwrap();
    assert_eq!(z.free_pages(a, 2), Err(FreeError::DoubleFree { pfn: a }));
    z.verify().unwrap();
}

#[test]
fn exhaustion_fails_cleanly_and_recovers() {
    let mut z = zone(8);
    let mut held = Vec::new();
    while let Ok(p) = z.alloc_pages(0, Gfp::ATOMIC) {
        held.push(p);
    }
    assert!(matches!(z.alloc_pages(0, Gfp::ATOMIC), Err(AllocError::NoMemory { order: 0 })));
    let wm = z.counters().watermarks();
    assert!(z.nr_free_pages() <= wm.min, "atomic requests may dig below min, not below its reserve share");
    z.verify().unwrap();
    for p in held {
        z.free_pages(p, 0).unwrap();
    }
    assert_eq!(z.nr_free_pages(), z.managed_pages());
    assert_eq!(buddyinfo(&z).last(), Some(&2));
    z.verify().unwrap();
}

#[test]
fn highatomic_reserve_is_made_by_atomic_requests_and_released_under_pressure() {
    let mut z = zone(256);
    let mut held = Vec::new();
    while let Ok(p) = z.alloc_pages(0, Gfp::HIGHUSER_MOVABLE) {
        held.push(p);
    }
    let wm = z.counters().watermarks();
    assert!(z.nr_free_pages() <= wm.min + z.counters().watermark_boost());
    // A high-order atomic request below the min mark: reserves its pageblock.
    let atomic = z.alloc_pages(1, Gfp::ATOMIC).unwrap();
    assert_eq!(z.pageblock_migratetype(atomic.0), MigrateType::HighAtomic);
    assert_eq!(z.counters().nr_reserved_highatomic(), 512);
    assert_eq!(z.counters().event(VmEvent::HighAtomicReserve), 1);
    z.verify().unwrap();
    // An ordinary request that fails outright releases the reserve before giving up.
    assert!(z.alloc_pages(0, Gfp::KERNEL).is_err());
    assert_eq!(z.counters().event(VmEvent::HighAtomicUnreserve), 1);
    assert_eq!(z.counters().nr_reserved_highatomic(), 0);
    assert_eq!(z.pageblock_migratetype(atomic.0), MigrateType::Unmovable);
    z.verify().unwrap();
    z.free_pages(atomic, 1).unwrap();
    for p in held {
        z.free_pages(p, 0).unwrap();
    }
    assert_eq!(z.nr_free_pages(), z.managed_pages());
    z.verify().unwrap();
}
