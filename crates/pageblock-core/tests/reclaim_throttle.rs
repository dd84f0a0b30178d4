//! A direct reclaimer that gets nowhere sleeps a jiffy before its last pass
//! (`consider_reclaim_throttle`, `VMSCAN_THROTTLE_NOPROGRESS`): on a node whose anonymous
//! memory is all being written to swap, the writes that end during the sleep are what the
//! last pass reclaims. Without the sleep the reclaimer fails and the request heads for OOM.

mod common;

use common::Owner;
use pageblock_core::vmscan::{try_to_free_pages, LruKind, SwapDevice, SwapLatency, NOPROGRESS_THROTTLE_US};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Policy, Sysctl, VmEvent, ZoneConfig};

/// A disk whose first write ends 3 ms after it is queued: after a 4 MiB node's whole scan
/// (about 2,000 pages at 0.6 µs each, 1.2 ms) and before the end of a jiffy's sleep.
const DISK: SwapLatency = SwapLatency { per_page_us: 0, per_request_us: 3_000 };

/// A 4 MiB node swapping to [`DISK`], its anonymous memory filled to the min watermark.
fn anon_at_min() -> Node {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(4 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 128).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = Owner::default();
    node.set_unmap(Box::new(owner.clone()));
    node.set_swap_device(SwapDevice::block(DISK));
    let z = node.shared().zone(0);
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Min) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above min");
        owner.0.borrow_mut().insert(pfn.0, 0);
        assert!(node.lru_add(pfn, 0, LruKind::Anon));
    }
    node
}

fn direct_reclaim(node: &Node) -> u64 {
    let ac = node.shared().prepare_alloc_pages(Gfp::HIGHUSER_MOVABLE, 0).unwrap();
    try_to_free_pages(node, 0, &ac)
}

#[test]
fn a_reclaimer_getting_nowhere_sleeps_a_jiffy_and_reclaims_what_was_written_meanwhile() {
    assert_eq!(NOPROGRESS_THROTTLE_US, 4_000, "one jiffy at HZ=250");
    let node = anon_at_min();
    let reclaimed = direct_reclaim(&node);
    let written = node.shared().event(VmEvent::Pswpout);
    assert!(written > 0, "the reclaimer swapped");
    assert!(reclaimed > 0, "the writes that ended during the sleep were reclaimed ({written} written)");
    assert_eq!(node.shared().event(VmEvent::PgstealDirect), reclaimed);
}

#[test]
fn no_sleep_once_kswapd_has_given_up_on_the_node() {
    let node = anon_at_min();
    node.shared().daemons().kswapd_failures = pageblock_core::vmscan::MAX_RECLAIM_RETRIES;
    assert_eq!(direct_reclaim(&node), 0, "near OOM: no sleep, and nothing was written in time");
    assert!(node.shared().event(VmEvent::Pswpout) > 0);
}
