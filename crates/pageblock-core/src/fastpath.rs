//! The allocation fast path, written once for every driver ([`crate::NodeLocks`]):
//! `get_page_from_freelist` → `rmqueue` (per-CPU lists for the orders they cache, the buddy
//! lists otherwise), waking kswapd where a zone runs low or a fallback boosted its marks.
//! The entry is [`crate::page_alloc::alloc_pages`]; the slow path is [`crate::slowpath`], the
//! free path [`crate::free_pages`].
//!
//! Fast path cost, per request served from a CPU's lists: a GFP decode, one watermark test
//! (lock-free, counters only), one per-CPU trylock and a list pop. The zone lock is taken
//! only to refill a batch, or for orders the per-CPU lists do not cache.

use crate::gfp::{AllocFlags, Gfp};
use crate::locks::{lock_zone, NodeLocks};
use crate::node::AllocContext;
use crate::policy::PageblockSwitch;
use crate::stats::{VmEvent, ZoneStat};
use crate::types::Pfn;
use crate::vmscan::kswapd::wakeup_kswapd;
use crate::zone::watermark::WatermarkLevel;
use crate::zone::ZoneShared;

/// `get_page_from_freelist()`: walk the zonelist from the preferred zone down; the first zone
/// whose watermark allows the request serves it. A request that found nothing with
/// ALLOC_NOFRAGMENT walks again without it (fragmenting is preferred over failing), except
/// under `defrag_mode`, which keeps the flag until the slow path's end.
#[inline(always)]
pub(crate) fn get_page_from_freelist<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    mut flags: AllocFlags,
) -> Option<Pfn> {
    let node = l.node();
    loop {
        let req = ac.watermark_request(flags);
        for &z in node.zonelist(ac) {
            let z = z as usize;
            if !node.zone(z).watermark_allows(&req) {
                node.count(VmEvent::WatermarkFail, 1);
                continue;
            }
            if let Some(pfn) = rmqueue(l, cpu, z, ac, flags) {
                if flags.contains(AllocFlags::HIGHATOMIC) {
                    reserve_highatomic_pageblock(l, cpu, z, pfn, ac.order);
                }
                return Some(pfn);
            }
        }
        if flags.contains(AllocFlags::NOFRAGMENT) && !node.policy().sysctls.defrag_mode() {
            flags = flags & !AllocFlags::NOFRAGMENT;
            node.count(VmEvent::NoFragmentRelaxed, 1);
            continue;
        }
        return None;
    }
}

/// A high-order atomic request that dug into the reserves may reserve its pageblock.
#[cold]
fn reserve_highatomic_pageblock<L: NodeLocks + ?Sized>(l: &L, cpu: usize, z: usize, pfn: Pfn, order: u32) {
    lock_zone(l, z, cpu).reserve_highatomic_pageblock(pfn.0, order);
}

/// `rmqueue()`: the per-CPU lists for the orders they cache (refilled in one zone-lock hold
/// when empty), else — or if they had nothing — the buddy lists. Either way a pending
/// watermark boost wakes kswapd.
#[inline(always)]
fn rmqueue<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    z: usize,
    ac: &AllocContext,
    flags: AllocFlags,
) -> Option<Pfn> {
    let zone = l.node().zone(z);
    let mut page = None;
    if zone.pcp_allowed_order(ac.order) {
        page = rmqueue_pcplist(l, cpu, z, zone, ac, flags);
    }
    if page.is_none() {
        page = rmqueue_buddy(l, cpu, z, ac, flags);
    }
    if flags.contains(AllocFlags::KSWAPD) && zone.flags().boosted_watermark() {
        wakeup_kswapd_boosted(l, z);
    }
    if flags.contains(AllocFlags::KSWAPD)
        && l.node().policy().pageblock_switch(PageblockSwitch::KswapdWakeForBlocks)
    {
        wakeup_kswapd_for_blocks(l, z, ac);
    }
    page
}

/// [`PageblockSwitch::KswapdWakeForBlocks`]: under `defrag_mode`, a zone whose whole free pageblocks
/// fell below its low watermark wakes kswapd for a pageblock.
fn wakeup_kswapd_for_blocks<L: NodeLocks + ?Sized>(l: &L, z: usize, ac: &AllocContext) {
    let zone = l.node().zone(z);
    let free_blocks = zone.counters().zone_stat(ZoneStat::NrFreePagesBlocks);
    if free_blocks < zone.wmark_pages(WatermarkLevel::Low) {
        wakeup_kswapd(l, ac.gfp, zone.config().pageblock_order, ac.highest_zoneidx);
    }
}

/// `rmqueue_buddy()`: take the zone's lock and allocate from its lists ([`crate::Zone::rmqueue_buddy`]).
#[cold]
fn rmqueue_buddy<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    z: usize,
    ac: &AllocContext,
    flags: AllocFlags,
) -> Option<Pfn> {
    lock_zone(l, z, cpu).rmqueue_buddy(ac.order, ac.migratetype, flags)
}

/// A fallback boosted the watermarks: clear the flag and let kswapd reclaim the boost.
#[cold]
fn wakeup_kswapd_boosted<L: NodeLocks + ?Sized>(l: &L, z: usize) {
    let zone = l.node().zone(z);
    zone.flags().set_boosted_watermark(false);
    wakeup_kswapd(l, Gfp::NONE, 0, zone.config().zone_type);
}

/// `rmqueue_pcplist()`: trylock the CPU's lists and take a block from them
/// ([`crate::pcp::PerCpuPages::__rmqueue_pcplist`]); `None` if the lock is contended or the refill
/// found nothing.
#[inline(always)]
fn rmqueue_pcplist<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    z: usize,
    zone: &ZoneShared,
    ac: &AllocContext,
    flags: AllocFlags,
) -> Option<Pfn> {
    let mut pcp = l.trylock_pcp(cpu, z)?;
    pcp.__rmqueue_pcplist(zone, ac.order, ac.migratetype, |n, out| {
        lock_zone(l, z, cpu).rmqueue_bulk(ac.order, n, ac.migratetype, flags, out);
    })
}
