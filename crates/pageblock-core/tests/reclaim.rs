//! Reclaim: direct reclaim and kswapd take LRU pages back from their owner, kswapd works to
//! the high watermark and pays a watermark boost back, kcompactd follows.

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::vmscan::{LruKind, Unmap};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Pfn, Policy, Switches, Sysctl, VmEvent, ZoneConfig};

/// The owner's table: pfn → (order, kind); what reclaim took.
#[derive(Default)]
struct Table {
    pages: BTreeMap<u64, (u32, Option<LruKind>)>,
    evicted: Vec<(u64, LruKind)>,
    pinned: Vec<u64>,
}

#[derive(Clone)]
struct Owner(Rc<RefCell<Table>>);

impl Unmap for Owner {
    fn try_to_unmap(&self, pfn: u64, order: u32, kind: LruKind, _workingset: bool) -> bool {
        let mut t = self.0.borrow_mut();
        if t.pinned.contains(&pfn) {
            return false;
        }
        let had = t.pages.remove(&pfn);
        assert_eq!(had, Some((order, Some(kind))), "reclaim asked for {pfn:#x}/{order} {kind:?}");
        t.evicted.push((pfn, kind));
        true
    }
}

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut t = self.0.borrow_mut();
        match t.pages.remove(&from.0) {
            Some(v) => {
                assert_eq!(v.0, order);
                t.pages.insert(to.0, v);
                Ok(())
            }
            None => Err(MigrateFail::Busy),
        }
    }
}

fn node(mb: u64) -> (Node, Owner) {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(mb << 20) };
    let mut node = Node::new(
        NodeConfig::single(zone),
        Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap(),
    )
    .unwrap();
    let owner = Owner(Rc::default());
    node.set_unmap(Box::new(owner.clone()));
    node.set_mover(Box::new(owner.clone()));
    // These tests judge what reclaim picks, not swap I/O: a swapped page is freed at once
    // (`swap_writeback.rs` tests the block device's latency).
    node.set_swap_device(pageblock_core::vmscan::SwapDevice::synchronous());
    (node, owner)
}

/// Fill with `kind` pages until the zone reaches its low watermark; returns them, oldest
/// first.
fn fill(node: &Node, owner: &Owner, kind: LruKind) -> Vec<u64> {
    let zone = node.shared().zone(0);
    let mut pfns = Vec::new();
    while zone.nr_free_pages() > zone.wmark_pages(WatermarkLevel::Low) {
        pfns.push(fault(node, owner, Some(kind), 0, Gfp::HIGHUSER_MOVABLE).expect("above low"));
    }
    pfns
}

/// Allocate and put on the LRU as `kind`; None when the allocation fails.
fn fault(node: &Node, owner: &Owner, kind: Option<LruKind>, order: u32, gfp: Gfp) -> Option<u64> {
    let pfn = node.alloc_pages(0, order, gfp).ok()?;
    owner.0.borrow_mut().pages.insert(pfn.0, (order, kind));
    if let Some(k) = kind {
        assert!(node.lru_add(pfn, order, k));
    }
    Some(pfn.0)
}

fn check(node: &Node, owner: &Owner) {
    let census = node.verify().unwrap_or_else(|e| panic!("{e}"));
    let t = owner.0.borrow();
    let owned: u64 = t.pages.values().map(|(o, _)| 1u64 << o).sum();
    assert_eq!(census.allocated, owned, "allocated pages are exactly the owned ones");
    for (&pfn, &(order, _)) in &t.pages {
        node.shared().zone(0).check_allocated(Pfn(pfn), order).expect("owned block allocated");
    }
}

#[test]
fn direct_reclaim_takes_file_pages_back_when_memory_is_full() {
    let (node, owner) = node(32);
    // Fill with page cache, then ask for more than is free.
    fill(&node, &owner, LruKind::File);
    check(&node, &owner);
    let ev = |e| node.shared().event(e);
    let stalls = node.shared().counters().allocstall(pageblock_core::ZoneType::Normal);
    for _ in 0..2000 {
        fault(&node, &owner, None, 0, Gfp::KERNEL).expect("reclaim makes room");
    }
    assert!(node.shared().counters().allocstall(pageblock_core::ZoneType::Normal) > stalls);
    assert!(
        ev(VmEvent::PgstealDirect) >= 2000 - 256,
        "direct reclaim freed the pages: {}",
        ev(VmEvent::PgstealDirect)
    );
    assert_eq!(ev(VmEvent::Pswpout), 0, "no anonymous memory, no swap");
    let t = owner.0.borrow();
    assert!(t.evicted.iter().all(|&(_, k)| k == LruKind::File));
    drop(t);
    check(&node, &owner);
}

#[test]
fn kswapd_reclaims_to_the_high_watermark_and_swaps_anonymous_memory() {
    let (mut node, owner) = node(32);
    let mut now = 0;
    // Anonymous memory until the low watermark is crossed and kswapd is woken.
    fill(&node, &owner, LruKind::Anon);
    while !node.shared().daemons().kswapd_woken {
        fault(&node, &owner, Some(LruKind::Anon), 0, Gfp::HIGHUSER_MOVABLE).expect("above min");
    }
    assert!(node.shared().daemons().kswapd_woken, "crossing the low watermark wakes kswapd");
    // The simulator notices the wake-up at its next step and runs kswapd a delay later.
    node.advance_to(now + 1);
    now += 1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US;
    node.advance_to(now);
    common::finish_kswapd_run(&mut node, now);
    let zone = node.shared().zone(0);
    let (free, high) = (zone.nr_free_pages(), zone.wmark_pages(WatermarkLevel::High));
    assert!(
        free >= high,
        "kswapd balanced the zone: {free} free, high {high}, stolen {}",
        node.shared().event(VmEvent::PgstealKswapd)
    );
    let ev = |e| node.shared().event(e);
    assert!(ev(VmEvent::PgstealKswapd) > 0 && ev(VmEvent::Pswpout) == ev(VmEvent::PgstealAnon));
    assert!(ev(VmEvent::Pageoutrun) >= 1);
    assert!(!node.shared().daemons().kswapd_woken);
    check(&node, &owner);
}

/// Without a swap area (`swapon` never ran) reclaim neither scans nor ages anonymous
/// memory and does not count it as reclaimable: kswapd balances the node from the page
/// cache alone. The same node with swap scans and swaps anonymous pages too.
#[test]
fn without_swap_reclaim_leaves_anonymous_memory_alone() {
    for swap in [false, true] {
        let (mut node, owner) = node(32);
        if !swap {
            node.set_swap_device(pageblock_core::vmscan::SwapDevice::none());
        }
        // Seven eighths of the zone anonymous, the rest page cache (too little for
        // cache-trim mode, so with swap both kinds are scanned), then past the low watermark.
        let free = || node.shared().zone(0).nr_free_pages();
        let eighth = free() / 8;
        while free() > eighth {
            fault(&node, &owner, Some(LruKind::Anon), 0, Gfp::HIGHUSER_MOVABLE).unwrap();
        }
        fill(&node, &owner, LruKind::File);
        while !node.shared().daemons().kswapd_woken {
            fault(&node, &owner, Some(LruKind::File), 0, Gfp::HIGHUSER_MOVABLE).expect("above min");
        }
        node.advance_to(1);
        node.advance_to(2 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
        common::finish_kswapd_run(&mut node, 2 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
        let ev = |e| node.shared().event(e);
        let zone = node.shared().zone(0);
        let (free, high) = (zone.nr_free_pages(), zone.wmark_pages(WatermarkLevel::High));
        assert!(free >= high, "swap {swap}: kswapd balanced the zone: {free} free, high {high}");
        let anon_evicted = owner.0.borrow().evicted.iter().filter(|&&(_, k)| k == LruKind::Anon).count();
        if swap {
            assert!(ev(VmEvent::PgscanAnon) > 0 && ev(VmEvent::Pswpout) > 0 && anon_evicted > 0);
        } else {
            assert_eq!((ev(VmEvent::PgscanAnon), ev(VmEvent::Pswpout), anon_evicted), (0, 0, 0));
        }
        check(&node, &owner);
    }
}

#[test]
fn referenced_pages_get_a_second_chance() {
    let (node, owner) = node(32);
    let pfns = fill(&node, &owner, LruKind::File);
    // The oldest hundred pages are in use.
    for &p in &pfns[..100] {
        node.mark_page_accessed(Pfn(p));
    }
    for _ in 0..500 {
        fault(&node, &owner, None, 0, Gfp::KERNEL).expect("reclaim makes room");
    }
    let t = owner.0.borrow();
    assert!(pfns[..100].iter().all(|p| t.pages.contains_key(p)), "used pages were activated, not evicted");
    assert!(node.shared().event(VmEvent::PgActivate) >= 100);
}

#[test]
fn a_watermark_boost_is_paid_back_by_kswapd() {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(256 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Owner(Rc::default());
    node.set_unmap(Box::new(owner.clone()));
    // Movable memory everywhere with holes in every block; unmovable requests must then
    // steal from movable blocks.
    let pfns = fill(&node, &owner, LruKind::File);
    for p in pfns.into_iter().filter(|p| p % 2 == 1) {
        owner.0.borrow_mut().pages.remove(&p);
        node.free_pages(0, Pfn(p), 0).unwrap();
    }
    node.drain_all_pages();
    let mut boosted = false;
    for _ in 0..4096 {
        if fault(&node, &owner, None, 0, Gfp::KERNEL).is_none() {
            break;
        }
        if node.shared().zone(0).counters().watermark_boost() > 0 {
            boosted = true;
            break;
        }
    }
    let e = |ev| node.shared().event(ev);
    assert!(
        boosted,
        "a fragmenting fallback boosted the watermarks: {:?}",
        [
            e(VmEvent::WatermarkBoost),
            e(VmEvent::Extfrag),
            e(VmEvent::ClaimPartialBlock),
            e(VmEvent::ClaimWholeBlock),
            e(VmEvent::Steal),
            e(VmEvent::PgAllocFail),
            node.shared().zone(0).nr_free_pages()
        ]
    );
    // The next allocation notices the boost and wakes kswapd.
    fault(&node, &owner, None, 0, Gfp::KERNEL);
    assert!(node.shared().daemons().kswapd_woken);
    node.advance_to(1);
    node.advance_to(1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
    common::finish_kswapd_run(&mut node, 1 + pageblock_core::vmscan::KSWAPD_WAKE_DELAY_US);
    assert_eq!(node.shared().zone(0).counters().watermark_boost(), 0, "boost paid back");
    assert!(node.shared().event(VmEvent::PgstealKswapd) > 0);
    node.verify().unwrap();
}

mod random {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Fault { kind: u8, order: u32 },
        Kernel { order: u32, atomic: bool },
        Free { nth: usize },
        Touch { nth: usize },
        Thp,
        CompactMemory,
        FreeHalf,
        Tick { us: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            10 => (0..3u8, 0..4u32).prop_map(|(kind, order)| Op::Fault { kind, order }),
            3 => (0..4u32, any::<bool>()).prop_map(|(order, atomic)| Op::Kernel { order, atomic }),
            9 => any::<usize>().prop_map(|nth| Op::Free { nth }),
            1 => Just(Op::CompactMemory),
            1 => Just(Op::FreeHalf),
            2 => any::<usize>().prop_map(|nth| Op::Touch { nth }),
            1 => Just(Op::Thp),
            2 => (1..5000u64).prop_map(|us| Op::Tick { us }),
        ]
    }

    fn policy(which: u8) -> Policy {
        let base = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 512).unwrap();
        match which {
            0 => base,
            1 => base.with_sysctl(Sysctl::DefragMode, 1).unwrap(),
            2 => Policy { defrag_mode_fixes: Switches::all(), ..policy(1) },
            _ => Policy { pageblock_switches: Switches::all(), ..policy(2) },
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Reclaim, kswapd, kcompactd and direct compaction interleaved with everything else,
        /// under each policy: `verify()` and the owner's table after every operation.
        #[test]
        fn reclaim_and_compaction_keep_every_page_accounted(
            which in 0..4u8,
            ops in proptest::collection::vec(op(), 1..3000),
        ) {
            let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(32 << 20) };
            let mut node = Node::new(NodeConfig::single(zone), policy(which)).unwrap();
            let owner = Owner(Rc::default());
            node.set_unmap(Box::new(owner.clone()));
            node.set_mover(Box::new(owner.clone()));
            let mut now = 0;
            for op in ops {
                match op {
                    Op::Fault { kind, order } => {
                        let kind = [LruKind::Anon, LruKind::File, LruKind::Slab][kind as usize];
                        let gfp = if kind == LruKind::Slab { Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0) } else { Gfp::HIGHUSER_MOVABLE };
                        fault(&node, &owner, Some(kind), order, gfp);
                    }
                    Op::Kernel { order, atomic } => {
                        fault(&node, &owner, None, order, if atomic { Gfp::ATOMIC } else { Gfp::KERNEL });
                    }
                    Op::Free { nth } | Op::Touch { nth } if !owner.0.borrow().pages.is_empty() => {
                        let (pfn, (order, _)) = {
                            let t = owner.0.borrow();
                            let (&p, &v) = t.pages.iter().nth(nth % t.pages.len()).unwrap();
                            (p, v)
                        };
                        if matches!(op, Op::Free { .. }) {
                            owner.0.borrow_mut().pages.remove(&pfn);
                            node.free_pages(1, Pfn(pfn), order).expect("owned block frees");
                        } else {
                            node.mark_page_accessed(Pfn(pfn));
                        }
                    }
                    Op::Free { .. } | Op::Touch { .. } => {}
                    Op::Thp => {
                        if let Ok(f) = node.thp_fault(0, pageblock_core::thp::ThpDefrag::Always, true) {
                            owner.0.borrow_mut().pages.insert(f.pfn.0, (f.order, Some(LruKind::Anon)));
                            node.lru_add(f.pfn, f.order, LruKind::Anon);
                        }
                    }
                    Op::FreeHalf => {
                        let half: Vec<(u64, u32)> =
                            owner.0.borrow().pages.iter().step_by(2).map(|(&p, &(o, _))| (p, o)).collect();
                        for (pfn, order) in half {
                            owner.0.borrow_mut().pages.remove(&pfn);
                            node.free_pages(0, Pfn(pfn), order).expect("owned block frees");
                        }
                    }
                    Op::CompactMemory => {
                        node.compact_memory(0);
                    }
                    Op::Tick { us } => {
                        now += us;
                        node.advance_to(now);
                    }
                }
                check(&node, &owner);
            }
        }
    }
}
