//! pageblock's own policy switches, each on a state built to show what it changes: the same
//! node under `defrag_mode` with the switch off (the kernel's rule) and on.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use pageblock_core::compaction::suitable::{compaction_suitable, migration_target_pages};
use pageblock_core::compaction::{compact_gap, Mover};
use pageblock_core::thp::ThpDefrag;
use pageblock_core::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Pfn, Policy, VmEvent, ZoneConfig, ZoneType};

/// Movable pages that can move; nothing else is on an LRU, so reclaim finds nothing.
#[derive(Clone, Default)]
struct Owner(Rc<RefCell<BTreeSet<u64>>>);

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, _order: u32) -> bool {
        let mut t = self.0.borrow_mut();
        t.remove(&from.0) && t.insert(to.0)
    }
}

/// `defrag_mode` with the 2026 fixes, then `switch` on top.
fn defrag_mode(switch: impl FnOnce(&mut Policy)) -> Policy {
    let mut p = Policy {
        min_free_kbytes: Some(1024),
        defrag_mode: true,
        defrag_mode_atomic_fallback: true,
        defrag_mode_pageblock_compaction: true,
        defrag_mode_promoted_retry: true,
        ..Policy::default()
    };
    switch(&mut p);
    p
}

/// Order-0 requests of `gfp` until refused, taking back what the CPUs cache, until a round
/// gets nothing. Returns the pages.
fn fill(node: &Node, gfp: Gfp) -> Vec<Pfn> {
    let mut pages = Vec::new();
    loop {
        let start = pages.len();
        while let Ok(pfn) = node.alloc_pages(0, 0, gfp) {
            pages.push(pfn);
        }
        node.drain_all_pages();
        if pages.len() == start {
            return pages;
        }
    }
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
        let policy = defrag_mode(|p| p.compaction_suitable_targets = on);
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
