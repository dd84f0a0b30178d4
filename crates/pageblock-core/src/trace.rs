//! kmem tracepoints (`include/trace/events/kmem.h`): the events the allocator emits, and the
//! sink they go to.
//!
//! Events carry semantic values (pfns, orders, [`MigrateType`]s). Turning them into the
//! kernel's text — with the migratetype numbering of the zone's configuration (Isolate is 4
//! without CMA, 5 with it) — is [`crate::show::kmem_event`]'s job, so a sink that only counts
//! or keeps events pays nothing for formatting. Tracing is off (no sink) by default and costs
//! one branch per event site then.

use crate::gfp::Gfp;
use crate::migratetype::MigrateType;

/// One kmem page event, as the allocator emits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// `mm_page_alloc`: the result of an allocation request (`pfn` is `None` on failure).
    PageAlloc {
        /// The block allocated.
        pfn: Option<u64>,
        /// Request order.
        order: u32,
        /// The request's migratetype.
        migratetype: MigrateType,
        /// The request's GFP mask.
        gfp: Gfp,
    },
    /// `mm_page_free`: a block freed by its owner.
    PageFree {
        /// First pfn.
        pfn: u64,
        /// Order.
        order: u32,
    },
    /// `mm_page_alloc_zone_locked`: a block taken off a buddy list under the zone lock.
    PageAllocZoneLocked {
        /// First pfn.
        pfn: u64,
        /// Order taken.
        order: u32,
        /// The list it came from.
        migratetype: MigrateType,
        /// `pcp_allowed_order(order)` and a mobility type (whether or not this was a refill).
        percpu_refill: bool,
    },
    /// `mm_page_pcpu_drain`: a block going from a per-CPU list back to the buddy lists.
    PagePcpuDrain {
        /// First pfn.
        pfn: u64,
        /// Order.
        order: u32,
        /// The pageblock type it is freed with.
        migratetype: MigrateType,
    },
    /// `mm_page_alloc_extfrag`: an allocation served from another type's pageblock.
    PageAllocExtfrag {
        /// First pfn of the block handed out.
        pfn: u64,
        /// Request order.
        alloc_order: u32,
        /// Order of the foreign block it was taken from.
        fallback_order: u32,
        /// Requested type.
        alloc_migratetype: MigrateType,
        /// The foreign type.
        fallback_migratetype: MigrateType,
        /// Whether the pageblock now has the requested type.
        change_ownership: bool,
    },
}

/// Where events go. Implementations must be cheap: they run under the zone lock.
pub trait TraceSink: Send {
    /// Record one event.
    fn emit(&mut self, ev: &TraceEvent);

    /// Downcast support, so a caller can take its concrete sink back.
    fn as_any(&mut self) -> &mut dyn std::any::Any;
}

/// A sink that keeps every event in memory (tests, short lab runs).
#[derive(Debug, Default)]
pub struct RecordingSink {
    /// The events, in order.
    pub events: Vec<TraceEvent>,
}

impl TraceSink for RecordingSink {
    fn emit(&mut self, ev: &TraceEvent) {
        self.events.push(*ev);
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
