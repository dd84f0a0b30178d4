//! Deterministic scenarios, one kernel behaviour each, through the one allocation path.

mod common;

use common::{buddyinfo, fingerprint};
use pageblock_core::trace::RecordingSink;
use pageblock_core::unstable::ZoneInternals;
use pageblock_core::{
    AllocError, FreeError, Gfp, MigrateType, Node, NodeConfig, Pfn, Policy, TraceEvent, VmEvent, ZoneConfig,
    ZoneStat,
};

fn node(mib: u64) -> Node {
    Node::single_zone(ZoneConfig::normal(mib << 20), Policy::default()).unwrap()
}

fn recorded(node: &Node) -> Vec<TraceEvent> {
    let mut sink = node.shared().trace().take_sink().expect("a sink was installed");
    let rec = sink.as_any().downcast_mut::<RecordingSink>().expect("a RecordingSink");
    rec.events()
}

#[test]
fn boot_frees_everything_into_max_order_movable_blocks() {
    let n = node(64);
    let z = n.zone(0);
    assert_eq!(z.managed_pages(), 16384);
    assert_eq!(buddyinfo(&n, 0), vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16]);
    assert_eq!(z.shared().free_areas().mt_nr_free(10, MigrateType::Movable), Some(16));
    assert_eq!(z.counters().zone_stat(ZoneStat::NrFreePagesBlocks), 16384);
    let first: Vec<u64> = z.free_list(10, MigrateType::Movable).take(3).map(|p| p.0).collect();
    assert_eq!(first, vec![0x100000, 0x100400, 0x100800], "boot frees to the tail, in pfn order");
    drop(z);
    n.verify().unwrap();
}

#[test]
fn unaligned_zone_boots_with_smaller_edge_blocks() {
    let cfg = ZoneConfig::new(pageblock_core::ZoneType::Normal, 0x1001, 5000);
    let n = Node::single_zone(cfg, Policy::default()).unwrap();
    let census = n.verify().unwrap();
    assert_eq!(census.free, 5000);
    assert_eq!(n.shared().nr_free_pages(), 5000);
}

#[test]
fn alloc_splits_the_lowest_block_and_free_merges_it_back() {
    let n = node(64);
    let before = fingerprint(&n);
    // Order 4 is not cached per CPU: this is the buddy allocator proper.
    let p = n.alloc_pages(0, 4, Gfp::HIGHUSER_MOVABLE).unwrap();
    assert_eq!(p, Pfn(0x100000), "the head of the lowest list is split, the low half kept");
    assert_eq!(buddyinfo(&n, 0), vec![0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 15]);
    n.verify().unwrap();
    n.free_pages(0, p, 4).unwrap();
    n.verify().unwrap();
    assert_eq!(buddyinfo(&n, 0), vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16]);
    assert_eq!(n.shared().event(VmEvent::PgAlloc), 16);
    assert_eq!(n.shared().event(VmEvent::PgFree), 16384 + 16);
    assert_ne!(before, fingerprint(&n), "the merged block went to the head, not back to its old place");
}

#[test]
fn order_zero_requests_refill_a_batch_per_cpu_and_frees_are_cached() {
    let n = node(1024);
    let batch = n.zone(0).shared().pageset().batch;
    assert_eq!(batch, 63);
    let p = n.alloc_pages(1, 0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let c = |cpu| n.zone(0).counters().cpu(cpu).count();
    assert_eq!(c(1), 62, "63 refilled, one handed out");
    assert_eq!(c(0), 0);
    n.free_pages(0, p, 0).unwrap();
    assert_eq!(c(0), 1, "freed on CPU 0: cached there, not merged");
    assert_eq!(n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap(), p, "LIFO: the cache-hot page first");
    n.free_pages(0, p, 0).unwrap();
    n.drain_all_pages();
    assert_eq!(c(0) + c(1), 0);
    assert_eq!(n.verify().unwrap().free, n.shared().managed_pages());
}

#[test]
fn first_unmovable_request_claims_the_largest_movable_block() {
    let n = node(64);
    n.shared().trace().set_sink(Some(Box::new(RecordingSink::default())));
    let p = n.alloc_pages(0, 0, Gfp::KERNEL).unwrap();
    // ALLOC_NOFRAGMENT: only a whole free pageblock may be claimed; the claim takes a whole
    // order-10 block (two pageblocks) and retypes both.
    let z = n.zone(0);
    assert_eq!(z.pageblock_migratetype(p.0), MigrateType::Unmovable);
    assert_eq!(z.pageblock_migratetype(p.0 ^ 512), MigrateType::Unmovable);
    assert_eq!(z.counters().event(VmEvent::ClaimWholeBlock), 1);
    drop(z);
    let events = recorded(&n);
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
    n.verify().unwrap();
}

#[test]
fn misuse_is_refused_and_changes_nothing() {
    let n = node(16);
    let a = n.alloc_pages(0, 2, Gfp::KERNEL).unwrap();
    let b = n.alloc_pages(0, 0, Gfp::KERNEL).unwrap();
    n.free_pages(0, b, 0).unwrap();
    let big = n.alloc_pages(0, 5, Gfp::KERNEL).unwrap();
    n.free_pages(0, big, 5).unwrap();
    let before = fingerprint(&n);
    let end = n.zone(0).end_pfn();
    let cases = [
        (Pfn(0), 0, FreeError::OutOfRange { pfn: Pfn(0) }),
        (Pfn(end), 0, FreeError::OutOfRange { pfn: Pfn(end) }),
        (a, 11, FreeError::OrderTooLarge { order: 11 }),
        // Regression: order 64 overflowed a shift (a panic in debug builds).
        (a, 64, FreeError::OrderTooLarge { order: 64 }),
        (Pfn(a.0 + 1), 1, FreeError::Unaligned { pfn: Pfn(a.0 + 1), order: 1 }),
        (Pfn(end - 1), 1, FreeError::Unaligned { pfn: Pfn(end - 1), order: 1 }),
        (a, 1, FreeError::WrongOrder { pfn: a, order: 1, allocated_order: 2 }),
        (Pfn(a.0 + 2), 0, FreeError::NotAllocated { pfn: Pfn(a.0 + 2) }),
        (b, 0, FreeError::DoubleFree { pfn: b }),
        (big, 5, FreeError::DoubleFree { pfn: big }),
    ];
    for (pfn, order, want) in cases {
        assert_eq!(n.free_pages(0, pfn, order), Err(want), "free({pfn}, {order})");
        assert_eq!(before, fingerprint(&n), "state changed after refused free({pfn}, {order})");
    }
    n.verify().unwrap();
    assert_eq!(
        n.alloc_pages(0, 11, Gfp::KERNEL),
        Err(AllocError::OrderTooLarge { order: 11, max_order: 10 })
    );
    assert_eq!(
        n.alloc_pages(0, 64, Gfp::KERNEL),
        Err(AllocError::OrderTooLarge { order: 64, max_order: 10 })
    );
    let both = Gfp::MOVABLE | Gfp::RECLAIMABLE;
    assert_eq!(n.alloc_pages(0, 0, both), Err(AllocError::InvalidGfp(both)));
    let zones = Gfp::DMA | Gfp::DMA32;
    assert_eq!(n.alloc_pages(0, 0, zones), Err(AllocError::InvalidGfp(zones)));
    assert_eq!(before, fingerprint(&n), "refused allocations change nothing");
    n.free_pages(0, a, 2).unwrap();
    assert_eq!(n.free_pages(1, a, 2), Err(FreeError::DoubleFree { pfn: a }));
    n.verify().unwrap();
}

#[test]
fn exhaustion_fails_cleanly_and_recovers() {
    let n = node(8);
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::ATOMIC) {
        held.push(p);
    }
    assert!(matches!(n.alloc_pages(0, 0, Gfp::ATOMIC), Err(AllocError::NoMemory { order: 0 })));
    let wm = n.zone(0).counters().watermarks();
    assert!(n.shared().nr_free_pages() <= wm.min, "atomic requests may dig below min, not below their share");
    n.verify().unwrap();
    for p in held {
        n.free_pages(0, p, 0).unwrap();
    }
    n.drain_all_pages();
    assert_eq!(n.shared().nr_free_pages(), n.shared().managed_pages());
    assert_eq!(buddyinfo(&n, 0).last(), Some(&2));
    n.verify().unwrap();
}

#[test]
fn highatomic_reserve_is_made_by_atomic_requests_and_released_under_pressure() {
    let n = node(256);
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE) {
        held.push(p);
    }
    let z = || n.zone(0);
    assert!(n.shared().nr_free_pages() <= z().counters().watermarks().low + z().counters().watermark_boost());
    // A high-order atomic request below the watermarks: reserves its pageblock.
    let atomic = n.alloc_pages(0, 1, Gfp::ATOMIC).unwrap();
    assert_eq!(z().pageblock_migratetype(atomic.0), MigrateType::HighAtomic);
    assert_eq!(z().counters().nr_reserved_highatomic(), 512);
    assert_eq!(z().counters().event(VmEvent::HighAtomicReserve), 1);
    n.verify().unwrap();
    // An ordinary request that fails outright releases the reserve before giving up.
    assert!(n.alloc_pages(0, 0, Gfp::KERNEL).is_err());
    assert_eq!(z().counters().event(VmEvent::HighAtomicUnreserve), 1);
    assert_eq!(z().counters().nr_reserved_highatomic(), 0);
    assert_eq!(z().pageblock_migratetype(atomic.0), MigrateType::Unmovable);
    n.verify().unwrap();
    n.free_pages(0, atomic, 1).unwrap();
    for p in held {
        n.free_pages(0, p, 0).unwrap();
    }
    n.drain_all_pages();
    assert_eq!(n.shared().nr_free_pages(), n.shared().managed_pages());
    n.verify().unwrap();
}

#[test]
fn a_whole_machine_boots_three_zones_with_their_reserves() {
    let n = Node::new(NodeConfig::x86_64(4 << 30, 2), Policy::default()).unwrap();
    let types: Vec<&str> = n.shared().zones().iter().map(|z| z.config().zone_type.name()).collect();
    assert_eq!(types, ["DMA", "DMA32", "Normal"]);
    let dma = n.shared().zone(0);
    assert!(dma.lowmem_reserve_pages()[2] > 0, "DMA protects itself from Normal-capable requests");
    assert_eq!(n.verify().unwrap().free, n.shared().managed_pages());
}

#[test]
fn reserved_pages_count_as_pageblocks_but_are_never_allocated_or_freed() {
    let n = Node::new(NodeConfig::x86_64(64 << 20, 2), Policy::default()).unwrap();
    let dma = n.shared().zone(0).config().clone();
    assert_eq!((dma.start_pfn, dma.reserved_pages, dma.first_managed_pfn()), (1, 255, 256));
    let blocks: u64 = pageblock_core::show::pageblock_counts(n.shared().zone(0)).iter().sum();
    assert_eq!(blocks, 8, "pfns 1..4096: eight pageblocks, as the kernel counts them");
    let census = n.verify().unwrap();
    assert_eq!(census.reserved, 255);
    let before = fingerprint(&n);
    assert_eq!(n.free_pages(0, Pfn(5), 0), Err(FreeError::NotAllocated { pfn: Pfn(5) }));
    assert_eq!(before, fingerprint(&n));
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::KERNEL | Gfp::DMA) {
        assert!(p.0 >= 256, "a reserved page was handed out: {p}");
        held.push(p);
    }
    assert!(!held.is_empty());
}

#[test]
fn split_page_lets_an_allocation_be_freed_piece_by_piece() {
    use pageblock_core::NodeLocks;
    let n = node(64);
    let p = n.alloc_pages(0, 5, Gfp::KERNEL).unwrap();
    assert!(!n.lock_zone(0).split_page(p.0, 4, 0), "not a block of order 4");
    assert!(n.lock_zone(0).split_page(p.0, 5, 2));
    assert_eq!(n.free_pages(0, p, 5), Err(FreeError::WrongOrder { pfn: p, order: 5, allocated_order: 2 }));
    for i in 0..8 {
        n.free_pages(1, Pfn(p.0 + 4 * i), 2).unwrap();
    }
    n.drain_all_pages();
    assert_eq!(n.verify().unwrap().free, n.shared().managed_pages());
}

#[test]
fn onlined_memory_joins_the_zone_and_the_node_recomputes_its_sizes() {
    use pageblock_core::memory_hotplug::{online_pages, OnlineError};
    let span = pageblock_core::ZoneSpan { start_pfn: 0x100000, spanned_pages: 32768, present_pages: 16384 };
    let cfg = ZoneConfig { offline_pages: 16384, span, ..ZoneConfig::normal(64 << 20) };
    let n = Node::single_zone(cfg, Policy::default()).unwrap();
    let z = n.shared().zone(0);
    let offline_start = z.config().first_managed_pfn() + 16384;
    assert_eq!(n.verify().unwrap().offline, 16384);
    assert_eq!(
        pageblock_core::show::pageblock_counts(z).iter().sum::<u64>(),
        32,
        "offline memory has no pageblocks"
    );
    let (min_before, limits_before) = (z.counters().watermarks().min, z.pageset());
    assert_eq!(
        n.free_pages(0, Pfn(offline_start), 0),
        Err(FreeError::NotAllocated { pfn: Pfn(offline_start) })
    );
    online_pages(&n, 0, offline_start, 16384).unwrap();
    assert_eq!(z.managed_pages(), 32768);
    assert_eq!(n.shared().nr_free_pages(), 32768);
    assert!(z.counters().watermarks().min > min_before, "min_free_kbytes grew with the memory");
    assert_ne!(z.pageset(), limits_before, "zone_pcp_update");
    assert_eq!(
        online_pages(&n, 0, offline_start, 1024),
        Err(OnlineError::NotOffline { pfn: offline_start, nr_pages: 1024 }),
        "already online"
    );
    let census = n.verify().unwrap();
    assert_eq!((census.offline, census.free), (0, 32768));
    assert_eq!(pageblock_core::show::pageblock_counts(z).iter().sum::<u64>(), 64);
    let big = n.alloc_pages(0, 10, Gfp::HIGHUSER_MOVABLE).unwrap();
    n.free_pages(0, big, 10).unwrap();
}
