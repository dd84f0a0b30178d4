//! The slow path's order (6.18 `__alloc_pages_slowpath`), one regression test per rule that
//! the model used to get wrong (divergences D1, D7 and D9 of the 6.18 audit).

use pageblock_core::{Gfp, Node, Pfn, Policy, Sysctl, VmEvent, ZoneConfig};

mod common;
use common::ReclaimRecorder;

/// A 256 MiB machine whose memory is all held by movable order-0 allocations, with `blocks`
/// HighAtomic reserve blocks made by high-order atomic requests on the way.
fn exhausted(policy: Policy, blocks: usize) -> (Node, Vec<Pfn>) {
    let n = Node::single_zone(ZoneConfig::normal(256 << 20), policy).unwrap();
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE) {
        held.push(p);
    }
    // High-order atomic requests dig below the watermarks and reserve their pageblock; once
    // a reserve block is used up, the next one reserves another.
    while n.zone(0).counters().nr_reserved_highatomic() < blocks as u64 * 512 {
        held.push(n.alloc_pages(0, 1, Gfp::ATOMIC).expect("an atomic request digs into the reserves"));
    }
    (n, held)
}

fn reserved_blocks(n: &Node) -> u64 {
    n.zone(0).counters().nr_reserved_highatomic() / 512
}

/// D1: costly requests without __GFP_RETRY_MAYFAIL (THP) give up before
/// should_reclaim_retry, so they never release a HighAtomic reserve.
#[test]
fn a_failing_thp_request_keeps_the_highatomic_reserve() {
    let (n, _held) = exhausted(Policy::default(), 1);
    assert_eq!(reserved_blocks(&n), 1);
    assert!(n.alloc_pages(0, 9, Gfp::TRANSHUGE).is_err());
    assert_eq!(reserved_blocks(&n), 1, "the kernel goes to nopage before unreserving");
    assert_eq!(n.shared().event(VmEvent::HighAtomicUnreserve), 0);
    let noretry = Gfp::KERNEL | Gfp::NORETRY;
    assert!(n.alloc_pages(0, 0, noretry).is_err(), "__GFP_NORETRY exits before the retry logic too");
    assert_eq!(reserved_blocks(&n), 1);
}

/// D1: an ordinary request that fails releases one reserved block per pass of
/// should_reclaim_retry until none is left, before it fails.
#[test]
fn a_failing_ordinary_request_releases_every_reserved_block_first() {
    let (n, _held) = exhausted(Policy::default(), 2);
    assert_eq!(reserved_blocks(&n), 2);
    let _ = n.alloc_pages(0, 3, Gfp::KERNEL | Gfp::COMP);
    assert_eq!(reserved_blocks(&n), 0, "the whole reserve goes before the request fails");
    assert_eq!(n.shared().event(VmEvent::HighAtomicUnreserve), 2);
    n.verify().unwrap();
}

/// D1: under defrag_mode, a costly request fails before the ALLOC_NOFRAGMENT drop; a
/// non-costly one that may retry gets it after reclaim and the reserve are exhausted.
#[test]
fn defrag_mode_drops_nofragment_only_for_requests_that_reach_the_end() {
    let policy = Policy::default()
        .with_sysctl(Sysctl::DefragMode, 1)
        .and_then(|p| p.with_sysctl(Sysctl::MinFreeKbytes, 1024));
    let policy = policy.unwrap();
    let n = Node::single_zone(ZoneConfig::normal(64 << 20), policy).unwrap();
    // One movable page stays in every pageblock, so no whole free pageblock is left: an
    // Unmovable request can only fall back by fragmenting one.
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE) {
        held.push(p);
    }
    for p in held.into_iter().filter(|p| p.0 % 512 != 0) {
        n.free_pages(0, p, 0).unwrap();
    }
    n.drain_all_pages();
    assert_eq!(n.zone(0).counters().zone_stat(pageblock_core::ZoneStat::NrFreePagesBlocks), 0);
    let before = n.shared().event(VmEvent::NoFragmentRelaxed);
    let costly = n.alloc_pages(0, 4, Gfp::KERNEL | Gfp::COMP);
    assert!(costly.is_err(), "a costly request without RETRY_MAYFAIL never fragments under defrag_mode");
    assert_eq!(n.shared().event(VmEvent::NoFragmentRelaxed), before);
    let small = n.alloc_pages(0, 0, Gfp::KERNEL);
    assert!(small.is_ok(), "an order-0 request reaches the end of the slow path and may fragment");
    assert!(n.shared().event(VmEvent::NoFragmentRelaxed) > before);
    assert!(n.shared().event(VmEvent::ExtfragFragmenting) > 0);
    n.verify().unwrap();
}

/// D7: other CPUs' caches are drained only after direct reclaim made progress; without
/// progress a request fails with pages cached elsewhere (both as in 6.18).
#[test]
fn drain_all_pages_follows_reclaim_progress_only() {
    let n = Node::single_zone(ZoneConfig::normal(16 << 20), Policy::default()).unwrap();
    let p = n.alloc_pages(1, 0, Gfp::KERNEL).unwrap();
    n.free_pages(1, p, 0).unwrap();
    let cached = n.zone(0).counters().cpu(1).count();
    let mut held = Vec::new();
    while let Ok(p) = n.alloc_pages(0, 0, Gfp::KERNEL) {
        held.push(p);
    }
    assert_eq!(n.zone(0).counters().cpu(1).count(), cached, "no progress, no drain");
    assert!(n.alloc_pages(0, 0, Gfp::ATOMIC).is_err() || n.zone(0).counters().cpu(1).count() == cached);
    // A driver whose direct reclaim "frees" something, to see what follows progress.
    let r = ReclaimRecorder::new(&n, 1);
    let got = pageblock_core::page_alloc::alloc_pages(&r, 0, 0, Gfp::KERNEL);
    assert!(!r.orders.borrow().is_empty());
    assert_eq!(n.zone(0).counters().cpu(1).count(), 0, "progress: every CPU's lists were drained");
    assert!(got.is_ok(), "the drained pages served the retry");
    assert!(n.shared().counters().allocstall(pageblock_core::ZoneType::Normal) > 0);
    let not_blocking = ReclaimRecorder::new(&n, 1);
    let _ = pageblock_core::page_alloc::alloc_pages(&not_blocking, 0, 0, Gfp::ATOMIC);
    assert!(not_blocking.orders.borrow().is_empty(), "a request that cannot block never reclaims");
}

/// D9: an ALLOC_NO_WATERMARKS attempt still tries the high mark first and marks the zone
/// `ZONE_BELOW_HIGH` when it fails, so per-CPU caches stop growing, then allocates anyway.
#[test]
fn a_no_watermarks_attempt_marks_the_zone_below_high() {
    use pageblock_core::zone::watermark::WatermarkRequest;
    use pageblock_core::{AllocFlags, ZoneType};
    // A min mark above the zone's 16384 pages: it boots below every mark, flag clear.
    let n = Node::single_zone(
        ZoneConfig::normal(64 << 20),
        Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 70_000).unwrap(),
    )
    .unwrap();
    let z = n.shared().zone(0);
    assert!(!z.flags().below_high());
    let req = |flags| WatermarkRequest { order: 0, flags, highest_zoneidx: ZoneType::Normal };
    assert!(z.watermark_allows(&req(AllocFlags::NO_WATERMARKS)), "no watermarks: allowed");
    assert!(z.flags().below_high(), "and the zone is marked below high");
    assert!(!z.watermark_allows(&req(AllocFlags::WMARK_MIN)), "below min: refused");
}
