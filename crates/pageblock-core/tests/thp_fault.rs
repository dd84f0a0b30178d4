//! A huge page fault asks for its block as `alloc_pages_mpol` does under CONFIG_NUMA (audit
//! rows T2 and P1): first this node only without reclaim (`__GFP_THISNODE|__GFP_NORETRY`:
//! one async compaction, then nopage), then, if the mask may reclaim directly, the full slow
//! path.

use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::thp::ThpDefrag;
use pageblock_core::{Gfp, Node, NodeConfig, Pfn, Policy, VmEvent, ZoneConfig, ZoneStat};

mod common;

/// Compaction that never manages to move a page: every run fails without being skipped.
struct Refusing;

impl Mover for Refusing {
    fn migrate(&self, _from: Pfn, _to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        Err(MigrateFail::Busy)
    }
}

/// 64 MiB of movable pages with every other one freed: plenty free, no whole free
/// pageblock, and compaction (which cannot move anything) fails wherever it runs.
fn fragmented() -> Node {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
    let mut node = Node::new(NodeConfig::single(zone), Policy::default()).unwrap();
    node.set_mover(Box::new(Refusing));
    let nowait_movable = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
    for pfn in common::fill(&node, nowait_movable).into_iter().filter(|p| p.0 % 2 == 1) {
        node.free_pages(0, pfn, 0).unwrap();
    }
    node.drain_all_pages();
    let light = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::RECLAIM.0);
    while node.shared().zone(0).counters().zone_stat(ZoneStat::NrFreePagesBlocks) > 0 {
        node.alloc_pages(0, 9, light).expect("a whole free pageblock");
    }
    assert!(node.shared().zone(0).nr_free_pages() > 6000);
    node
}

fn stalls(node: &Node) -> u64 {
    node.shared().event(VmEvent::CompactStall)
}

/// A madvised fault under defrag=madvise (`GFP_TRANSHUGE`) that compaction cannot serve:
/// the compact-only first attempt stalls once (async), the full attempt twice more (async
/// first, then sync-light after reclaim). One `alloc_pages` stalled only twice.
#[test]
fn a_failing_madvised_fault_compacts_first_without_reclaim_then_fully() {
    let node = fragmented();
    let fault = node.thp_fault(0, ThpDefrag::Madvise, true).unwrap();
    assert_eq!(fault.order, 0, "a fallback");
    assert_eq!(node.shared().event(VmEvent::ThpFaultFallback), 1);
    assert_eq!(stalls(&node), 3, "async (THISNODE|NORETRY), async, sync-light");
    assert_eq!(node.shared().event(VmEvent::CompactFail), 3);
    let allocstall: u64 =
        pageblock_core::ZoneType::ALL.iter().map(|&t| node.shared().counters().allocstall(t)).sum();
    assert_eq!(allocstall, 1, "only the second attempt reclaims");
    node.verify().unwrap();
}

/// defrag=always outside madvised regions (`GFP_TRANSHUGE|__GFP_NORETRY`): the first
/// attempt's async compaction, then the full attempt's async compaction before and after
/// its one reclaim pass.
#[test]
fn a_failing_noretry_fault_stalls_once_more_for_its_local_attempt() {
    let node = fragmented();
    assert_eq!(node.thp_fault(0, ThpDefrag::Always, false).unwrap().order, 0);
    assert_eq!(stalls(&node), 3);
}

/// `GFP_TRANSHUGE_LIGHT` (defrag=madvise outside madvised regions) may not reclaim: there is
/// no second attempt, and no compaction at all.
#[test]
fn a_light_fault_makes_one_attempt_and_never_compacts() {
    let node = fragmented();
    assert_eq!(node.thp_fault(0, ThpDefrag::Madvise, false).unwrap().order, 0);
    assert_eq!(stalls(&node), 0);
    assert_eq!(node.shared().event(VmEvent::ThpFaultFallback), 1);
}

/// `defrag=defer+madvise` outside madvised regions (`GFP_TRANSHUGE_LIGHT|__GFP_KSWAPD_RECLAIM`):
/// a fault that falls back wakes the daemons (kswapd, or kcompactd where the node is
/// balanced) and stalls nowhere; under `defrag=madvise` (`GFP_TRANSHUGE_LIGHT`) it wakes
/// nothing.
#[test]
fn a_defer_madvise_fault_that_falls_back_wakes_the_daemons_a_madvise_one_does_not() {
    for (defrag, wakes) in [(ThpDefrag::Madvise, false), (ThpDefrag::DeferMadvise, true)] {
        let node = fragmented();
        {
            let mut d = node.shared().daemons();
            d.kswapd_woken = false;
            d.kcompactd_woken = false;
        }
        assert_eq!(node.thp_fault(0, defrag, false).unwrap().order, 0, "{defrag:?}: a fallback");
        let d = node.shared().daemons();
        assert_eq!(d.kswapd_woken || d.kcompactd_woken, wakes, "{defrag:?}");
        drop(d);
        assert_eq!(stalls(&node), 0, "{defrag:?}");
    }
}

/// P1: a costly `__GFP_NORETRY|__GFP_THISNODE` request that compaction did not serve goes to
/// nopage after its async compaction, without reclaiming.
#[test]
fn a_costly_thisnode_noretry_request_gives_up_after_async_compaction() {
    let node = fragmented();
    let gfp = Gfp::TRANSHUGE | Gfp::THISNODE | Gfp::NORETRY;
    assert!(node.alloc_pages(0, 9, gfp).is_err());
    assert_eq!(stalls(&node), 1);
    let allocstall: u64 =
        pageblock_core::ZoneType::ALL.iter().map(|&t| node.shared().counters().allocstall(t)).sum();
    assert_eq!(allocstall, 0, "no direct reclaim");
}
