//! pageblock's own policy switches, each on a state built to show what it changes: the same
//! node under `defrag_mode` with the switch off (the kernel's rule) and on.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use pageblock_core::compaction::suitable::{compaction_suitable, migration_target_pages};
use pageblock_core::compaction::{compact_gap, MigrateFail, MigrateMode, Mover};
use pageblock_core::thp::ThpDefrag;
use pageblock_core::vmscan::kswapd::{pgdat_balanced, wakeup_kswapd};
use pageblock_core::vmscan::LruKind;
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{
    Gfp, Node, NodeConfig, PageblockSwitch, Pfn, Policy, Switches, Sysctl, VmEvent, ZoneConfig, ZoneStat,
    ZoneType,
};

mod common;
use common::fill;

/// Movable pages that can move; nothing else is on an LRU, so reclaim finds nothing.
#[derive(Clone, Default)]
struct Owner(Rc<RefCell<BTreeSet<u64>>>);

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut t = self.0.borrow_mut();
        if t.remove(&from.0) && t.insert(to.0) {
            Ok(())
        } else {
            Err(MigrateFail::Busy)
        }
    }
}

/// `defrag_mode` with the 2026 fixes (and `vm.min_free_kbytes` `min_free_kbytes`), then
/// pageblock's `switch` on or off.
fn defrag_mode(min_free_kbytes: u64, switch: Option<(PageblockSwitch, bool)>) -> Policy {
    let p = Policy { defrag_mode_fixes: Switches::all(), ..Policy::default() };
    let mut p = p
        .with_sysctl(Sysctl::DefragMode, 1)
        .unwrap()
        .with_sysctl(Sysctl::MinFreeKbytes, min_free_kbytes)
        .unwrap();
    if let Some((switch, on)) = switch {
        p.pageblock_switches.set(switch, on);
    }
    p
}

/// Whole free pageblocks of zone `z`, in pages.
fn free_blocks(node: &Node, z: usize) -> u64 {
    node.shared().zone(z).counters().zone_stat(ZoneStat::NrFreePagesBlocks)
}

/// 64 MiB: unmovable pageblocks with one page left in each and the rest free; movable
/// pageblocks full. Free memory is plentiful, but none of it is where compaction can
/// migrate to.
fn free_memory_in_unmovable_blocks(policy: Policy) -> (Node, Owner) {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Owner::default();
    node.set_mover(Box::new(owner.clone()));
    let kernel: Vec<Pfn> = (0..8 * 512).map(|_| node.alloc_pages(0, 0, Gfp::KERNEL).unwrap()).collect();
    let nowait_movable = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
    owner.0.borrow_mut().extend(fill(&node, nowait_movable).iter().map(|p| p.0));
    for pfn in kernel.into_iter().filter(|p| p.0 % 512 != 0) {
        node.free_pages(0, pfn, 0).unwrap();
    }
    node.drain_all_pages();
    (node, owner)
}

#[test]
fn compaction_is_not_suitable_without_migration_targets() {
    let mut deferred = Vec::new();
    for on in [false, true] {
        let policy = defrag_mode(1024, Some((PageblockSwitch::CompactionSuitableTargets, on)));
        let (node, owner) = free_memory_in_unmovable_blocks(policy.clone());
        let zone = node.shared().zone(0);
        let min = zone.wmark_pages(WatermarkLevel::Min);
        assert!(zone.nr_free_pages() > 3000, "plenty free: {}", zone.nr_free_pages());
        let targets = migration_target_pages(zone, 9).unwrap();
        assert!(targets < compact_gap(9), "hardly any of it movable: {targets}");
        assert_eq!(compaction_suitable(zone, 9, min, ZoneType::Normal, &policy), !on);
        let fault = node.thp_fault(0, ThpDefrag::Always, true).unwrap();
        assert_eq!(fault.order, 0, "no huge page can be had either way");
        let z = node.zone(0).compaction().clone();
        deferred.push((z.defer_shift, node.shared().event(VmEvent::CompactStall)));
        assert_eq!(owner.0.borrow().len() as u64, node.verify().unwrap().allocated - 8 - 1);
    }
    let (kernel, targets) = (deferred[0], deferred[1]);
    assert!(kernel.0 > 0 && kernel.1 > 0, "the kernel's rule compacts in vain and defers: {kernel:?}");
    assert_eq!(targets, (0, 0), "with the switch compaction is skipped, not deferred");
}

/// 512 MiB of a PC (ZONE_DMA and ZONE_DMA32) whose ZONE_DMA32 has no whole free pageblock
/// left: its blocks are taken as huge pages regardless of the watermarks (ZONE_DMA's are
/// held meanwhile so that none of them is used instead, then given back).
fn dma32_without_free_blocks(policy: Policy) -> Node {
    let node = Node::new(NodeConfig::x86_64(512 << 20, 1), policy).unwrap();
    let memalloc = |gfp: Gfp| Gfp(gfp.0 & !Gfp::RECLAIM.0 | Gfp::MEMALLOC.0);
    let take = |gfp: Gfp, z: usize| {
        let mut taken = Vec::new();
        while free_blocks(&node, z) > 0 {
            let pfn = node.alloc_pages(0, 9, gfp).unwrap();
            assert_eq!(node.shared().zone_of(pfn.0), Some(z));
            taken.push(pfn);
        }
        taken
    };
    let dma = take(memalloc(Gfp(Gfp::KERNEL.0 | Gfp::DMA.0)), 0);
    take(memalloc(Gfp::HIGHUSER_MOVABLE), 1);
    for pfn in dma {
        node.free_pages(0, pfn, 9).unwrap();
    }
    node
}

#[test]
fn kswapd_balance_weighs_the_nodes_blocks_not_any_one_zone() {
    let mut woken = Vec::new();
    for on in [false, true] {
        let policy = defrag_mode(16 << 10, Some((PageblockSwitch::KswapdBalanceNodeBlocks, on)));
        let node = dma32_without_free_blocks(policy);
        let dma32_high = node.shared().zone(1).wmark_pages(WatermarkLevel::High);
        assert!(free_blocks(&node, 0) >= 7 * 512, "ZONE_DMA keeps its free pageblocks");
        assert!(free_blocks(&node, 0) < dma32_high, "fewer than DMA32's high mark");
        assert_eq!(pgdat_balanced(node.shared(), 9, ZoneType::Dma32), !on);
        wakeup_kswapd(&node, Gfp::HIGHUSER_MOVABLE, 9, ZoneType::Dma32);
        woken.push(node.shared().daemons().kswapd_woken);
        node.verify().unwrap();
    }
    assert_eq!(woken, [false, true], "ZONE_DMA's blocks hide DMA32's shortage from kswapd, unless weighed");
}

#[test]
fn kswapd_is_woken_when_whole_free_blocks_run_low() {
    let mut woken = Vec::new();
    for on in [false, true] {
        let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
        let mut node = Node::new(
            NodeConfig::single(zone),
            defrag_mode(1024, Some((PageblockSwitch::KswapdWakeForBlocks, on))),
        )
        .unwrap();
        // Every pageblock half used: free pages plenty, whole free pageblocks none.
        let nowait_movable = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
        for pfn in fill(&node, nowait_movable).into_iter().filter(|p| p.0 % 2 == 1) {
            node.free_pages(0, pfn, 0).unwrap();
        }
        node.drain_all_pages();
        // The fill woke kswapd on its way down; let it run (it has nothing to reclaim).
        node.advance_to(1);
        node.advance_to(1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
        common::finish_kswapd_run(&mut node, 1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
        let zone = node.shared().zone(0);
        let low = zone.wmark_pages(WatermarkLevel::Low);
        assert!(zone.nr_free_pages() > 8 * low && free_blocks(&node, 0) < low);
        assert!(!node.shared().daemons().kswapd_woken);
        node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap();
        woken.push(node.shared().daemons().kswapd_woken);
        node.verify().unwrap();
    }
    assert_eq!(woken, [false, true], "free pages above low wake nobody, unless blocks are counted");
}

/// Regression (issue 22): `compaction_suitable_targets` is documented to act only under
/// `defrag_mode`, but `compaction_suitable()` applied it without. On a zone where it matters
/// (free memory, none of it a migration target), the switch without `defrag_mode` must
/// answer as the kernel does.
#[test]
fn compaction_suitable_targets_acts_only_under_defrag_mode() {
    let (node, _owner) = free_memory_in_unmovable_blocks(defrag_mode(1024, None));
    let zone = node.shared().zone(0);
    let min = zone.wmark_pages(WatermarkLevel::Min);
    let suitable = |p: &Policy| compaction_suitable(zone, 9, min, ZoneType::Normal, p);
    let vanilla = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let targets = Switches::none().with(PageblockSwitch::CompactionSuitableTargets, true);
    let switch_alone = Policy { pageblock_switches: targets, ..vanilla.clone() };
    let on = defrag_mode(1024, Some((PageblockSwitch::CompactionSuitableTargets, true)));
    assert!(!suitable(&on), "the switch matters here");
    assert_eq!(suitable(&switch_alone), suitable(&vanilla), "without defrag_mode the switch is off");
}

/// The page owner of [`order9_wake_with_anon_only`]: every anonymous page can be swapped
/// out but the pinned ones.
#[derive(Clone, Default)]
struct Swappable {
    pinned: Rc<RefCell<BTreeSet<u64>>>,
}

impl pageblock_core::vmscan::Unmap for Swappable {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        !self.pinned.borrow().contains(&pfn)
    }
}

/// 32 MiB of anonymous memory, one pinned page at the head of every pageblock, every other
/// page freed: free pages far above the high watermark, no whole free pageblock. kswapd is
/// woken at order 9 and runs; returns (pages it reclaimed, pages swapped out).
fn order9_wake_with_anon_only(policy: Policy) -> (u64, u64) {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(32 << 20) };
    let policy = policy.with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Swappable::default();
    node.set_unmap(Box::new(owner.clone()));
    let z = node.shared().zone(0);
    let mut pages = Vec::new();
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        assert!(node.lru_add(pfn, 0, LruKind::Anon));
        pages.push(pfn.0);
    }
    for pfn in pages {
        if pfn % 512 == 0 {
            owner.pinned.borrow_mut().insert(pfn);
        }
        if pfn % 2 == 1 {
            node.free_pages(0, Pfn(pfn), 0).unwrap();
        }
    }
    node.drain_all_pages();
    assert!(z.nr_free_pages() > z.wmark_pages(WatermarkLevel::High) && free_blocks(&node, 0) == 0);
    wakeup_kswapd(&node, Gfp::NONE, 9, ZoneType::Normal);
    node.advance_to(1);
    node.advance_to(1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
    common::finish_kswapd_run(&mut node, 1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
    node.verify().unwrap();
    (node.shared().event(VmEvent::PgstealKswapd), node.shared().event(VmEvent::Pswpout))
}

/// Regression (issue 22): `blocks_without_swap` is documented to act only under
/// `defrag_mode`, but kswapd applied it without: a vanilla kswapd woken for a huge page
/// with free pages above high stopped swapping. Without `defrag_mode` the switch must change
/// nothing.
#[test]
fn blocks_without_swap_acts_only_under_defrag_mode() {
    let vanilla = order9_wake_with_anon_only(Policy::default());
    assert!(vanilla.1 > 0, "the kernel's kswapd swaps for the huge page here: {vanilla:?}");
    let switch_alone = order9_wake_with_anon_only(Policy {
        pageblock_switches: Switches::none().with(PageblockSwitch::BlocksWithoutSwap, true),
        ..Policy::default()
    });
    assert_eq!(switch_alone, vanilla, "without defrag_mode the switch is off");
}
