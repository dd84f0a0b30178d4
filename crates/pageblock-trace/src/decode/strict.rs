//! The slow path: `pageblock_formats`' strict parsers, then the conversion to a record.
//!
//! It reads every line the fast path leaves alone (non-ASCII comms, tgid columns, `CPU:n
//! [LOST …]` markers, compaction events, unusual spacing) and produces every error message.

use pageblock_formats::compaction::{CompactionEvent, CompactionEventKind};
use pageblock_formats::ftrace::{Dialect, LineRef, TraceLineRef};
use pageblock_formats::kmem::KmemEvent;

use super::{Decoded, MAX_PAGE_ORDER};
use crate::{GfpTable, LostEvents, RecordKind, Task, TraceRecord};

/// Decodes one line with the strict parsers.
pub(super) fn decode(line: &[u8], dialect: Dialect, gfp: &mut GfpTable) -> Result<Decoded, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("line is not valid UTF-8: {e}"))?;
    let parsed = match dialect {
        Dialect::Ftrace => LineRef::parse(text),
        Dialect::PerfScript => LineRef::parse_perf(text),
    };
    match parsed.map_err(|e| e.reason)? {
        LineRef::Comment(_) => Ok(Decoded::Comment),
        LineRef::Lost { cpu, events } => Ok(Decoded::Lost { cpu, events: LostEvents::new(events) }),
        LineRef::Event(ev) => event(&ev, gfp),
    }
}

fn event(ev: &TraceLineRef<'_>, gfp: &mut GfpTable) -> Result<Decoded, String> {
    let (pfn, kind) = if KmemEvent::is_kmem_event(ev.event) {
        let k = ev.kmem().map_err(|e| e.reason)?;
        (k.pfn(), kmem_kind(&k, gfp).map_err(|e| format!("{}: {e}", ev.event))?)
    } else if CompactionEventKind::from_name(ev.event).is_some() {
        let c = ev.compaction().map_err(|e| e.reason)?;
        // Where the migrate scanner was: its position at a run's start and end, and the
        // start of each range it isolated from.
        let pfn = match &c {
            CompactionEvent::Begin(b) => b.migrate_pfn,
            CompactionEvent::End(e) => e.scanners.migrate_pfn,
            CompactionEvent::IsolateMigratepages(i) => i.start_pfn,
            _ => 0,
        };
        let kind = match c {
            CompactionEvent::TryToCompactPages(t) => {
                try_to_compact_pages(&t, ev.need_resched(), gfp).map_err(|e| format!("{}: {e}", ev.event))?
            }
            c => RecordKind::Compaction(c.kind()),
        };
        (pfn, kind)
    } else if let Some(i) = crate::VmscanEvent::index_of(ev.event.as_bytes()) {
        let v = match crate::VmscanEvent::without_payload(i) {
            Some(v) => v,
            None if i == 0 => {
                direct_reclaim_begin(ev.payload, gfp).map_err(|e| format!("{}: {e}", ev.event))?
            }
            None => crate::VmscanEvent::LruShrinkInactive(crate::ShrinkInactive::of(
                &ev.lru_shrink_inactive().map_err(|e| e.reason)?,
            )),
        };
        (0, RecordKind::Vmscan(v))
    } else {
        return Ok(Decoded::Other);
    };
    let cpu =
        u16::try_from(ev.cpu).map_err(|_| format!("CPU {} is beyond the 65,536 a record holds", ev.cpu))?;
    let task = Task::of_comm(ev.comm.as_bytes());
    Ok(Decoded::Record(TraceRecord { time_us: ev.timestamp.as_micros(), pfn, cpu, task, kind }, ev.pid))
}

/// `mm_vmscan_direct_reclaim_begin`'s `order=%d gfp_flags=%s`.
fn direct_reclaim_begin(payload: &str, gfp: &mut GfpTable) -> Result<crate::VmscanEvent, String> {
    let bad = || format!("expected `order=N gfp_flags=MASK`, found `{payload}`");
    let rest = payload.strip_prefix("order=").ok_or_else(bad)?;
    let (n, mask) = rest.split_once(" gfp_flags=").ok_or_else(bad)?;
    let n: i32 = n.parse().map_err(|_| format!("order `{n}` is not a number"))?;
    Ok(crate::VmscanEvent::DirectReclaimBegin {
        order: order(n, "order")?,
        gfp: gfp.intern_text(mask.as_bytes())?,
    })
}

/// `mm_compaction_try_to_compact_pages` as a record holds it.
fn try_to_compact_pages(
    t: &pageblock_formats::compaction::MmCompactionTryToCompactPages,
    need_resched: Option<bool>,
    gfp: &mut GfpTable,
) -> Result<RecordKind, String> {
    let priority = u8::try_from(t.prio)
        .ok()
        .filter(|&p| p <= 2)
        .ok_or_else(|| format!("priority {} is not a compaction priority (0, 1 or 2)", t.prio))?;
    Ok(RecordKind::TryToCompactPages {
        order: order(t.order, "order")?,
        gfp: gfp.intern_text(t.gfp_mask.render().as_bytes())?,
        priority,
        need_resched,
    })
}

/// An order as a record holds it: a block no larger than the trace machine's largest
/// (`MAX_PAGE_ORDER`; a replay works in proportion to a block's pages). The kernel prints
/// orders with `%d`, so an unsigned one of 2^31 and up was printed negative.
fn order(v: impl Into<Order>, what: &str) -> Result<u8, String> {
    let o = v.into().0;
    match u32::try_from(o) {
        Ok(o) if o <= MAX_PAGE_ORDER => Ok(o as u8),
        Ok(_) => Err(format!("{what} {o} exceeds MAX_PAGE_ORDER {MAX_PAGE_ORDER}")),
        Err(_) => Err(format!("{what} {o} is not a page order")),
    }
}

/// An order as the kernel printed it (`%d`).
struct Order(i32);

impl From<u32> for Order {
    fn from(v: u32) -> Self {
        Order(v as i32)
    }
}

impl From<i32> for Order {
    fn from(v: i32) -> Self {
        Order(v)
    }
}

/// A migratetype as a record holds it.
fn migratetype(v: i32, what: &str) -> Result<i8, String> {
    i8::try_from(v).map_err(|_| format!("{what} {v} is not a migratetype"))
}

/// The record kind of a strictly parsed kmem event.
fn kmem_kind(k: &KmemEvent, gfp: &mut GfpTable) -> Result<RecordKind, String> {
    Ok(match k {
        KmemEvent::PageAlloc(e) => RecordKind::Alloc {
            order: order(e.order, "order")?,
            migratetype: migratetype(e.migratetype, "migratetype")?,
            gfp: gfp.intern(e.gfp_flags)?,
            failed: e.failed(),
        },
        KmemEvent::PageFree(e) => RecordKind::Free { order: order(e.order, "order")? },
        KmemEvent::PageFreeBatched(_) => RecordKind::FreeBatched,
        KmemEvent::PageAllocZoneLocked(e) => RecordKind::ZoneLocked {
            order: order(e.order, "order")?,
            migratetype: migratetype(e.migratetype, "migratetype")?,
            percpu_refill: e.percpu_refill != 0,
        },
        KmemEvent::PagePcpuDrain(e) => RecordKind::PcpuDrain {
            order: order(e.order, "order")?,
            migratetype: migratetype(e.migratetype, "migratetype")?,
        },
        KmemEvent::PageAllocExtfrag(e) => RecordKind::Extfrag {
            alloc_order: order(e.alloc_order, "alloc_order")?,
            fallback_order: order(e.fallback_order, "fallback_order")?,
            alloc_migratetype: migratetype(e.alloc_migratetype, "alloc_migratetype")?,
            fallback_migratetype: migratetype(e.fallback_migratetype, "fallback_migratetype")?,
            fragmenting: e.fallback_order < e.pageblock_order,
            change_ownership: e.change_ownership != 0,
        },
    })
}
