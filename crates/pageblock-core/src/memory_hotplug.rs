//! Onlining memory (`mm/memory_hotplug.c`: `online_pages`): pages of a zone that were offline
//! — a VM's hot-added memory — become managed. They are freed to the buddy lists in the
//! largest aligned blocks (`generic_online_page` → `__free_pages_core`, to the list tails),
//! then the node recomputes what depends on the amount of memory, as the kernel does after
//! onlining: `min_free_kbytes` and every zone's watermarks (`init_per_zone_wmark_min`, with
//! khugepaged's recommendation), `lowmem_reserve`, and the per-CPU list sizes of every zone
//! (`zone_pcp_update`).
//!
//! Offlining is not modelled.

use std::fmt;

use crate::locks::lock_zone;
use crate::locks::NodeLocks;
use crate::trace::TraceEvent;
use crate::zone::pageset::PagesetLimits;
use crate::zone::watermark::{lowmem_reserve_managed, NodeWatermarks, WatermarkLevel};
use crate::zone::Zone;

/// Why pages could not be onlined. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlineError {
    /// Some page of the range is not offline memory of one zone.
    NotOffline {
        /// The first pfn of the range.
        pfn: u64,
        /// Pages asked for.
        nr_pages: u64,
    },
}

impl fmt::Display for OnlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnlineError::NotOffline { pfn, nr_pages } => {
                write!(f, "{nr_pages} pages from {pfn:#x} are not all offline memory of one zone")
            }
        }
    }
}

impl std::error::Error for OnlineError {}

impl Zone {
    /// True if every page of `[pfn, pfn + nr_pages)` is offline memory of this zone.
    pub fn is_offline(&self, pfn: u64, nr_pages: u64) -> bool {
        let end = pfn.saturating_add(nr_pages);
        nr_pages > 0
            && self.contains(pfn)
            && end <= self.end_pfn()
            && (pfn..end).all(|p| self.shared.page_offline(p))
    }

    /// Online `nr_pages` offline pages from `pfn`: free them to the buddy lists and count
    /// them as managed. The node's recomputation is [`online_pages`]'s.
    fn online_range(&mut self, pfn: u64, nr_pages: u64) -> Result<(), OnlineError> {
        if !self.is_offline(pfn, nr_pages) {
            return Err(OnlineError::NotOffline { pfn, nr_pages });
        }
        for p in pfn..pfn + nr_pages {
            self.shared.memmap.clear(self.idx(p));
        }
        for (p, order) in self.free_range_to_buddy(pfn, pfn + nr_pages) {
            self.emit(|| TraceEvent::PageFree { pfn: p, order });
        }
        self.shared.add_managed(nr_pages);
        Ok(())
    }
}

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
