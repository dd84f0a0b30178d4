//! [`TraceStats`]: what a trace says about the page allocator, from one streaming pass.
//!
//! Counts per event, allocation orders by migratetype, failed allocations, the gfp mix,
//! page lifetimes (see [`LifetimeStats`] for how pairs are made and what cannot be paired),
//! per-CPU list refills and drains, migratetype fallbacks, lost events, the time span and the
//! CPUs. Memory stays bounded by the number of live pages, not the trace's length.

mod collector;
mod lifetimes;
mod summary;

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Instant;

use serde::Serialize;

pub use lifetimes::{LifetimePercentiles, LifetimeStats};

use super::{TraceError, TraceReader};

/// How many of the most frequent gfp masks the statistics list.
pub const GFP_TOP: usize = 20;

/// Allocations of one order and migratetype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OrderMigratetype {
    /// Order.
    pub order: u8,
    /// Requested migratetype.
    pub migratetype: i8,
    /// How many `mm_page_alloc` events (failed ones included).
    pub count: u64,
}

/// `mm_page_alloc` events.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AllocStats {
    /// All allocation events.
    pub total: u64,
    /// Failed ones (`page=0000000000000000`).
    pub failed: u64,
    /// By order and requested migratetype.
    pub by_order_migratetype: Vec<OrderMigratetype>,
    /// Failed allocations by order.
    pub failed_by_order: BTreeMap<u8, u64>,
}

/// One gfp mask and how many allocations asked for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GfpCount {
    /// As the kernel prints it (`GFP_KERNEL|__GFP_ZERO`).
    pub gfp: String,
    /// The mask, `0x…`.
    pub mask: String,
    /// Allocations.
    pub allocs: u64,
}

/// The gfp masks of the allocations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GfpMix {
    /// Distinct masks.
    pub distinct: usize,
    /// The [`GFP_TOP`] most frequent, most frequent first.
    pub top: Vec<GfpCount>,
}

/// `mm_page_alloc_zone_locked` with `percpu_refill=1`: blocks taken for per-CPU lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RefillStats {
    /// Refill events.
    pub events: u64,
    /// Pages they took (`2^order` each).
    pub pages: u64,
    /// Refill events by order.
    pub events_by_order: BTreeMap<u8, u64>,
    /// `mm_page_alloc_zone_locked` events that were not refills.
    pub other_zone_locked: u64,
}

/// `mm_page_pcpu_drain`: pages returned from per-CPU lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DrainStats {
    /// Drain events.
    pub events: u64,
    /// Pages (`2^order` each).
    pub pages: u64,
}

/// Fallbacks of one requested migratetype to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FallbackPair {
    /// Requested migratetype.
    pub alloc_migratetype: i8,
    /// Migratetype of the list used.
    pub fallback_migratetype: i8,
    /// Events.
    pub count: u64,
}

/// `mm_page_alloc_extfrag` events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FallbackStats {
    /// All fallbacks.
    pub total: u64,
    /// Those that split a block below `pageblock_order` (`fallback_order < pageblock_order`).
    pub fragmenting: u64,
    /// Those after which the pageblock changed owner.
    pub change_ownership: u64,
    /// By requested and used migratetype.
    pub by_migratetype: Vec<FallbackPair>,
}

/// `CPU:n [LOST …]` markers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LostStats {
    /// Markers.
    pub markers: u64,
    /// Markers without a count (`CPU:n [LOST EVENTS]`).
    pub markers_without_count: u64,
    /// Events lost, by CPU (known counts only).
    pub events_by_cpu: BTreeMap<u32, u64>,
}

/// Page allocations and frees made in one kind of task: the daemons' frees are reclaim
/// (kswapd) and migration (kcompactd), the kernel's own decisions rather than the workload's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TaskEvents {
    /// `other`, `kswapd`, `kcompactd`, `direct reclaim` or `direct compaction` ([`crate::Task`]).
    pub task: &'static str,
    /// Allocations served (`mm_page_alloc` with a page).
    pub allocs: u64,
    /// Their pages.
    pub alloc_pages: u64,
    /// Frees (`mm_page_free`).
    pub frees: u64,
    /// Their pages.
    pub free_pages: u64,
}

/// First and last timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TimeSpan {
    /// First event, µs.
    pub first_us: Option<u64>,
    /// Last event, µs.
    pub last_us: Option<u64>,
    /// Seconds between them.
    pub seconds: f64,
}

/// The statistics of one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceStats {
    /// Lines read.
    pub lines: u64,
    /// Events per tracepoint name: the six kmem page events always, compaction events seen.
    pub events: BTreeMap<&'static str, u64>,
    /// Malformed lines skipped.
    pub bad_lines: u64,
    /// Events the kernel reported lost (sum of the `[LOST n EVENTS]` counts).
    pub lost_events: u64,
    /// Wall time of the pass, seconds.
    pub seconds: f64,
    /// `ftrace` or `perf-script` (`null` for a trace without events).
    pub dialect: Option<&'static str>,
    /// `#` lines.
    pub comments: u64,
    /// Events of other tracepoints.
    pub other_events: u64,
    /// The first malformed line skipped, as `FILE:LINE: reason`.
    pub first_bad_line: Option<String>,
    /// Where a truncated compressed file stopped (read with bad lines skipped: the
    /// statistics are those of the lines before it), as `FILE: reason`.
    pub truncated: Option<String>,
    /// Lost-event markers.
    pub lost: LostStats,
    /// Time span.
    pub time: TimeSpan,
    /// CPUs seen.
    pub cpus: Vec<u32>,
    /// Allocations.
    pub alloc: AllocStats,
    /// Gfp masks of the allocations.
    pub gfp: GfpMix,
    /// Page lifetimes.
    pub lifetimes: LifetimeStats,
    /// Per-CPU list refills.
    pub refill: RefillStats,
    /// Per-CPU list drains.
    pub drain: DrainStats,
    /// Migratetype fallbacks.
    pub fallbacks: FallbackStats,
    /// Allocations and frees by kind of task.
    pub by_task: Vec<TaskEvents>,
}

impl TraceStats {
    /// Reads `reader` to the end and computes the statistics; `progress` is called now and
    /// then with the number of lines read. Stops at the first error the reader yields (so a
    /// malformed line stops it unless the reader skips bad lines), and fails if no event was
    /// decoded at all ([`TraceReader::finish`]).
    pub fn collect<R: Read>(
        reader: &mut TraceReader<R>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<TraceStats, TraceError> {
        const PROGRESS_EVERY: u64 = 1 << 16;
        let start = Instant::now();
        let mut c = collector::Collector::new();
        let mut next_progress = PROGRESS_EVERY;
        for item in &mut *reader {
            let (line, record) = item?;
            c.add(&record);
            if line >= next_progress {
                progress(line);
                next_progress = line + PROGRESS_EVERY;
            }
        }
        progress(reader.counts().lines);
        reader.finish()?;
        let mut stats = c.finish(reader);
        stats.seconds = start.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// A readable summary, as `pageblock trace stats` prints it.
    pub fn summary(&self) -> String {
        summary::render(self)
    }
}
