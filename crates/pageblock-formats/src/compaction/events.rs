//! The compaction event records (one per kernel event class), each with its strict parser and
//! its `TP_printk` rendering.

use std::fmt;

use super::symbols::{CompactResult, ZoneType};
use crate::gfp::Gfp;
use crate::scan::Scan;
use crate::text::{pad_right, quote};
use crate::ParseError;

/// Width of the `%-8s` zone fields.
const ZONE_WIDTH: usize = 8;

/// A zone field (`%-8s` of `__print_symbolic`).
fn scan_zone(s: &mut Scan<'_>, what: &str) -> Result<ZoneType, ParseError> {
    let tok = s.s_left(ZONE_WIDTH, what)?;
    ZoneType::parse(tok, what).map_err(|e| s.error(e))
}

/// A compaction result field (`%s` of `__print_symbolic`).
fn scan_result(s: &mut Scan<'_>, what: &str) -> Result<CompactResult, ParseError> {
    let tok = s.s(what)?;
    CompactResult::parse(tok, what).map_err(|e| s.error(e))
}

/// Writes a zone as `%-8s`.
fn write_zone(f: &mut fmt::Formatter<'_>, zone: ZoneType) -> fmt::Result {
    pad_right(f, &zone.render(), ZONE_WIDTH)
}

/// `node=%d zone=%-8s order=%d`, how the suitable and the defer classes start.
fn scan_node_zone_order(s: &mut Scan<'_>) -> Result<(i32, ZoneType, i32), ParseError> {
    s.lit("node=")?;
    let nid = s.d("node")?;
    s.lit(" zone=")?;
    let idx = scan_zone(s, "zone")?;
    s.lit(" order=")?;
    Ok((nid, idx, s.d("order")?))
}

/// Writes `node=%d zone=%-8s order=%d`.
fn write_node_zone_order(f: &mut fmt::Formatter<'_>, nid: i32, idx: ZoneType, order: i32) -> fmt::Result {
    write!(f, "node={nid} zone=")?;
    write_zone(f, idx)?;
    write!(f, " order={order}")
}

/// `mm_compaction_begin`: `compact_zone()` starts; where the two scanners start in the zone.
///
/// `zone_start=0x%lx migrate_pfn=0x%lx free_pfn=0x%lx zone_end=0x%lx, mode=%s`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionBegin {
    /// First pfn of the zone.
    pub zone_start: u64,
    /// Where the migration scanner starts (it moves up).
    pub migrate_pfn: u64,
    /// Where the free scanner starts (it moves down).
    pub free_pfn: u64,
    /// End pfn of the zone (exclusive).
    pub zone_end: u64,
    /// `mode=sync` (true) or `mode=async`.
    pub sync: bool,
}

impl MmCompactionBegin {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("zone_start=0x")?;
        let zone_start = s.lx("zone_start")?;
        s.lit(" migrate_pfn=0x")?;
        let migrate_pfn = s.lx("migrate_pfn")?;
        s.lit(" free_pfn=0x")?;
        let free_pfn = s.lx("free_pfn")?;
        s.lit(" zone_end=0x")?;
        let zone_end = s.lx("zone_end")?;
        s.lit(", mode=")?;
        let sync = match s.s("mode")? {
            "sync" => true,
            "async" => false,
            other => return Err(s.error(format!("mode: expected `sync` or `async`, found {}", quote(other)))),
        };
        Ok(MmCompactionBegin { zone_start, migrate_pfn, free_pfn, zone_end, sync })
    }
}

impl fmt::Display for MmCompactionBegin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "zone_start={:#x} migrate_pfn={:#x} free_pfn={:#x} zone_end={:#x}, mode={}",
            self.zone_start,
            self.migrate_pfn,
            self.free_pfn,
            self.zone_end,
            if self.sync { "sync" } else { "async" }
        )
    }
}

/// `mm_compaction_end`: `compact_zone()` returns; where the scanners stopped, and why.
///
/// `zone_start=0x%lx migrate_pfn=0x%lx free_pfn=0x%lx zone_end=0x%lx, mode=%s status=%s`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionEnd {
    /// The fields `mm_compaction_begin` prints too (here: where the scanners stopped).
    pub scanners: MmCompactionBegin,
    /// `status`.
    pub status: CompactResult,
}

impl MmCompactionEnd {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        let scanners = MmCompactionBegin::scan(s)?;
        s.lit(" status=")?;
        Ok(MmCompactionEnd { scanners, status: scan_result(s, "status")? })
    }
}

impl fmt::Display for MmCompactionEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} status={}", self.scanners, self.status)
    }
}

/// Class `mm_compaction_isolate_template`: `mm_compaction_isolate_migratepages`,
/// `mm_compaction_isolate_freepages`, `mm_compaction_fast_isolate_freepages`.
///
/// `range=(0x%lx ~ 0x%lx) nr_scanned=%lu nr_taken=%lu`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionIsolate {
    /// First pfn scanned.
    pub start_pfn: u64,
    /// Where the scan stopped.
    pub end_pfn: u64,
    /// Pages looked at.
    pub nr_scanned: u64,
    /// Pages isolated.
    pub nr_taken: u64,
}

impl MmCompactionIsolate {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("range=(0x")?;
        let start_pfn = s.lx("start_pfn")?;
        s.lit(" ~ 0x")?;
        let end_pfn = s.lx("end_pfn")?;
        s.lit(") nr_scanned=")?;
        let nr_scanned = s.lu("nr_scanned")?;
        s.lit(" nr_taken=")?;
        let nr_taken = s.lu("nr_taken")?;
        Ok(MmCompactionIsolate { start_pfn, end_pfn, nr_scanned, nr_taken })
    }
}

impl fmt::Display for MmCompactionIsolate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "range=({:#x} ~ {:#x}) nr_scanned={} nr_taken={}",
            self.start_pfn, self.end_pfn, self.nr_scanned, self.nr_taken
        )
    }
}

/// `mm_compaction_migratepages`: one `migrate_pages()` pass of compaction.
///
/// `nr_migrated=%lu nr_failed=%lu`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionMigratepages {
    /// Pages moved.
    pub nr_migrated: u64,
    /// Pages that could not be moved.
    pub nr_failed: u64,
}

impl MmCompactionMigratepages {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("nr_migrated=")?;
        let nr_migrated = s.lu("nr_migrated")?;
        s.lit(" nr_failed=")?;
        Ok(MmCompactionMigratepages { nr_migrated, nr_failed: s.lu("nr_failed")? })
    }
}

impl fmt::Display for MmCompactionMigratepages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nr_migrated={} nr_failed={}", self.nr_migrated, self.nr_failed)
    }
}

/// `mm_compaction_try_to_compact_pages`: direct compaction entered from the allocator's
/// slow path.
///
/// `order=%d gfp_mask=%s priority=%d` (gfp as in `mm_page_alloc`, `none` for 0)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionTryToCompactPages {
    /// The allocation's order.
    pub order: i32,
    /// The allocation's gfp mask.
    pub gfp_mask: Gfp,
    /// `enum compact_priority` (`priority=`): 0 sync full, 1 sync light, 2 async.
    pub prio: i32,
}

impl MmCompactionTryToCompactPages {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("order=")?;
        let order = s.d("order")?;
        s.lit(" gfp_mask=")?;
        let tok = s.s("gfp_mask")?;
        let gfp_mask = Gfp::parse(tok).map_err(|e| s.error(format!("gfp_mask: {}", e.reason)))?;
        if gfp_mask.render() != tok {
            return Err(
                s.error(format!("gfp_mask: {} is not how the kernel prints {gfp_mask:?}", quote(tok)))
            );
        }
        s.lit(" priority=")?;
        Ok(MmCompactionTryToCompactPages { order, gfp_mask, prio: s.d("priority")? })
    }
}

impl fmt::Display for MmCompactionTryToCompactPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "order={} gfp_mask={} priority={}", self.order, self.gfp_mask, self.prio)
    }
}

/// Class `mm_compaction_suitable_template`: `mm_compaction_suitable` (may this zone be
/// compacted for `order`?) and `mm_compaction_finished` (may compaction stop?).
///
/// `node=%d zone=%-8s order=%d ret=%s`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionSuitable {
    /// Node id.
    pub nid: i32,
    /// The zone (`zone_idx`).
    pub idx: ZoneType,
    /// Requested order.
    pub order: i32,
    /// The answer.
    pub ret: CompactResult,
}

impl MmCompactionSuitable {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        let (nid, idx, order) = scan_node_zone_order(s)?;
        s.lit(" ret=")?;
        Ok(MmCompactionSuitable { nid, idx, order, ret: scan_result(s, "ret")? })
    }
}

impl fmt::Display for MmCompactionSuitable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_node_zone_order(f, self.nid, self.idx, self.order)?;
        write!(f, " ret={}", self.ret)
    }
}

/// Class `mm_compaction_defer_template`: `mm_compaction_deferred`,
/// `mm_compaction_defer_compaction`, `mm_compaction_defer_reset` (the zone's deferral state).
///
/// `node=%d zone=%-8s order=%d order_failed=%d consider=%u limit=%lu`, where `limit` is
/// `1UL << defer_shift`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionDefer {
    /// Node id.
    pub nid: i32,
    /// The zone.
    pub idx: ZoneType,
    /// Requested order.
    pub order: i32,
    /// `compact_order_failed`.
    pub order_failed: i32,
    /// `compact_considered` (`consider=`).
    pub considered: u32,
    /// `compact_defer_shift` (printed as `limit=1 << defer_shift`; the kernel caps it at 6,
    /// and a shift of 64 or more renders as the x86 shift instruction computes it).
    pub defer_shift: u32,
}

impl MmCompactionDefer {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        let (nid, idx, order) = scan_node_zone_order(s)?;
        s.lit(" order_failed=")?;
        let order_failed = s.d("order_failed")?;
        s.lit(" consider=")?;
        let considered = s.u("consider")?;
        s.lit(" limit=")?;
        let limit = s.lu("limit")?;
        if !limit.is_power_of_two() {
            return Err(s.error(format!("limit: {limit} is not a power of two (`1UL << defer_shift`)")));
        }
        Ok(MmCompactionDefer {
            nid,
            idx,
            order,
            order_failed,
            considered,
            defer_shift: limit.trailing_zeros(),
        })
    }

    /// `limit=`: `1UL << defer_shift`.
    pub fn limit(&self) -> u64 {
        1u64.wrapping_shl(self.defer_shift)
    }
}

impl fmt::Display for MmCompactionDefer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_node_zone_order(f, self.nid, self.idx, self.order)?;
        write!(f, " order_failed={} consider={} limit={}", self.order_failed, self.considered, self.limit())
    }
}

/// `mm_compaction_kcompactd_sleep`: kcompactd of node `nid` goes to sleep.
///
/// `nid=%d`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmCompactionKcompactdSleep {
    /// Node id.
    pub nid: i32,
}

impl MmCompactionKcompactdSleep {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("nid=")?;
        Ok(MmCompactionKcompactdSleep { nid: s.d("nid")? })
    }
}

impl fmt::Display for MmCompactionKcompactdSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nid={}", self.nid)
    }
}

/// Class `kcompactd_wake_template`: `mm_compaction_wakeup_kcompactd` (someone wakes
/// kcompactd) and `mm_compaction_kcompactd_wake` (kcompactd starts working).
///
/// `nid=%d order=%d classzone_idx=%-8s` — the line ends in the zone name's padding spaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KcompactdWake {
    /// Node id.
    pub nid: i32,
    /// Order to compact for.
    pub order: i32,
    /// Highest zone the request may use (`classzone_idx=`).
    pub highest_zoneidx: ZoneType,
}

impl KcompactdWake {
    pub(super) fn scan(s: &mut Scan<'_>) -> Result<Self, ParseError> {
        s.lit("nid=")?;
        let nid = s.d("nid")?;
        s.lit(" order=")?;
        let order = s.d("order")?;
        s.lit(" classzone_idx=")?;
        Ok(KcompactdWake { nid, order, highest_zoneidx: scan_zone(s, "classzone_idx")? })
    }
}

impl fmt::Display for KcompactdWake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nid={} order={} classzone_idx=", self.nid, self.order)?;
        write_zone(f, self.highest_zoneidx)
    }
}
