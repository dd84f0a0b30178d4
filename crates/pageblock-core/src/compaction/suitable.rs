//! Is compaction worth running? (`compaction_suit_allocation_order`, `compaction_suitable`,
//! `__compaction_suitable`, `fragmentation_index`, the proactive fragmentation score.)
//!
//! Compaction needs free memory to move pages into: the zone must sit `compact_gap(order)`
//! pages (more for costly orders) above the watermark. And it only helps when the free
//! memory is there but scattered: the fragmentation index tells the two failures apart —
//! near 0 the zone lacks memory (reclaim is the cure), near 1000 its free memory is in
//! blocks too small (compaction is).

use pageblock_formats::extfrag;

use super::{compact_gap, CompactResult};
use crate::config::ZoneType;
use crate::gfp::AllocFlags;
use crate::locks::NodeLocks;
use crate::migratetype::MigrateType;
use crate::node::AllocContext;
use crate::policy::{PageblockSwitch, Policy};
use crate::stats::ZoneStat;
use crate::types::PAGE_ALLOC_COSTLY_ORDER;
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};
use crate::zone::ZoneShared;

/// `fragmentation_index(zone, order)` over every list, HighAtomic, CMA and Isolate
/// included: -1000 if a block of `order` is free; otherwise below 1000, low when the
/// allocation fails for lack of memory, high when it fails for fragmentation (the formulas
/// are [`pageblock_formats::extfrag`]'s, shared with the debugfs reports).
pub fn fragmentation_index(zone: &ZoneShared, order: u32) -> i64 {
    i64::from(extfrag::fragmentation_index(
        &zone.free_areas().nr_free_per_order(zone.config().max_order),
        order,
    ))
}

/// `extfrag_for_order()`: the percentage of free memory in blocks smaller than `order`.
pub fn extfrag_for_order(zone: &ZoneShared, order: u32) -> u64 {
    u64::from(extfrag::extfrag_for_order(
        &zone.free_areas().nr_free_per_order(zone.config().max_order),
        order,
    ))
}

/// `fragmentation_score_zone()`: [`extfrag_for_order`] at the huge page order
/// (`COMPACTION_HPAGE_ORDER`, the pageblock order here), 0..=100.
pub fn fragmentation_score_zone(zone: &ZoneShared) -> u64 {
    extfrag_for_order(zone, zone.config().pageblock_order)
}

/// `__compaction_suitable()`: would `free_pages` leave room to migrate into above `mark`?
fn compaction_suitable_free(
    zone: &ZoneShared,
    order: u32,
    mark: u64,
    idx: ZoneType,
    free_pages: u64,
) -> bool {
    let mut mark = mark + compact_gap(order);
    if order > PAGE_ALLOC_COSTLY_ORDER {
        mark += zone.wmark_pages(WatermarkLevel::Low) - zone.wmark_pages(WatermarkLevel::Min);
    }
    let req = WatermarkRequest { order: 0, flags: AllocFlags::CMA, highest_zoneidx: idx };
    zone.zone_watermark_ok_with(req, mark, free_pages)
}

/// Free pages the free scanner can migrate into for a run at `order`: those on the
/// MIGRATE_MOVABLE and MIGRATE_CMA lists in blocks smaller than `order` (a free block of the
/// order being made is never a target). `None` when the free areas keep no per-type counts.
pub fn migration_target_pages(zone: &ZoneShared, order: u32) -> Option<u64> {
    let areas = zone.free_areas();
    let mut pages = 0;
    for o in 0..order.min(zone.config().pageblock_order) {
        for mt in [MigrateType::Movable, MigrateType::Cma] {
            pages += areas.mt_nr_free(o, mt)? << o;
        }
    }
    Some(pages)
}

/// `compaction_suitable()`: room to migrate into, and — for costly orders — a failure that
/// is due to fragmentation (index above `vm.extfrag_threshold`), not to a lack of memory.
/// With [`PageblockSwitch::CompactionSuitableTargets`], the room must also be where the free scanner
/// can use it ([`migration_target_pages`]).
pub fn compaction_suitable(zone: &ZoneShared, order: u32, mark: u64, idx: ZoneType, policy: &Policy) -> bool {
    if !compaction_suitable_free(zone, order, mark, idx, zone.nr_free_pages()) {
        return false;
    }
    if policy.pageblock_switch(PageblockSwitch::CompactionSuitableTargets)
        && migration_target_pages(zone, order).is_some_and(|t| t < compact_gap(order))
    {
        return false;
    }
    let extfrag_threshold = policy.sysctls.extfrag_threshold();
    if order > PAGE_ALLOC_COSTLY_ORDER {
        let fi = fragmentation_index(zone, order);
        if (0..=i64::from(extfrag_threshold)).contains(&fi) {
            return false;
        }
    }
    true
}

/// What a run is for, as `compaction_suit_allocation_order` needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SuitQuery<'a> {
    pub order: u32,
    pub highest_zoneidx: ZoneType,
    pub alloc_flags: AllocFlags,
    pub asynchronous: bool,
    pub kcompactd: bool,
    pub policy: &'a Policy,
}

/// `compaction_suit_allocation_order()`: `Success` if the watermark at `order` already
/// holds (nothing to do), `Skipped` if compaction cannot help, `Continue` to run it.
/// kcompactd under `defrag_mode` counts only free memory in whole free pageblocks.
pub(crate) fn compaction_suit_allocation_order(zone: &ZoneShared, q: SuitQuery<'_>) -> CompactResult {
    let free = if q.kcompactd && q.policy.sysctls.defrag_mode() {
        zone.counters().zone_stat(ZoneStat::NrFreePagesBlocks)
    } else {
        zone.nr_free_pages()
    };
    let mark = zone.wmark_pages(q.alloc_flags.watermark());
    let req = WatermarkRequest { order: q.order, flags: q.alloc_flags, highest_zoneidx: q.highest_zoneidx };
    if zone.zone_watermark_ok_with(req, mark, free) {
        return CompactResult::Success;
    }
    // Async direct compaction of a costly order without CMA pages to use: skip it unless
    // there is non-CMA free memory to migrate into.
    if q.order > PAGE_ALLOC_COSTLY_ORDER && q.asynchronous && !q.alloc_flags.contains(AllocFlags::CMA) {
        let req0 =
            WatermarkRequest { order: 0, flags: AllocFlags::WMARK_MIN, highest_zoneidx: q.highest_zoneidx };
        if !zone.zone_watermark_ok(req0, mark + compact_gap(q.order)) {
            return CompactResult::Skipped;
        }
    }
    if !compaction_suitable(zone, q.order, mark, q.highest_zoneidx, q.policy) {
        return CompactResult::Skipped;
    }
    CompactResult::Continue
}

/// `compaction_zonelist_suitable()`: after reclaim freed what it could, would compaction
/// have a chance in some zone of the request's zonelist? Never without a page mover.
pub fn compaction_zonelist_suitable<L: NodeLocks + ?Sized>(l: &L, ac: &AllocContext) -> bool {
    if l.mover().is_none() {
        return false;
    }
    let node = l.node();
    for &z in node.zonelist(ac) {
        let zone = node.zone(z as usize);
        // Reclaim frees order-0 pages that may not coalesce: count a fraction of them.
        let available =
            l.zone_reclaimable_pages(z as usize) / u64::from(ac.order.max(1)) + zone.nr_free_pages();
        let min = zone.wmark_pages(WatermarkLevel::Min);
        if compaction_suitable_free(zone, ac.order, min, ac.highest_zoneidx, available) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmentation_index_matches_the_kernels_formula() {
        use extfrag::{fragmentation_index_of, ContigPageInfo};
        // Nothing free: 0. A suitable block: -1000.
        assert_eq!(fragmentation_index_of(&ContigPageInfo::default(), 9, 11), 0);
        let ok = ContigPageInfo { free_pages: 512, free_blocks_total: 1, free_blocks_suitable: 1 };
        assert_eq!(fragmentation_index_of(&ok, 9, 11), -1000);
        // 512 single free pages for an order-9 request: pure fragmentation.
        let scattered = ContigPageInfo { free_pages: 512, free_blocks_total: 512, free_blocks_suitable: 0 };
        assert_eq!(fragmentation_index_of(&scattered, 9, 11), 1000 - (1000 + 1000) / 512);
        // Less free memory than the request in total: the formula goes negative, and
        // compaction_suitable does not refuse on it (only 0..=threshold refuses).
        let short = ContigPageInfo { free_pages: 256, free_blocks_total: 1, free_blocks_suitable: 0 };
        assert_eq!(fragmentation_index_of(&short, 9, 11), 1000 - (1000 + 500));
    }
}
