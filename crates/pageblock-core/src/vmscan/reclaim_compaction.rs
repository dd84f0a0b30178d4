//! Reclaim for compaction (`in_reclaim_compaction`, `should_continue_reclaim`): a reclaimer
//! working for a costly order (or struggling, below priority `DEF_PRIORITY - 2`) does not
//! stop after its batch. It runs `shrink_node` again at the same priority until compaction
//! has room to work (`compaction_suitable` at the min watermark) or the allocation would
//! succeed — about `compact_gap(order)` pages — as long as each pass reclaims something and
//! the inactive lists still hold more than that gap.

use super::{ScanControl, DEF_PRIORITY};
use crate::compaction::{compact_gap, suitable::compaction_suitable};
use crate::locks::NodeLocks;
use crate::types::PAGE_ALLOC_COSTLY_ORDER;
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};

/// `in_reclaim_compaction()`: reclaim works for compaction — the request may compact
/// (`__GFP_IO`), wants a block above order 0, and either a costly one or reclaim is
/// struggling.
fn in_reclaim_compaction(sc: &ScanControl) -> bool {
    sc.compaction_allowed
        && sc.order > 0
        && (sc.order > PAGE_ALLOC_COSTLY_ORDER || sc.priority < DEF_PRIORITY - 2)
}

/// `should_continue_reclaim()`: after a `shrink_node` pass that reclaimed `nr_reclaimed`
/// pages, go again? Not if the pass reclaimed nothing, nor once some zone in reach could
/// satisfy the order at min or compact for it; otherwise while the inactive lists (anon
/// too: swap is always there) hold more than a compaction gap.
fn should_continue_reclaim<L: NodeLocks + ?Sized>(l: &L, nr_reclaimed: u64, sc: &ScanControl) -> bool {
    if !in_reclaim_compaction(sc) || nr_reclaimed == 0 {
        return false;
    }
    let node = l.node();
    let zones = node.zones().iter().take(sc.reclaim_idx + 1).filter(|z| z.managed_pages() > 0);
    let idx = node.zone(sc.reclaim_idx.min(node.zones().len() - 1)).config().zone_type;
    for zone in zones {
        let min = zone.wmark_pages(WatermarkLevel::Min);
        let req =
            WatermarkRequest { order: sc.order, flags: crate::AllocFlags::WMARK_MIN, highest_zoneidx: idx };
        if zone.zone_watermark_ok(req, min) || compaction_suitable(zone, sc.order, min, idx, node.policy()) {
            return false;
        }
    }
    let [anon, file] = l.inactive_lru_pages();
    anon + file > compact_gap(sc.order)
}

/// `shrink_node()` as the reclaimers call it: one pass ([`NodeLocks::shrink_node`]), again
/// while [`should_continue_reclaim`] says so. After each pass, kswapd flags the node
/// `PGDAT_WRITEBACK` if everything it took was under writeback, and sleeps in
/// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` if it met pages marked for immediate
/// reclaim still being written ([`NodeLocks::reclaim_throttle_writeback`]).
pub(crate) fn shrink_node<L: NodeLocks + ?Sized>(l: &L, cpu: usize, sc: &mut ScanControl) {
    loop {
        let before = sc.nr_reclaimed;
        l.shrink_node(cpu, sc);
        if sc.kswapd {
            if sc.nr.writeback > 0 && sc.nr.writeback == sc.nr.taken {
                l.node().daemons().pgdat_writeback = true;
            }
            if sc.nr.immediate > 0 {
                sc.throttled_us += l.reclaim_throttle_writeback(sc);
            }
        }
        if !should_continue_reclaim(l, sc.nr_reclaimed - before, sc) {
            return;
        }
    }
}
