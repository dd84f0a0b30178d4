//! Direct reclaim (`try_to_free_pages` → `do_try_to_free_pages` → `shrink_zones`): the
//! allocating task reclaims [`SWAP_CLUSTER_MAX`] pages itself, at rising priority, unless
//! compaction is ready to make the costly block it wants.

use super::{count_reclaim, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::compaction::suitable::compaction_suitable;
use crate::locks::NodeLocks;
use crate::node::AllocContext;
use crate::policy::Policy;
use crate::types::PAGE_ALLOC_COSTLY_ORDER;
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};
use crate::zone::ZoneShared;

/// `compaction_ready()`: the request's block could be made by compaction right away —
/// reclaim would only add order-0 pages it does not need. Since "mm: compaction: push
/// watermark into compaction_suitable() callers" (the first patch of the series seed 004
/// measured, so both kernel periods) compaction must be suitable above the *high* watermark:
/// direct reclaim targets min, but compaction takes time and others use the freed pages.
fn compaction_ready(zone: &ZoneShared, ac: &AllocContext, policy: &Policy) -> bool {
    let req = WatermarkRequest {
        order: ac.order,
        flags: crate::AllocFlags::WMARK_MIN,
        highest_zoneidx: ac.highest_zoneidx,
    };
    zone.zone_watermark_ok(req, zone.wmark_pages(WatermarkLevel::Min))
        || compaction_suitable(
            zone,
            ac.order,
            zone.wmark_pages(WatermarkLevel::High),
            ac.highest_zoneidx,
            policy,
        )
}

/// `try_to_free_pages()`: direct reclaim for `ac` on CPU `cpu`. Returns the pages
/// reclaimed, or 1 if it stopped because compaction is ready (progress, as the kernel
/// reports it). Nothing if the caller is itself reclaiming ([`NodeLocks::in_reclaim`]).
pub fn try_to_free_pages<L: NodeLocks + ?Sized>(l: &L, cpu: usize, ac: &AllocContext) -> u64 {
    if l.in_reclaim() {
        return 0;
    }
    let node = l.node();
    let zonelist = node.zonelist(ac);
    let Some(&top) = zonelist.first() else {
        return 0;
    };
    let mut sc = ScanControl {
        compaction_allowed: ac.gfp.contains(crate::Gfp::IO),
        ..ScanControl::new(SWAP_CLUSTER_MAX, ac.order, top as usize, false)
    };
    let mut ready = false;
    loop {
        if ac.order > PAGE_ALLOC_COSTLY_ORDER
            && l.mover().is_some()
            && zonelist.iter().any(|&z| compaction_ready(node.zone(z as usize), ac, node.policy()))
        {
            ready = true;
            break;
        }
        super::reclaim_compaction::shrink_node(l, cpu, &mut sc);
        super::throttle::consider_reclaim_throttle(l, &mut sc);
        if sc.nr_reclaimed >= sc.nr_to_reclaim {
            break;
        }
        if sc.priority == 0 {
            // Nothing taken because the active lists were left alone: retry aging them.
            if sc.nr_reclaimed > 0 || !sc.skipped_deactivate || sc.force_deactivate {
                break;
            }
            sc.force_deactivate = true;
            sc.skipped_deactivate = false;
            sc.priority = DEF_PRIORITY;
            continue;
        }
        sc.priority -= 1;
    }
    count_reclaim(node, &sc);
    l.snapshot_refaults();
    if sc.nr_reclaimed > 0 {
        node.daemons().kswapd_failures = 0;
        return sc.nr_reclaimed;
    }
    u64::from(ready)
}
