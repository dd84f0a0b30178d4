//! What an [`Allocator`] tells about itself: the kernel's reports (`/proc/buddyinfo`,
//! `pagetypeinfo`, `zoneinfo`, `vmstat`) and single counters, read from the node's lock-free
//! counters without waiting for anyone — only [`Allocator::pagetypeinfo_walk`] takes the zone
//! locks, one order at a time, as the kernel's walk does — and the trace sink.

use pageblock_core::{show, NodeLocks, TraceSink, VmEvent};
use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::ZoneInfo;

use crate::{Allocator, NoSuchCpu};

impl Allocator {
    /// `/proc/pagetypeinfo` from the per-migratetype counts, as 6.18 prints it: never takes a
    /// zone lock. With the `Plain` free-area layout (no counts) it walks the lists instead.
    pub fn pagetypeinfo(&self) -> PageTypeInfo {
        show::pagetypeinfo(&*self.pgdat, show::PagetypeinfoMode::CountsCapped)
    }

    /// `/proc/pagetypeinfo` the pre-seed-000 way: walk the free lists, taking the zone lock
    /// for one order at a time (as the kernel's `pagetypeinfo_showfree_print` does).
    pub fn pagetypeinfo_walk(&self) -> PageTypeInfo {
        show::pagetypeinfo_walk(&*self.pgdat)
    }

    /// `/proc/buddyinfo`: free blocks per order in each zone.
    pub fn buddyinfo(&self) -> BuddyInfo {
        show::buddyinfo(self.pgdat.node())
    }

    /// `/proc/zoneinfo`: watermarks, counters and each CPU's pageset of every zone.
    pub fn zoneinfo(&self) -> ZoneInfo {
        show::zoneinfo(self.pgdat.node())
    }

    /// `/proc/vmstat`: every line 6.18 prints, in its order.
    pub fn vmstat(&self) -> VmStat {
        show::vmstat(self.pgdat.node())
    }

    /// One event counter, summed over the node.
    pub fn event(&self, ev: VmEvent) -> u64 {
        self.pgdat.node().event(ev)
    }

    /// Pages the allocator manages.
    pub fn managed_pages(&self) -> u64 {
        self.pgdat.node().managed_pages()
    }

    /// Free pages (`NR_FREE_PAGES`): in the buddy lists, not counting the per-CPU caches.
    pub fn nr_free_pages(&self) -> u64 {
        self.pgdat.node().nr_free_pages()
    }

    /// Pages cached on CPU slot `cpu`'s lists, over every zone (`pcp->count`).
    pub fn pcp_pages(&self, cpu: usize) -> Result<u64, NoSuchCpu> {
        let cpu = self.cpu_slot(cpu)?;
        Ok(self.pgdat.node().zones().iter().map(|z| z.counters().cpu(cpu).count()).sum())
    }

    /// How many times a zone lock has been taken (refills, drains, zone-path allocations and
    /// frees, walks).
    pub fn zone_lock_acquisitions(&self) -> u64 {
        self.pgdat.zone_lock_acquisitions()
    }

    /// Install `sink` to see every trace event, stamped with the CPU slot (`None` removes
    /// it); returns the sink it replaces.
    pub fn set_trace_sink(&self, sink: Option<Box<dyn TraceSink>>) -> Option<Box<dyn TraceSink>> {
        self.pgdat.node().trace().set_sink(sink)
    }
}
