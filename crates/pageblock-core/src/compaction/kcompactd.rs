//! kcompactd (`wakeup_kcompactd`, `kcompactd_node_suitable`, `kcompactd_do_work`) and
//! proactive compaction (`should_proactive_compact_node`, `fragmentation_score_node`).
//!
//! kswapd hands kcompactd the order it reclaimed for; kcompactd compacts each zone that
//! compaction can help, at `MIGRATE_SYNC_LIGHT`, until a block of that order exists — under
//! `defrag_mode` until whole free pageblocks reach the high watermark. Every 500 ms it also
//! compacts proactively while the node's fragmentation score is above its threshold.

use super::compact_zone::{compact_zone, CompactControl};
use super::suitable::{compaction_suit_allocation_order, fragmentation_score_zone, SuitQuery};
use super::{CompactResult, MigrateMode};
use crate::config::ZoneType;
use crate::gfp::AllocFlags;
use crate::locks::NodeLocks;
use crate::node::NodeShared;
use crate::page_alloc::{drain_all_pages, lock_zone};
use crate::stats::VmEvent;
use crate::vmscan::Daemons;

/// `HPAGE_FRAG_CHECK_INTERVAL_MSEC`: proactive compaction's period, in microseconds.
pub const PROACTIVE_INTERVAL_US: u64 = 500_000;

/// kcompactd's watermark: high under `defrag_mode`, min otherwise.
fn kcompactd_flags(node: &NodeShared) -> AllocFlags {
    if node.policy().defrag_mode {
        AllocFlags::WMARK_HIGH
    } else {
        AllocFlags::WMARK_MIN
    }
}

fn query(node: &NodeShared, order: u32, idx: ZoneType) -> SuitQuery<'_> {
    SuitQuery {
        order,
        highest_zoneidx: idx,
        alloc_flags: kcompactd_flags(node),
        asynchronous: false,
        kcompactd: true,
        policy: node.policy(),
    }
}

/// `wakeup_kcompactd()`: ask for a block of `order` in zones up to `idx`; wake kcompactd if
/// compaction could help some zone.
pub fn wakeup_kcompactd(node: &NodeShared, d: &mut Daemons, order: u32, idx: ZoneType) {
    if order == 0 {
        return;
    }
    d.kcompactd_max_order = d.kcompactd_max_order.max(order);
    let idx = d.kcompactd_highest_zoneidx.map_or(idx, |cur| cur.min(idx));
    d.kcompactd_highest_zoneidx = Some(idx);
    if d.kcompactd_woken {
        return;
    }
    let q = query(node, d.kcompactd_max_order, idx);
    let suitable = node
        .zones()
        .iter()
        .filter(|z| z.config().zone_type <= idx && z.managed_pages() > 0)
        .any(|z| compaction_suit_allocation_order(z, q) == CompactResult::Continue);
    if suitable {
        d.kcompactd_woken = true;
    }
}

/// `kcompactd_do_work()`: one woken run of kcompactd on CPU `cpu` (nothing if it was not
/// woken or no mover is installed).
pub fn kcompactd_run<L: NodeLocks + ?Sized>(l: &L, cpu: usize) {
    let node = l.node();
    let (order, idx) = {
        let mut d = node.daemons();
        if !d.kcompactd_woken {
            return;
        }
        d.kcompactd_woken = false;
        let top = node.zones().last().map_or(ZoneType::Normal, |z| z.config().zone_type);
        (d.kcompactd_max_order, d.kcompactd_highest_zoneidx.unwrap_or(top))
    };
    let Some(mover) = l.mover() else {
        return;
    };
    node.count(VmEvent::CompactDaemonWake, 1);
    for z in 0..node.zones().len() {
        let zone = node.zone(z);
        if zone.config().zone_type > idx || zone.managed_pages() == 0 {
            continue;
        }
        if lock_zone(l, z, cpu).compact.compaction_deferred(order) {
            continue;
        }
        if compaction_suit_allocation_order(zone, query(node, order, idx)) != CompactResult::Continue {
            continue;
        }
        let mut cc = CompactControl::new(z, cpu, Some(order), MigrateMode::SyncLight);
        cc.alloc_flags = kcompactd_flags(node);
        cc.highest_zoneidx = idx;
        let status = compact_zone(l, mover, &mut cc);
        match status {
            CompactResult::Success => lock_zone(l, z, cpu).compact.compaction_defer_reset(order, false),
            CompactResult::Complete | CompactResult::PartialSkipped => {
                drain_all_pages(l);
                lock_zone(l, z, cpu).compact.defer_compaction(order);
            }
            _ => {}
        }
        node.count(VmEvent::CompactDaemonMigrateScanned, cc.total_migrate_scanned);
        node.count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
    }
    let mut d = node.daemons();
    if d.kcompactd_max_order <= order {
        d.kcompactd_max_order = 0;
    }
    if d.kcompactd_highest_zoneidx.is_some_and(|cur| cur >= idx) {
        d.kcompactd_highest_zoneidx = None;
    }
}

/// `fragmentation_score_node()`: the zones' scores weighted by their size, 0..=100.
pub fn fragmentation_score_node(node: &NodeShared) -> u64 {
    let present: u64 = node.zones().iter().map(|z| z.managed_pages()).sum();
    node.zones().iter().map(|z| z.managed_pages() * fragmentation_score_zone(z) / (present + 1)).sum()
}

/// `should_proactive_compact_node()` and the proactive run: if the node's score is above
/// `min(low + 10, 100)` with `low = max(100 - proactiveness, 5)`, compact every zone until its
/// score is at or below `low`. Returns whether it ran.
pub fn proactive_compact<L: NodeLocks + ?Sized>(l: &L, cpu: usize) -> bool {
    let node = l.node();
    let proactiveness = u64::from(node.policy().compaction_proactiveness);
    if proactiveness == 0 || node.daemons().kswapd_woken || l.mover().is_none() {
        return false;
    }
    let low = super::compact_zone::score_wmark_low(node);
    if fragmentation_score_node(node) <= (low + 10).min(100) {
        return false;
    }
    super::compact_node(l, cpu, true);
    true
}
