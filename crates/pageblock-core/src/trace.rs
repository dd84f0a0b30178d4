//! kmem tracepoints (`include/trace/events/kmem.h`): the events the allocator emits, and the
//! sink they go to.
//!
//! Events carry semantic values (pfns, orders, [`MigrateType`]s). Turning them into the
//! kernel's text — with the migratetype numbering of the zone's configuration (Isolate is 4
//! without CMA, 5 with it) — is [`crate::show::kmem_event`]'s job, so a sink that only counts
//! or keeps events pays nothing for formatting. Tracing is off (no sink) by default and costs
//! one relaxed load per event site then. Every zone of a node shares one [`TraceHub`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

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

/// Where and when an event happened: the CPU whose code emitted it and the node's clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// The (simulated) CPU.
    pub cpu: u32,
    /// The node's clock in microseconds (simulated time in the lab).
    pub time_us: u64,
}

/// Where events go. Implementations must be cheap: they run under the zone lock.
pub trait TraceSink: Send {
    /// Record one event.
    fn emit(&mut self, ctx: TraceContext, ev: &TraceEvent);

    /// Downcast support, so a caller can take its concrete sink back.
    fn as_any(&mut self) -> &mut dyn std::any::Any;
}

/// The node's tracing switchboard: one sink shared by every zone and CPU (the kernel's trace
/// ring buffer), and the clock events are stamped with. With no sink installed an event site
/// costs one relaxed load.
///
/// # Invariants
///
/// * `enabled == sink.is_some()` whenever the sink's lock is not held.
#[derive(Default)]
pub struct TraceHub {
    enabled: AtomicBool,
    clock_us: AtomicU64,
    sink: Mutex<Option<Box<dyn TraceSink>>>,
}

impl std::fmt::Debug for TraceHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceHub")
            .field("enabled", &self.enabled())
            .field("clock_us", &self.time_us())
            .finish()
    }
}

impl TraceHub {
    /// True if a sink is installed.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// Emit the event `ev` builds, stamped with `cpu` and the clock, if a sink is installed.
    #[inline]
    pub fn emit(&self, cpu: u32, ev: impl FnOnce() -> TraceEvent) {
        if self.enabled() {
            self.emit_slow(cpu, &ev());
        }
    }

    #[cold]
    fn emit_slow(&self, cpu: u32, ev: &TraceEvent) {
        let ctx = TraceContext { cpu, time_us: self.time_us() };
        if let Some(sink) = self.lock().as_mut() {
            sink.emit(ctx, ev);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Box<dyn TraceSink>>> {
        // A sink that panicked mid-event leaves nothing inconsistent here.
        self.sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Install `sink` (or remove it with `None`); returns the previous one.
    pub fn set_sink(&self, sink: Option<Box<dyn TraceSink>>) -> Option<Box<dyn TraceSink>> {
        let mut guard = self.lock();
        self.enabled.store(sink.is_some(), Relaxed);
        std::mem::replace(&mut *guard, sink)
    }

    /// Remove the sink and return it (to flush or inspect it).
    pub fn take_sink(&self) -> Option<Box<dyn TraceSink>> {
        self.set_sink(None)
    }

    /// The clock, in microseconds.
    #[inline]
    pub fn time_us(&self) -> u64 {
        self.clock_us.load(Relaxed)
    }

    /// Set the clock (the simulator's time, or a runtime's monotonic clock).
    pub fn set_time_us(&self, us: u64) {
        self.clock_us.store(us, Relaxed);
    }
}

/// A sink that keeps every event in memory (tests, short lab runs).
#[derive(Debug, Default)]
pub struct RecordingSink {
    /// The events, in order, with their context.
    pub events: Vec<(TraceContext, TraceEvent)>,
}

impl RecordingSink {
    /// The events without their context.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events.iter().map(|(_, e)| *e).collect()
    }
}

impl TraceSink for RecordingSink {
    fn emit(&mut self, ctx: TraceContext, ev: &TraceEvent) {
        self.events.push((ctx, *ev));
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
