//! kswapd woken for a huge page where free pages abound but no pageblock can come free:
//! once it has reclaimed `compact_gap(order)` pages over its run it judges balance at order
//! 0 and hands the order to kcompactd (6.18), where the kernel seed 004 measured kept
//! reclaiming under `defrag_mode` for whole free pageblocks.

mod common;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use pageblock_core::compaction::compact_gap;
use pageblock_core::vmscan::{LruKind, Unmap, KSWAPD_WAKE_DELAY_US};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{
    Gfp, KernelPeriod, Node, NodeConfig, Pfn, Policy, Sysctl, VmEvent, ZoneConfig, ZoneType,
};

/// The page cache's owner: every page goes but the pinned ones.
#[derive(Clone, Default)]
struct Cache {
    pinned: Rc<RefCell<BTreeSet<u64>>>,
}

impl Unmap for Cache {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        !self.pinned.borrow().contains(&pfn)
    }
}

const HPAGE_ORDER: u32 = 9;

/// What kswapd did for one order-9 wake-up.
struct Outcome {
    /// Pages kswapd reclaimed.
    stolen: u64,
    /// Page cache left on the LRU before the wake-up.
    lru_pages: u64,
    /// kcompactd was woken for the huge page order.
    kcompactd_woken_for_hpage: bool,
    /// kswapd stays awake to run again.
    kswapd_awake: bool,
}

/// A 32 MiB zone full of page cache, one pinned page at the head of every pageblock (no
/// block can come free), then every page but one in `keep` freed: free pages far above the
/// high watermark, no whole free pageblock. kswapd is woken at order 9 and runs one
/// `balance_pgdat` run, pass by pass.
fn order9_wake_without_free_blocks(policy: Policy, keep: u64) -> Outcome {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(32 << 20) };
    let mut node =
        Node::new(NodeConfig::single(zone), policy.with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap())
            .unwrap();
    let cache = Cache::default();
    node.set_unmap(Box::new(cache.clone()));
    let z = node.shared().zone(0);
    let mut pages = Vec::new();
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        assert!(node.lru_add(pfn, 0, LruKind::File));
        pages.push(pfn.0);
    }
    let block = 1u64 << node.shared().pageblock_order();
    let mut lru_pages = 0;
    for pfn in pages {
        if pfn % block == 0 {
            cache.pinned.borrow_mut().insert(pfn);
        }
        if pfn % keep == 0 {
            lru_pages += 1;
        } else {
            node.free_pages(0, Pfn(pfn), 0).unwrap();
        }
    }
    node.drain_all_pages();
    assert!(z.nr_free_pages() > z.wmark_pages(WatermarkLevel::High) + compact_gap(HPAGE_ORDER));
    assert!(!node.shared().daemons().kswapd_woken && !node.shared().daemons().kcompactd_woken);
    pageblock_core::vmscan::kswapd::wakeup_kswapd(&node, Gfp::NONE, HPAGE_ORDER, ZoneType::Normal);
    assert!(node.shared().daemons().kswapd_woken, "no free pageblock: kswapd is woken at order 9");
    node.advance_to(1);
    node.advance_to(1 + KSWAPD_WAKE_DELAY_US);
    common::finish_kswapd_run(&mut node, 1 + KSWAPD_WAKE_DELAY_US);
    assert_eq!(node.shared().event(VmEvent::Pageoutrun), 1, "kswapd ran once");
    node.verify().unwrap();
    let d = node.shared().daemons();
    Outcome {
        stolen: node.shared().event(VmEvent::PgstealKswapd),
        lru_pages,
        kcompactd_woken_for_hpage: d.kcompactd_woken && d.kcompactd_max_order == HPAGE_ORDER,
        kswapd_awake: d.kswapd_woken,
    }
}

fn defrag_mode(kernel: KernelPeriod) -> Policy {
    Policy { kernel, ..Policy::default() }.with_sysctl(Sysctl::DefragMode, 1).unwrap()
}

/// R2 (audit 6.18-pressure): 6.18 counts whole free pageblocks only while kswapd works for a
/// high order, so after `compact_gap(9)` reclaimed pages it is balanced on free pages and
/// wakes kcompactd; the kernel seed 004 measured reclaims on toward whole blocks that cannot
/// come free and leaves kcompactd asleep.
#[test]
fn defrag_mode_kswapd_hands_off_to_kcompactd_in_6_18_and_reclaims_on_in_seed_004() {
    let gap = compact_gap(HPAGE_ORDER);
    let fixed = order9_wake_without_free_blocks(defrag_mode(KernelPeriod::Linux6_18), 2);
    assert!(fixed.lru_pages > 3 * gap, "the page cache could feed three gaps: {}", fixed.lru_pages);
    assert!(
        (gap..2 * gap).contains(&fixed.stolen),
        "6.18 stops once a compaction gap is reclaimed: {} of {}",
        fixed.stolen,
        fixed.lru_pages
    );
    assert!(fixed.kcompactd_woken_for_hpage, "and kcompactd makes the huge page");
    let seed = order9_wake_without_free_blocks(defrag_mode(KernelPeriod::Seed004), 2);
    assert!(
        seed.stolen > 2 * fixed.stolen,
        "seed 004's kernel reclaims on for whole blocks: {} against 6.18's {}",
        seed.stolen,
        fixed.stolen
    );
    assert!(!seed.kcompactd_woken_for_hpage, "unbalanced, it does not hand off");
}

/// R3: the order drop counts what kswapd reclaimed over its whole `balance_pgdat` run, not
/// in one pass. Here no pass can reclaim `compact_gap(9)` (the page cache is smaller than
/// two gaps), yet several passes together do — in both kernel periods.
#[test]
fn kswapd_drops_to_order_0_after_a_compaction_gap_reclaimed_over_several_passes() {
    let gap = compact_gap(HPAGE_ORDER);
    for kernel in [KernelPeriod::Linux6_18, KernelPeriod::Seed004] {
        let o = order9_wake_without_free_blocks(Policy { kernel, ..Policy::default() }, 4);
        assert!((gap..2 * gap).contains(&o.lru_pages), "{kernel:?}: no pass scans a gap: {}", o.lru_pages);
        assert!(
            (gap..gap + gap / 2).contains(&o.stolen),
            "{kernel:?}: kswapd stops soon after a gap: {} of {}",
            o.stolen,
            o.lru_pages
        );
        assert!(o.kcompactd_woken_for_hpage, "{kernel:?}: kcompactd is woken for the huge page");
    }
}

/// R5: a run that could not reclaim a compaction gap (the page cache is smaller) ends
/// unbalanced at order 9 without dropping its order. kswapd re-reads the order asked of it
/// since the run began — none here, so 0 — and at order 0 the node is balanced: kswapd goes
/// to sleep rather than looping for the huge page, and kcompactd is not asked for one.
#[test]
fn kswapd_that_did_not_drop_its_order_judges_sleep_at_the_order_asked_since() {
    let gap = compact_gap(HPAGE_ORDER);
    for kernel in [KernelPeriod::Linux6_18, KernelPeriod::Seed004] {
        let o = order9_wake_without_free_blocks(Policy { kernel, ..Policy::default() }, 16);
        assert!(o.lru_pages < gap, "{kernel:?}: less than a gap to reclaim: {}", o.lru_pages);
        assert!(!o.kswapd_awake, "{kernel:?}: balanced at order 0, kswapd sleeps");
        assert!(!o.kcompactd_woken_for_hpage, "{kernel:?}");
    }
}
