//! `defrag_mode` as merged in 6.15 and its 2026 fixes, on states built to show the two
//! production regressions: atomic requests failing with memory free in other migratetypes,
//! and non-movable requests reclaiming everything before they may fall back.

use pageblock_core::vmscan::LruKind;
use pageblock_core::{Gfp, Node, NodeConfig, Pfn, Policy, Switches, Sysctl, VmEvent, ZoneConfig};

mod common;
use common::{Owner, ReclaimRecorder};

/// The three policies of the lab.
fn policies() -> [(&'static str, Policy); 3] {
    let base = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let merged = base.clone().with_sysctl(Sysctl::DefragMode, 1).unwrap();
    let fixed = Policy { defrag_mode_fixes: Switches::all(), ..merged.clone() };
    [("vanilla", base), ("defrag_mode", merged), ("defrag_mode_2026", fixed)]
}

/// 64 MiB: unmovable memory fills whole pageblocks; anonymous memory (on the LRU) fills the
/// rest, with every other page freed, so free memory is plentiful but all of it is in
/// movable pageblocks and none in a whole free one.
fn scattered(policy: Policy) -> (Node, Owner) {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Owner::default();
    node.set_unmap(Box::new(owner.clone()));
    node.set_mover(Box::new(owner.clone()));
    let mut unmovable = 0;
    while unmovable < 4 * 512 {
        node.alloc_pages(0, 0, Gfp::KERNEL).unwrap();
        unmovable += 1;
    }
    let mut anon = Vec::new();
    // Fill without reclaim until refused; take back what the CPU caches; again until a
    // fill gets nothing.
    let nowait_movable = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
    loop {
        let start = anon.len();
        while let Ok(pfn) = node.alloc_pages(0, 0, nowait_movable) {
            owner.0.borrow_mut().insert(pfn.0, 0);
            anon.push(pfn);
        }
        node.drain_all_pages();
        if anon.len() == start {
            break;
        }
    }
    // LRU order has nothing to do with physical order: shuffle (deterministically).
    let mut order: Vec<Pfn> = anon.iter().copied().filter(|p| p.0 % 2 == 0).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for pfn in order {
        assert!(node.lru_add(pfn, 0, LruKind::Anon));
    }
    for pfn in anon.into_iter().filter(|p| p.0 % 2 == 1) {
        owner.0.borrow_mut().remove(&pfn.0);
        node.free_pages(0, pfn, 0).unwrap();
    }
    node.drain_all_pages();
    // Whole free pageblocks left over from the fill are taken (and kept) as huge pages.
    let blocks = || node.shared().zone(0).counters().zone_stat(pageblock_core::ZoneStat::NrFreePagesBlocks);
    while blocks() > 0 {
        node.alloc_pages(0, 9, Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::RECLAIM.0)).expect("a free pageblock");
    }
    let z = node.shared().zone(0);
    assert_eq!(
        z.counters().zone_stat(pageblock_core::ZoneStat::NrFreePagesBlocks),
        0,
        "no whole free pageblock"
    );
    assert!(z.nr_free_pages() > 6000, "plenty free: {}", z.nr_free_pages());
    (node, owner)
}

/// Unmovable blocks are full: use up what the CPU cached and what is left on their lists.
fn exhaust_unmovable(node: &Node) {
    for _ in 0..100_000 {
        let z = node.shared().zone(0);
        let free_unmovable =
            (0..=10).any(|o| z.free_areas().has_free(o, pageblock_core::MigrateType::Unmovable));
        if !free_unmovable && node.pcp(0, 0).count() == 0 {
            return;
        }
        node.drain_all_pages();
        if node.alloc_pages(0, 0, Gfp::NOWAIT).is_err() {
            return;
        }
    }
}

#[test]
fn atomic_requests_fail_under_defrag_mode_as_merged_and_not_after_the_fix() {
    let mut outcomes = Vec::new();
    for (name, policy) in policies() {
        let (node, _owner) = scattered(policy);
        exhaust_unmovable(&node);
        let free = node.shared().zone(0).nr_free_pages();
        let failed = (0..64).filter(|_| node.alloc_pages(0, 0, Gfp::ATOMIC).is_err()).count();
        outcomes.push((name, failed, free));
        node.verify().unwrap();
    }
    assert_eq!(outcomes[0].1, 0, "vanilla serves atomic requests: {outcomes:?}");
    assert_eq!(outcomes[1].1, 64, "defrag_mode as merged fails every one with memory free: {outcomes:?}");
    assert!(outcomes[1].2 > 6000);
    assert_eq!(outcomes[2].1, 0, "the 2026 fix lets them fall back: {outcomes:?}");
}

#[test]
fn non_movable_requests_reclaim_far_less_after_the_fix() {
    let mut swapped = Vec::new();
    for (name, policy) in policies() {
        let (node, _owner) = scattered(policy);
        exhaust_unmovable(&node);
        let before = node.shared().event(VmEvent::Pswpout);
        for _ in 0..64 {
            node.alloc_pages(0, 0, Gfp::KERNEL).expect("a blocking request is served in the end");
        }
        swapped.push((name, node.shared().event(VmEvent::Pswpout) - before));
        node.verify().unwrap();
    }
    let [vanilla, merged, fixed] = [swapped[0].1, swapped[1].1, swapped[2].1];
    assert_eq!(vanilla, 0, "vanilla steals a free page: {swapped:?}");
    assert!(merged > 2000, "as merged, the request swaps out until reclaim gives up: {swapped:?}");
    assert!(fixed * 10 < merged, "pageblock compaction spares the swap storm: {swapped:?}");
}

/// T4 (a): the 2026 fix drops ALLOC_NOFRAGMENT for a request that cannot reclaim only if it
/// may wake kswapd (`__GFP_KSWAPD_RECLAIM`). A request without either reclaim bit fails as
/// under defrag_mode as merged; GFP_NOWAIT falls back.
#[test]
fn only_requests_that_may_wake_kswapd_fall_back_without_reclaim() {
    let [_, _, (_, fixed)] = policies();
    let (node, _owner) = scattered(fixed);
    exhaust_unmovable(&node);
    let no_reclaim_at_all = Gfp(Gfp::KERNEL.0 & !Gfp::RECLAIM.0);
    assert!(node.alloc_pages(0, 0, no_reclaim_at_all).is_err(), "no kswapd wake, no fallback");
    assert!(node.alloc_pages(0, 0, Gfp::NOWAIT).is_ok(), "GFP_NOWAIT may fall back");
    node.verify().unwrap();
}

/// T4 (b): with the fix, direct reclaim for a non-movable request that needs a whole free
/// pageblock reclaims for one (`reclaim_order`), as its compaction compacts for one; a
/// movable request reclaims at its own order.
#[test]
fn direct_reclaim_works_for_a_whole_pageblock_for_non_movable_requests() {
    let [_, (_, merged), (_, fixed)] = policies();
    let mut seen = Vec::new();
    for policy in [merged, fixed] {
        let (node, _owner) = scattered(policy);
        exhaust_unmovable(&node);
        let l = ReclaimRecorder::new(&node, 0);
        let _ = pageblock_core::page_alloc::alloc_pages(&l, 0, 0, Gfp::KERNEL);
        let orders = l.orders.take();
        assert!(!orders.is_empty());
        seen.push(orders);
    }
    assert!(seen[0].iter().all(|&o| o == 0), "as merged: the requested order {seen:?}");
    assert!(seen[1].iter().all(|&o| o == 9), "fixed: the pageblock order {seen:?}");
}

/// T4 (b): compaction for a promoted request works for a whole pageblock, but what it
/// captures is a block of the requested order (none here: the freed pages lie in movable
/// pageblocks, which an unmovable request's capture may not pollute). The request is served
/// from the free lists: it claims the whole free pageblock compaction made, and its CPU's
/// list is refilled from it. A captured whole block used to be claimed directly.
#[test]
fn a_promoted_request_captures_at_its_own_order() {
    let [_, _, (_, fixed)] = policies();
    let (node, _owner) = scattered(fixed);
    exhaust_unmovable(&node);
    assert_eq!(node.pcp(0, 0).count(), 0);
    let before = node.shared().event(VmEvent::CompactSuccess);
    node.alloc_pages(0, 0, Gfp::KERNEL).expect("served");
    assert!(node.shared().event(VmEvent::CompactSuccess) > before, "through compaction");
    assert!(node.pcp(0, 0).count() > 0, "served through the per-CPU list, not a capture");
    node.verify().unwrap();
}
