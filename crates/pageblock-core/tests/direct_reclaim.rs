//! Direct reclaim for a huge page (audit 6.18-pressure R6-R8): an activating refault puts
//! the page on the active list; a costly request reclaims until compaction has room
//! (`should_continue_reclaim`), and skips reclaim only when compaction is suitable above the
//! *high* watermark (`compaction_ready` since "push watermark into compaction_suitable()
//! callers").

mod common;

use common::Owner;
use pageblock_core::compaction::{compact_gap, suitable::compaction_suitable};
use pageblock_core::vmscan::{try_to_free_pages, LruKind, LruList};
use pageblock_core::zone::watermark::{WatermarkLevel, WatermarkRequest};
use pageblock_core::{AllocFlags, Gfp, Node, NodeConfig, Pfn, Policy, Sysctl, ZoneConfig, ZoneType};

/// A 32 MiB zone filled with page cache down to its low watermark; the cache, oldest first.
fn node_at_low() -> (Node, Owner, Vec<u64>) {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(32 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Owner::default();
    node.set_unmap(Box::new(owner.clone()));
    node.set_mover(Box::new(owner.clone()));
    let mut pfns = Vec::new();
    let z = node.shared().zone(0);
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        assert!(node.lru_add(pfn, 0, LruKind::File));
        owner.0.borrow_mut().insert(pfn.0, 0);
        pfns.push(pfn.0);
    }
    (node, owner, pfns)
}

/// Direct reclaim for one order-9 `GFP_TRANSHUGE` request; the pages it reclaimed.
fn reclaim_for_thp(node: &Node) -> u64 {
    let ac = node.shared().prepare_alloc_pages(Gfp::TRANSHUGE, 9).unwrap();
    try_to_free_pages(node, 0, &ac)
}

#[test]
fn an_activating_refault_moves_the_page_to_the_active_list() {
    let (node, _owner, pfns) = node_at_low();
    let page = Pfn(pfns[0]);
    assert_eq!(node.lru_page(page).map(|p| p.list), Some(LruList::InactiveFile));
    assert!(node.note_refault(page, LruKind::File, 0, true), "a distance of 0 is in the workingset");
    assert_eq!(node.lru_page(page).map(|p| p.list), Some(LruList::ActiveFile));
}

#[test]
fn a_huge_page_direct_reclaim_works_until_compaction_has_room() {
    let (node, _owner, _) = node_at_low();
    node.drain_all_pages();
    let reclaimed = reclaim_for_thp(&node);
    node.drain_all_pages();
    let zone = node.shared().zone(0);
    let min = zone.wmark_pages(WatermarkLevel::Min);
    let req = WatermarkRequest { order: 9, flags: AllocFlags::WMARK_MIN, highest_zoneidx: ZoneType::Normal };
    assert!(
        zone.zone_watermark_ok(req, min)
            || compaction_suitable(zone, 9, min, ZoneType::Normal, node.shared().policy()),
        "reclaimed {reclaimed}: {} free, min {min}, gap {}",
        zone.nr_free_pages(),
        compact_gap(9)
    );
    assert!(reclaimed > compact_gap(9) / 2, "about a compaction gap, not a batch: {reclaimed}");
}

#[test]
fn compaction_is_ready_only_with_room_above_the_high_watermark() {
    let (node, owner, pfns) = node_at_low();
    let zone = node.shared().zone(0);
    let (min, low, high) =
        [WatermarkLevel::Min, WatermarkLevel::Low, WatermarkLevel::High].map(|l| zone.wmark_pages(l)).into();
    // Free scattered base pages until free memory lies between high + gap (where the seed's
    // predecessor kernels called compaction ready) and high + gap + (low - min) (where
    // `compaction_suitable(high)` starts to hold for a costly order).
    let target = high + compact_gap(9) + (low - min) / 2;
    for &pfn in pfns.iter().filter(|&&p| p % 2 == 1) {
        if zone.nr_free_pages() >= target {
            break;
        }
        owner.0.borrow_mut().remove(&pfn);
        node.free_pages(0, Pfn(pfn), 0).unwrap();
        node.drain_all_pages();
    }
    assert!((high + compact_gap(9)..high + compact_gap(9) + low - min).contains(&zone.nr_free_pages()));
    assert!(!compaction_suitable(zone, 9, high, ZoneType::Normal, node.shared().policy()));
    assert!(reclaim_for_thp(&node) > 1, "not ready: reclaim runs");
}
