//! Onlining memory (`mm/memory_hotplug.c`: `online_pages`): pages of a zone that were offline
//! — a VM's hot-added memory — become managed. They are freed to the buddy lists in the
//! largest aligned blocks (`generic_online_page` → `__free_pages_core`, to the list tails),
//! then the node recomputes what depends on the amount of memory, as the kernel does after
//! onlining: `min_free_kbytes` and every zone's watermarks (`init_per_zone_wmark_min`, with
//! khugepaged's recommendation), `lowmem_reserve`, and the per-CPU list sizes of every zone
//! (`zone_pcp_update`).
//!
//! Offlining is not modelled.

use crate::locks::{lock_zone, NodeLocks};
pub use crate::zone::hotplug::OnlineError;
use crate::zone::pageset::PagesetLimits;
use crate::zone::watermark::{lowmem_reserve_managed, NodeWatermarks, WatermarkLevel};

/// `online_pages()`: online `nr_pages` from `pfn` (on CPU `cpu`, which the free events are
/// stamped with), then recompute the node's watermarks, reserves and per-CPU list sizes.
pub fn online_pages<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    pfn: u64,
    nr_pages: u64,
) -> Result<(), OnlineError> {
    let node = l.node();
    let z = node.zone_of(pfn).ok_or(OnlineError::NotOffline { pfn, nr_pages })?;
    lock_zone(l, z, cpu).online_range(pfn, nr_pages)?;
    let zones = node.managed_sizes();
    let thp_pageblock = node.zone(0).config().thp_pageblock_pages();
    let wm = NodeWatermarks::compute_managed(&zones, thp_pageblock, node.policy());
    node.set_min_free_kbytes(wm.min_free_kbytes);
    for ((i, shared), (w, r)) in
        node.zones().iter().enumerate().zip(wm.zones.iter().zip(lowmem_reserve_managed(&zones)))
    {
        shared.set_watermarks(*w);
        shared.set_lowmem_reserve(r);
        let limits = PagesetLimits::compute(
            shared.managed_pages(),
            shared.wmark_pages(WatermarkLevel::Low),
            node.nr_cpus() as u32,
            node.policy(),
        );
        if limits != shared.pageset() {
            shared.set_pageset(limits);
            for cpu in 0..node.nr_cpus() {
                l.lock_pcp(cpu, i).update_limits(shared, limits, node.policy());
            }
        }
    }
    Ok(())
}
