//! The compaction tracepoints (`include/trace/events/compaction.h`), as their `TP_printk`
//! text.
//!
//! | event | payload format |
//! |---|---|
//! | `mm_compaction_isolate_migratepages` | `range=(0x%lx ~ 0x%lx) nr_scanned=%lu nr_taken=%lu` |
//! | `mm_compaction_isolate_freepages` | (same) |
//! | `mm_compaction_fast_isolate_freepages` | (same) |
//! | `mm_compaction_migratepages` | `nr_migrated=%lu nr_failed=%lu` |
//! | `mm_compaction_begin` | `zone_start=0x%lx migrate_pfn=0x%lx free_pfn=0x%lx zone_end=0x%lx, mode=%s` |
//! | `mm_compaction_end` | `zone_start=0x%lx migrate_pfn=0x%lx free_pfn=0x%lx zone_end=0x%lx, mode=%s status=%s` |
//! | `mm_compaction_try_to_compact_pages` | `order=%d gfp_mask=%s priority=%d` |
//! | `mm_compaction_finished` | `node=%d zone=%-8s order=%d ret=%s` |
//! | `mm_compaction_suitable` | (same) |
//! | `mm_compaction_deferred` | `node=%d zone=%-8s order=%d order_failed=%d consider=%u limit=%lu` |
//! | `mm_compaction_defer_compaction` | (same) |
//! | `mm_compaction_defer_reset` | (same) |
//! | `mm_compaction_kcompactd_sleep` | `nid=%d` |
//! | `mm_compaction_wakeup_kcompactd` | `nid=%d order=%d classzone_idx=%-8s` |
//! | `mm_compaction_kcompactd_wake` | (same) |
//!
//! Derived from the format files of a 6.18 x86_64 machine. Pitfalls:
//!
//! * `mode=%s` is `sync ? "sync" : "async"`, and a comma precedes it (`zone_end=0x…, mode=`).
//! * `status=`/`ret=` and the zones are `__print_symbolic` tables ([`CompactResult`],
//!   [`ZoneType`]); a value without a name prints as `0x%lx` of the `unsigned long`.
//! * Zones are `%-8s`: left-aligned and space-padded (`zone=Normal   order=9`), so
//!   `…kcompactd…: … classzone_idx=Normal  ` **ends in spaces**. Nothing may trim the line.
//! * `limit=%lu` is `1UL << defer_shift`; the model keeps the shift.
//! * `gfp_mask=` is rendered like `mm_page_alloc`'s `gfp_flags=` ([`Gfp`](crate::gfp::Gfp)).
//!
//! [`CompactionEvent::parse`] is strict, more than [`crate::kmem`]: the kernel's fields in
//! the kernel's order, literals byte for byte, and every value written as `vsnprintf` writes
//! it (no leading zeros, lowercase hex, the canonical gfp string), so that **whatever it
//! accepts renders back to the same bytes**, not only what the kernel printed.

use std::fmt;

use crate::text::quote;
use crate::ParseError;

mod events;
mod symbols;

pub use events::{
    KcompactdWake, MmCompactionBegin, MmCompactionDefer, MmCompactionEnd, MmCompactionIsolate,
    MmCompactionKcompactdSleep, MmCompactionMigratepages, MmCompactionSuitable,
    MmCompactionTryToCompactPages,
};
pub use symbols::{CompactResult, ZoneType};

/// Which compaction event (no payload): names, counting, dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompactionEventKind {
    /// `mm_compaction_isolate_migratepages`.
    IsolateMigratepages,
    /// `mm_compaction_isolate_freepages`.
    IsolateFreepages,
    /// `mm_compaction_fast_isolate_freepages`.
    FastIsolateFreepages,
    /// `mm_compaction_migratepages`.
    Migratepages,
    /// `mm_compaction_begin`.
    Begin,
    /// `mm_compaction_end`.
    End,
    /// `mm_compaction_try_to_compact_pages`.
    TryToCompactPages,
    /// `mm_compaction_finished`.
    Finished,
    /// `mm_compaction_suitable`.
    Suitable,
    /// `mm_compaction_deferred`.
    Deferred,
    /// `mm_compaction_defer_compaction`.
    DeferCompaction,
    /// `mm_compaction_defer_reset`.
    DeferReset,
    /// `mm_compaction_kcompactd_sleep`.
    KcompactdSleep,
    /// `mm_compaction_wakeup_kcompactd`.
    WakeupKcompactd,
    /// `mm_compaction_kcompactd_wake`.
    KcompactdWake,
}

impl CompactionEventKind {
    /// Every kind, in the order of `compaction.h`.
    pub const ALL: [CompactionEventKind; 15] = [
        Self::IsolateMigratepages,
        Self::IsolateFreepages,
        Self::FastIsolateFreepages,
        Self::Migratepages,
        Self::Begin,
        Self::End,
        Self::TryToCompactPages,
        Self::Finished,
        Self::Suitable,
        Self::Deferred,
        Self::DeferCompaction,
        Self::DeferReset,
        Self::KcompactdSleep,
        Self::WakeupKcompactd,
        Self::KcompactdWake,
    ];

    /// The tracepoint name.
    pub fn name(self) -> &'static str {
        match self {
            Self::IsolateMigratepages => "mm_compaction_isolate_migratepages",
            Self::IsolateFreepages => "mm_compaction_isolate_freepages",
            Self::FastIsolateFreepages => "mm_compaction_fast_isolate_freepages",
            Self::Migratepages => "mm_compaction_migratepages",
            Self::Begin => "mm_compaction_begin",
            Self::End => "mm_compaction_end",
            Self::TryToCompactPages => "mm_compaction_try_to_compact_pages",
            Self::Finished => "mm_compaction_finished",
            Self::Suitable => "mm_compaction_suitable",
            Self::Deferred => "mm_compaction_deferred",
            Self::DeferCompaction => "mm_compaction_defer_compaction",
            Self::DeferReset => "mm_compaction_defer_reset",
            Self::KcompactdSleep => "mm_compaction_kcompactd_sleep",
            Self::WakeupKcompactd => "mm_compaction_wakeup_kcompactd",
            Self::KcompactdWake => "mm_compaction_kcompactd_wake",
        }
    }

    /// The kind named `name`, if it is a compaction event.
    pub fn from_name(name: &str) -> Option<Self> {
        if !name.starts_with("mm_compaction_") {
            return None;
        }
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One compaction event's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompactionEvent {
    /// `mm_compaction_isolate_migratepages`.
    IsolateMigratepages(MmCompactionIsolate),
    /// `mm_compaction_isolate_freepages`.
    IsolateFreepages(MmCompactionIsolate),
    /// `mm_compaction_fast_isolate_freepages`.
    FastIsolateFreepages(MmCompactionIsolate),
    /// `mm_compaction_migratepages`.
    Migratepages(MmCompactionMigratepages),
    /// `mm_compaction_begin`.
    Begin(MmCompactionBegin),
    /// `mm_compaction_end`.
    End(MmCompactionEnd),
    /// `mm_compaction_try_to_compact_pages`.
    TryToCompactPages(MmCompactionTryToCompactPages),
    /// `mm_compaction_finished`.
    Finished(MmCompactionSuitable),
    /// `mm_compaction_suitable`.
    Suitable(MmCompactionSuitable),
    /// `mm_compaction_deferred`.
    Deferred(MmCompactionDefer),
    /// `mm_compaction_defer_compaction`.
    DeferCompaction(MmCompactionDefer),
    /// `mm_compaction_defer_reset`.
    DeferReset(MmCompactionDefer),
    /// `mm_compaction_kcompactd_sleep`.
    KcompactdSleep(MmCompactionKcompactdSleep),
    /// `mm_compaction_wakeup_kcompactd`.
    WakeupKcompactd(KcompactdWake),
    /// `mm_compaction_kcompactd_wake`.
    KcompactdWake(KcompactdWake),
}

impl CompactionEvent {
    /// Which event this is.
    pub fn kind(&self) -> CompactionEventKind {
        use CompactionEventKind as K;
        match self {
            Self::IsolateMigratepages(_) => K::IsolateMigratepages,
            Self::IsolateFreepages(_) => K::IsolateFreepages,
            Self::FastIsolateFreepages(_) => K::FastIsolateFreepages,
            Self::Migratepages(_) => K::Migratepages,
            Self::Begin(_) => K::Begin,
            Self::End(_) => K::End,
            Self::TryToCompactPages(_) => K::TryToCompactPages,
            Self::Finished(_) => K::Finished,
            Self::Suitable(_) => K::Suitable,
            Self::Deferred(_) => K::Deferred,
            Self::DeferCompaction(_) => K::DeferCompaction,
            Self::DeferReset(_) => K::DeferReset,
            Self::KcompactdSleep(_) => K::KcompactdSleep,
            Self::WakeupKcompactd(_) => K::WakeupKcompactd,
            Self::KcompactdWake(_) => K::KcompactdWake,
        }
    }

    /// The tracepoint name.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The `TP_printk` text: everything after `name: ` on the trace line.
    pub fn render_payload(&self) -> String {
        self.to_string()
    }

    /// Parses the payload of event `name`, strictly (see the module docs). Errors report
    /// line 1; use [`ParseError::at_line`] to place them in a file.
    pub fn parse(name: &str, payload: &str) -> Result<Self, ParseError> {
        let kind = CompactionEventKind::from_name(name)
            .ok_or_else(|| ParseError::new(1, format!("{} is not a compaction event", quote(name))))?;
        let mut s = crate::scan::Scan::new(kind.name(), payload);
        let ev = parse_kind(kind, &mut s)?;
        s.end()?;
        Ok(ev)
    }
}

/// The payload of a `kind` event.
fn parse_kind(
    kind: CompactionEventKind,
    s: &mut crate::scan::Scan<'_>,
) -> Result<CompactionEvent, ParseError> {
    use CompactionEvent as E;
    use CompactionEventKind as K;
    Ok(match kind {
        K::IsolateMigratepages => E::IsolateMigratepages(MmCompactionIsolate::scan(s)?),
        K::IsolateFreepages => E::IsolateFreepages(MmCompactionIsolate::scan(s)?),
        K::FastIsolateFreepages => E::FastIsolateFreepages(MmCompactionIsolate::scan(s)?),
        K::Migratepages => E::Migratepages(MmCompactionMigratepages::scan(s)?),
        K::Begin => E::Begin(MmCompactionBegin::scan(s)?),
        K::End => E::End(MmCompactionEnd::scan(s)?),
        K::TryToCompactPages => E::TryToCompactPages(MmCompactionTryToCompactPages::scan(s)?),
        K::Finished => E::Finished(MmCompactionSuitable::scan(s)?),
        K::Suitable => E::Suitable(MmCompactionSuitable::scan(s)?),
        K::Deferred => E::Deferred(MmCompactionDefer::scan(s)?),
        K::DeferCompaction => E::DeferCompaction(MmCompactionDefer::scan(s)?),
        K::DeferReset => E::DeferReset(MmCompactionDefer::scan(s)?),
        K::KcompactdSleep => E::KcompactdSleep(MmCompactionKcompactdSleep::scan(s)?),
        K::WakeupKcompactd => E::WakeupKcompactd(KcompactdWake::scan(s)?),
        K::KcompactdWake => E::KcompactdWake(KcompactdWake::scan(s)?),
    })
}

impl fmt::Display for CompactionEvent {
    /// Writes the payload (as [`CompactionEvent::render_payload`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IsolateMigratepages(e) | Self::IsolateFreepages(e) | Self::FastIsolateFreepages(e) => {
                e.fmt(f)
            }
            Self::Migratepages(e) => e.fmt(f),
            Self::Begin(e) => e.fmt(f),
            Self::End(e) => e.fmt(f),
            Self::TryToCompactPages(e) => e.fmt(f),
            Self::Finished(e) | Self::Suitable(e) => e.fmt(f),
            Self::Deferred(e) | Self::DeferCompaction(e) | Self::DeferReset(e) => e.fmt(f),
            Self::KcompactdSleep(e) => e.fmt(f),
            Self::WakeupKcompactd(e) | Self::KcompactdWake(e) => e.fmt(f),
        }
    }
}
