//! The free path, written once for every driver ([`crate::NodeLocks`]): `__free_pages` →
//! `free_frozen_pages` (to the CPU's lists for the orders they cache, to the zone
//! otherwise), the drains of the per-CPU lists, and the vmstat worker's per-CPU work. Below
//! reclaim and compaction, which free through it.
//!
//! Events (`mm_page_free`) are emitted here with the freeing CPU; the zone emits the ones it
//! makes under its lock.

use crate::locks::{lock_zone, NodeLocks};
use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::trace::TraceEvent;
use crate::types::Pfn;
use crate::zone::free::{FreeBatchError, FreeError, Owner};

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

/// `drain_all_pages(zone)`: every CPU gives its cached pages of zone `zone` back, or of
/// every zone with `None` (the slowpath's retry after direct reclaim drains them all;
/// kcompactd drains only the zone it compacted).
pub fn drain_all_pages<L: NodeLocks + ?Sized>(l: &L, zone: Option<usize>) {
    let node = l.node();
    let zones = match zone {
        Some(z) => z..z + 1,
        None => 0..node.zones().len(),
    };
    for cpu in 0..node.nr_cpus() {
        for z in zones.clone() {
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
