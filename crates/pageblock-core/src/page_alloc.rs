//! The allocation path, written once for every driver ([`crate::NodeLocks`]): `__alloc_pages`
//! → `get_page_from_freelist` → `rmqueue` (per-CPU lists for the orders they cache, the buddy
//! lists otherwise), the free path `__free_pages` → `free_frozen_pages`, `drain_all_pages`,
//! and the vmstat worker's per-CPU work.
//!
//! Fast path cost, per request served from a CPU's lists: a GFP decode, one watermark test
//! (lock-free, counters only), one per-CPU trylock and a list pop. The zone lock is taken
//! only to refill or drain a batch, or for orders the per-CPU lists do not cache. The slow
//! path is [`crate::slowpath`].
//!
//! Events (`mm_page_alloc`, `mm_page_free`) are emitted here with the requesting CPU; the
//! zone emits the ones it makes under its lock.

use crate::alloc::AllocError;
use crate::config::ZoneType;
use crate::free::{FreeBatchError, FreeError, Owner};
use crate::gfp::{AllocFlags, Gfp};
use crate::locks::{lock_zone, NodeLocks};
use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::policy::PageblockSwitch;
use crate::stats::{VmEvent, ZoneStat};
use crate::trace::TraceEvent;
use crate::types::Pfn;
use crate::vmscan::kswapd::wakeup_kswapd;
use crate::watermark::{WatermarkLevel, WatermarkRequest};
use crate::zone::ZoneShared;

/// What a request is (`struct alloc_context` plus its mask and order): set once by
/// `prepare_alloc_pages` and read by every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocContext {
    /// The request's GFP mask.
    pub gfp: Gfp,
    /// The request's order.
    pub order: u32,
    /// `gfp_migratetype()`.
    pub migratetype: MigrateType,
    /// `gfp_zone()`: the highest zone type the request may use.
    pub highest_zoneidx: ZoneType,
    pub(crate) zonelist_start: u8,
    pub(crate) zonelist_len: u8,
}

impl AllocContext {
    /// The watermark question this request asks of a zone with `flags`.
    #[inline]
    pub fn watermark_request(&self, flags: AllocFlags) -> WatermarkRequest {
        WatermarkRequest { order: self.order, flags, highest_zoneidx: self.highest_zoneidx }
    }
}

/// `__alloc_pages()`: a block of 2^`order` pages for a request with mask `gfp`, made on CPU
/// `cpu`.
#[inline(always)]
pub fn alloc_pages<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    order: u32,
    gfp: Gfp,
) -> Result<Pfn, AllocError> {
    let node = l.node();
    if order > node.max_order() {
        return Err(AllocError::OrderTooLarge { order, max_order: node.max_order() });
    }
    let ac = node.prepare_alloc_pages(gfp, order)?;
    let fast = node.alloc_flags_fast(&ac);
    let page = match get_page_from_freelist(l, cpu, &ac, fast) {
        Some(pfn) => Some(pfn),
        None => crate::slowpath::alloc_pages_slowpath(l, cpu, &ac),
    };
    node.trace().emit(cpu as u32, || TraceEvent::PageAlloc {
        pfn: page.map(|p| p.0),
        order,
        migratetype: ac.migratetype,
        gfp,
    });
    page.ok_or_else(|| alloc_failed(node, order))
}

#[cold]
fn alloc_failed(node: &crate::node::NodeShared, order: u32) -> AllocError {
    node.count(VmEvent::PgAllocFail, 1);
    AllocError::NoMemory { order }
}

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

/// `__free_pages()` → `free_frozen_pages()`: validate the free (nothing changes if it is
/// refused), then cache the block on CPU `cpu`'s lists for the orders they cache — freeing a
/// batch to the zone when the CPU holds too much — or return it to the zone directly (other
/// orders, isolated pageblocks, a contended per-CPU lock). A block a movable handle owns is
/// refused ([`FreeError::HandleOwned`]): only [`free_pages_as`] by its handle frees it.
#[inline(always)]
pub fn free_pages<L: NodeLocks + ?Sized>(l: &L, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
    free_pages_as(l, cpu, pfn, order, Owner::Caller)
}

/// [`free_pages`] by `owner`: the block must be one `owner` frees.
#[inline(always)]
pub fn free_pages_as<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    pfn: Pfn,
    order: u32,
    owner: Owner,
) -> Result<(), FreeError> {
    let node = l.node();
    let Some(z) = node.zone_of(pfn.0) else {
        return Err(FreeError::OutOfRange { pfn });
    };
    let zone = node.zone(z);
    let word = zone.allocated_word(pfn, order, owner)?;
    // free_frozen_pages(): HighAtomic and CMA blocks are cached on the Movable list;
    // isolated pageblocks never take cached pages.
    let mt = zone.pageblock_migratetype(pfn.0);
    if zone.pcp_allowed_order(order) && mt != MigrateType::Isolate {
        if let Some(mut pcp) = l.trylock_pcp(cpu, z) {
            // Claim the block from its owner: of two racing frees, one wins.
            let cached = PageInfo { state: PageState::Pcp, order, ..PageInfo::TAIL };
            let idx = (pfn.0 - zone.config().start_pfn) as u32;
            if zone.memmap().compare_exchange_word(idx, word, cached).is_err() {
                return Err(FreeError::DoubleFree { pfn });
            }
            node.trace().emit(cpu as u32, || TraceEvent::PageFree { pfn: pfn.0, order });
            pcp.free(zone, pfn, order, mt, |blocks| lock_zone(l, z, cpu).free_pcppages_bulk(blocks));
            return Ok(());
        }
    }
    free_one_page(l, cpu, z, pfn, order, owner)
}

/// How many frees ahead [`free_pages_batch`] prefetches a block's state word. Of 4, 8 and 16,
/// measured on 900k random-order frees over 4 GiB, 8 and 16 were best, about 1% apart.
const BATCH_PREFETCH: usize = 8;

/// Free `pages` (blocks of `order`) one after another exactly as [`free_pages`] frees each,
/// with the state word of the block eight frees ahead (`BATCH_PREFETCH`) already on its way: a
/// free's first step loads that word, which in a random order is a cache miss nothing else
/// can hide (the kernel also frees whole batches, in `free_unref_folios`). Stops at the first
/// refused block: the blocks before it are freed, it and the rest are untouched.
pub fn free_pages_batch<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    pages: &[Pfn],
    order: u32,
) -> Result<(), FreeBatchError> {
    let node = l.node();
    for (i, &pfn) in pages.iter().enumerate() {
        if let Some(ahead) = pages.get(i + BATCH_PREFETCH) {
            if let Some(z) = node.zone_of(ahead.0) {
                let zone = node.zone(z);
                zone.prefetch_state(zone.memmap().pages(), ahead.0);
            }
        }
        free_pages(l, cpu, pfn, order).map_err(|error| FreeBatchError { freed: i, error })?;
    }
    Ok(())
}

/// `free_one_page()`: the zone path of a free (orders the CPU lists do not cache, isolated
/// pageblocks, a contended per-CPU lock): take the zone's lock and free there
/// ([`crate::Zone::free_pages`]).
#[cold]
fn free_one_page<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    z: usize,
    pfn: Pfn,
    order: u32,
    owner: Owner,
) -> Result<(), FreeError> {
    lock_zone(l, z, cpu).free_pages(pfn, order, owner)?;
    l.node().trace().emit(cpu as u32, || TraceEvent::PageFree { pfn: pfn.0, order });
    Ok(())
}

/// `drain_pages_zone()`: CPU `cpu` gives everything it caches for zone `z` back.
pub fn drain_pages_zone<L: NodeLocks + ?Sized>(l: &L, cpu: usize, z: usize) {
    let zone = l.node().zone(z);
    let mut pcp = l.lock_pcp(cpu, z);
    pcp.drain(zone, |blocks| lock_zone(l, z, cpu).free_pcppages_bulk(blocks));
}

/// `drain_all_pages()`: every CPU gives its cached pages of every zone back.
pub fn drain_all_pages<L: NodeLocks + ?Sized>(l: &L) {
    let node = l.node();
    for cpu in 0..node.nr_cpus() {
        for z in 0..node.zones().len() {
            if node.zone(z).counters().cpu(cpu).count() > 0 {
                drain_pages_zone(l, cpu, z);
            }
        }
    }
}

/// The vmstat worker's per-CPU pass (`vmstat_update` → `refresh_cpu_vm_stats`), run every
/// `sysctl_stat_interval` (1 s): decay each zone's auto-tuned `high` on `cpu` and free what
/// it caches above it (`decay_pcp_high`). Counters here are exact, so there are no per-CPU
/// deltas to fold. Returns whether more decay work remains.
pub fn vmstat_update<L: NodeLocks + ?Sized>(l: &L, cpu: usize) -> bool {
    let node = l.node();
    let mut todo = false;
    for z in 0..node.zones().len() {
        let zone = node.zone(z);
        let mut pcp = l.lock_pcp(cpu, z);
        todo |= pcp.decay_high(zone, |blocks| lock_zone(l, z, cpu).free_pcppages_bulk(blocks));
    }
    todo
}
