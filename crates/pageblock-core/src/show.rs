//! The kernel's reports about a zone, as `pageblock-formats` models that render byte for byte
//! (`mm/vmstat.c`: `frag_show_print`, `pagetypeinfo_show*`, `zoneinfo_show_print`,
//! `vmstat_show`, `unusable_show_print`, `extfrag_show_print`; kmem tracepoints).
//!
//! Reports built from [`ZoneShared`] need no zone lock: they read counters and pageblock bits
//! only. The walking form of `/proc/pagetypeinfo` needs the lists, hence `&Zone` (the lock).
//!
//! The simulated machine has one node and one populated zone; reports that list every zone
//! (zoneinfo, vmstat's per-zone events) print the other zone types as unpopulated, as a real
//! single-zone machine would.

use pageblock_formats::buddyinfo::{BuddyInfo, BuddyInfoZone};
use pageblock_formats::extfrag::{ExtfragIndex, UnusableIndex};
use pageblock_formats::kmem::{self, KmemEvent};
use pageblock_formats::pagetypeinfo::{PageTypeInfo, PageTypeInfoNode, ZoneCounts, FREE_COUNT_CAP};
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::{Pageset, PopulatedZone, ZoneInfo, ZoneInfoZone};

use crate::config::{ZoneConfig, ZoneType, MAX_NR_ZONES};
use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::pcp;
use crate::stats::{VmEvent, ZoneStat};
use crate::trace::TraceEvent;
use crate::zone::{Zone, ZoneShared};

/// How `/proc/pagetypeinfo` counts free blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagetypeinfoMode {
    /// Read the per-migratetype counts (seed 000): no zone lock, O(orders × types). The
    /// counts are exact, so they are printed exactly: the rows sum to buddyinfo always.
    Counts,
    /// Read the per-migratetype counts but print counts of 100000 or more as `>100000`, as
    /// the seed 000 patch does to keep the old output for existing tools.
    CountsCapped,
    /// Walk every free list under the zone lock, stopping at 100000 entries (the kernel
    /// before seed 000): O(free blocks).
    Walk,
}

/// The migratetypes the kernel's reports list for this configuration, in ABI order: CMA only
/// with CONFIG_CMA.
pub fn reported_migratetypes(cfg: &ZoneConfig) -> Vec<MigrateType> {
    MigrateType::ALL.into_iter().filter(|&mt| mt != MigrateType::Cma || cfg.config_cma).collect()
}

/// The number a tracepoint prints for `mt` in this configuration (`enum migratetype` is
/// renumbered when CMA is not configured: Isolate is 4 then).
pub fn abi_migratetype(cfg: &ZoneConfig, mt: MigrateType) -> i32 {
    if !cfg.config_cma && mt == MigrateType::Isolate {
        return 4;
    }
    mt as i32
}

/// `/proc/buddyinfo`.
pub fn buddyinfo(z: &ZoneShared) -> BuddyInfo {
    let cfg = z.config();
    let nr_free = (0..=cfg.max_order).map(|o| z.free_areas().nr_free(o)).collect();
    BuddyInfo {
        zones: vec![BuddyInfoZone { node: cfg.node, zone: cfg.zone_type.name().to_owned(), nr_free }],
    }
}

/// Pageblocks of each reported type (in [`reported_migratetypes`] order), counted the
/// kernel's way: from `zone_start_pfn` in pageblock strides to the zone end.
pub fn pageblock_counts(z: &ZoneShared) -> Vec<u64> {
    block_counts(z, &reported_migratetypes(z.config()))
}

/// [`pageblock_counts`] for the given types (an unaligned zone start samples each block once).
fn block_counts(z: &ZoneShared, types: &[MigrateType]) -> Vec<u64> {
    let cfg = z.config();
    let pb = 1u64 << cfg.pageblock_order;
    let mut counts = vec![0u64; types.len()];
    let mut pfn = cfg.start_pfn;
    while pfn < cfg.end_pfn() {
        let mt = z.pageblock_migratetype(pfn);
        if let Some(i) = types.iter().position(|&t| t == mt) {
            counts[i] += 1;
        }
        pfn += pb;
    }
    counts
}

fn pagetypeinfo_from(
    z: &ZoneShared,
    cap: bool,
    free_count: impl Fn(u32, MigrateType) -> u64,
) -> PageTypeInfo {
    let cfg = z.config();
    let types = reported_migratetypes(cfg);
    let free = types.iter().map(|&mt| (0..=cfg.max_order).map(|o| free_count(o, mt)).collect()).collect();
    let zone = ZoneCounts {
        node: cfg.node,
        zone: cfg.zone_type.name().to_owned(),
        free,
        blocks: block_counts(z, &types),
    };
    let names: Vec<&str> = types.iter().map(|mt| mt.name()).collect();
    let orders = cfg.max_order as usize + 1;
    let node = PageTypeInfoNode::from_counts(cfg.pageblock_order, orders, &names, &[zone], cap);
    PageTypeInfo { nodes: vec![node] }
}

/// `/proc/pagetypeinfo` from the per-migratetype counts, without the zone lock (seed 000).
/// `None` if the zone's free-area layout keeps no per-type counts
/// ([`crate::free_area::FreeAreaLayout::Plain`], the kernel before the patch): walk instead.
pub fn pagetypeinfo_counts(z: &ZoneShared, mode: PagetypeinfoMode) -> Option<PageTypeInfo> {
    let fa = z.free_areas();
    fa.mt_nr_free(0, MigrateType::Unmovable)?;
    Some(pagetypeinfo_from(z, mode != PagetypeinfoMode::Counts, |o, mt| fa.mt_nr_free(o, mt).unwrap_or(0)))
}

/// One order's part of the list walk: the length of each reported migratetype's list,
/// counting no further than 100000 (the kernel's lockup guard). The kernel takes the zone
/// lock for one order at a time; so can a caller of this.
pub fn walk_free_counts(zone: &Zone, order: u32) -> Vec<u64> {
    reported_migratetypes(zone.config())
        .into_iter()
        .map(|mt| zone.free_list(order, mt).take(FREE_COUNT_CAP as usize).count() as u64)
        .collect()
}

/// `/proc/pagetypeinfo` from walked counts: `walked[order][i]` for the i-th reported type
/// (from [`walk_free_counts`]), printed with the cap.
pub fn pagetypeinfo_from_walk(z: &ZoneShared, walked: &[Vec<u64>]) -> PageTypeInfo {
    let types = reported_migratetypes(z.config());
    pagetypeinfo_from(z, true, |o, mt| {
        let i = types.iter().position(|&t| t == mt).unwrap_or(0);
        walked.get(o as usize).and_then(|w| w.get(i)).copied().unwrap_or(0)
    })
}

/// `/proc/pagetypeinfo` by walking the free lists, stopping each count at 100000. Reads the
/// lists, so it needs the zone (its lock).
pub fn pagetypeinfo_walk(zone: &Zone) -> PageTypeInfo {
    let walked: Vec<Vec<u64>> = (0..=zone.max_order()).map(|o| walk_free_counts(zone, o)).collect();
    pagetypeinfo_from_walk(zone.shared(), &walked)
}

/// `/proc/pagetypeinfo` as the zone's policy reads it: exact counts with
/// `Policy::pagetypeinfo_from_counts` (seed 000), else the capped list walk.
pub fn pagetypeinfo_by_policy(zone: &Zone) -> PageTypeInfo {
    let mode = if zone.policy().pagetypeinfo_from_counts {
        PagetypeinfoMode::Counts
    } else {
        PagetypeinfoMode::Walk
    };
    pagetypeinfo(zone, mode)
}

/// `/proc/pagetypeinfo` in `mode`.
pub fn pagetypeinfo(zone: &Zone, mode: PagetypeinfoMode) -> PageTypeInfo {
    match mode {
        PagetypeinfoMode::Counts | PagetypeinfoMode::CountsCapped => {
            pagetypeinfo_counts(zone.shared(), mode).unwrap_or_else(|| pagetypeinfo_walk(zone))
        }
        PagetypeinfoMode::Walk => pagetypeinfo_walk(zone),
    }
}

/// Per reported pageblock type: pageblocks holding at least one allocated block whose
/// owner's migratetype differs from the pageblock's (the "Number of mixed blocks" table the
/// kernel prints with `page_owner` enabled). Reads the memmap without the zone lock, as
/// the kernel does, so it is a snapshot that may be slightly inconsistent under concurrency.
pub fn mixed_block_counts(z: &ZoneShared) -> Vec<u64> {
    let cfg = z.config();
    let types = reported_migratetypes(cfg);
    let pbo = cfg.pageblock_order;
    let first_block = cfg.start_pfn >> pbo;
    let mut mixed = vec![false; z.pageblocks().len()];
    let allocated =
        z.memmap().extents(0, cfg.present_pages as u32).filter(|e| e.info.state == PageState::Allocated);
    for e in allocated {
        let pfn = cfg.start_pfn + e.idx as u64;
        for b in ((pfn >> pbo) - first_block)..=(((pfn + e.pages - 1) >> pbo) - first_block) {
            if z.pageblocks().migratetype(b as usize) != e.info.tag.migratetype {
                mixed[b as usize] = true;
            }
        }
    }
    let mut counts = vec![0u64; types.len()];
    for (b, _) in mixed.iter().enumerate().filter(|(_, m)| **m) {
        if let Some(i) = types.iter().position(|&t| t == z.pageblocks().migratetype(b)) {
            counts[i] += 1;
        }
    }
    counts
}

/// Add the page_owner "Number of mixed blocks" table to a pagetypeinfo report of this zone.
pub fn add_mixed_blocks(report: &mut PageTypeInfo, z: &ZoneShared) {
    let cfg = z.config();
    for node in report.nodes.iter_mut() {
        let mut table = node.blocks.clone();
        for row in table.rows.iter_mut().filter(|r| r.zone == cfg.zone_type.name()) {
            row.counts = mixed_block_counts(z);
        }
        node.mixed = Some(table);
    }
}

fn unpopulated_zone(node: u32, t: ZoneType) -> ZoneInfoZone {
    // ZONE_MOVABLE keeps a floor under its (empty) watermarks; the others compute to 0.
    let wm = if t == ZoneType::Movable { 32 } else { 0 };
    ZoneInfoZone {
        node,
        zone: t.name().to_owned(),
        node_stats: None,
        pages_free: 0,
        boost: 0,
        min: wm,
        low: wm,
        high: wm,
        promo: Some(wm),
        spanned: 0,
        present: 0,
        managed: 0,
        cma: 0,
        protection: vec![0; MAX_NR_ZONES],
        populated: None,
    }
}

/// `/proc/zoneinfo`: every zone type of the node; ours populated. Per-node LRU statistics
/// are not modelled and not printed. `pagesets` shows each CPU's cached pages and current high
/// mark (0 until the CPU first uses its lists, as in the kernel) with the zone's limits.
pub fn zoneinfo(z: &ZoneShared) -> ZoneInfo {
    let cfg = z.config();
    let c = z.counters();
    let wm = c.watermarks();
    let boost = c.watermark_boost();
    let limits = z.pageset();
    let threshold = pcp::stat_threshold(cfg.nr_cpus, cfg.present_pages) as i32;
    let pagesets = (0..cfg.nr_cpus)
        .map(|cpu| Pageset {
            cpu,
            count: c.cpu(cpu as usize).count() as i32,
            high: c.cpu(cpu as usize).high() as i32,
            batch: limits.batch as i32,
            high_min: Some(limits.high_min as i32),
            high_max: Some(limits.high_max as i32),
            stat_threshold: threshold,
        })
        .collect();
    let stats = ZoneStat::ALL.iter().map(|&s| (s.name().to_owned(), c.zone_stat(s))).collect();
    let ours = ZoneInfoZone {
        node: cfg.node,
        zone: cfg.zone_type.name().to_owned(),
        node_stats: None,
        pages_free: c.zone_stat(ZoneStat::NrFreePages),
        boost,
        min: wm.min + boost,
        low: wm.low + boost,
        high: wm.high + boost,
        promo: Some(wm.promo + boost),
        spanned: cfg.present_pages,
        present: cfg.present_pages,
        managed: cfg.present_pages,
        cma: cfg.cma_pages,
        protection: vec![0; MAX_NR_ZONES],
        populated: Some(PopulatedZone { stats, pagesets, node_unreclaimable: 0, start_pfn: cfg.start_pfn }),
    };
    let zones = ZoneType::ALL
        .into_iter()
        .map(|t| if t == cfg.zone_type { ours.clone() } else { unpopulated_zone(cfg.node, t) })
        .collect();
    ZoneInfo { zones }
}

/// `/proc/vmstat`: the zone statistics and the events the kernel prints under the same
/// names, in the kernel's order, ending with the deprecated `nr_unstable 0`.
pub fn vmstat(z: &ZoneShared) -> VmStat {
    let cfg = z.config();
    let c = z.counters();
    let mut items: Vec<(String, u64)> =
        ZoneStat::ALL.iter().map(|&s| (s.name().to_owned(), c.zone_stat(s))).collect();
    for t in ZoneType::ALL {
        let v = if t == cfg.zone_type { c.event(VmEvent::PgAlloc) } else { 0 };
        items.push((format!("pgalloc_{}", t.vmstat_suffix()), v));
    }
    for &ev in VmEvent::ALL {
        if ev.in_kernel_vmstat() && ev != VmEvent::PgAlloc {
            items.push((ev.name().to_owned(), c.event(ev)));
        }
    }
    items.push(("nr_unstable".to_owned(), 0));
    VmStat { items }
}

/// Every counter, kernel and pageblock-specific, as `(name, value)` in declaration order.
pub fn all_counters(z: &ZoneShared) -> Vec<(&'static str, u64)> {
    let c = z.counters();
    let mut v: Vec<(&'static str, u64)> = ZoneStat::ALL.iter().map(|&s| (s.name(), c.zone_stat(s))).collect();
    v.extend(VmEvent::ALL.iter().map(|&e| (e.name(), c.event(e))));
    v.push(("nr_free_highatomic", c.nr_free_highatomic()));
    v.push(("nr_reserved_highatomic", c.nr_reserved_highatomic()));
    v.push(("watermark_boost_pages", c.watermark_boost()));
    v
}

/// debugfs `extfrag/unusable_index`.
pub fn unusable_index(z: &ZoneShared) -> UnusableIndex {
    UnusableIndex::from_buddyinfo(&buddyinfo(z))
}

/// debugfs `extfrag/extfrag_index`.
pub fn extfrag_index(z: &ZoneShared) -> ExtfragIndex {
    ExtfragIndex::from_buddyinfo(&buddyinfo(z))
}

/// A trace event as the kernel's kmem tracepoint prints it in this configuration.
pub fn kmem_event(cfg: &ZoneConfig, ev: &TraceEvent) -> KmemEvent {
    let abi = |mt| abi_migratetype(cfg, mt);
    match *ev {
        TraceEvent::PageAlloc { pfn, order, migratetype, gfp } => {
            KmemEvent::PageAlloc(kmem::MmPageAlloc::new(pfn, order, abi(migratetype), gfp))
        }
        TraceEvent::PageFree { pfn, order } => KmemEvent::PageFree(kmem::MmPageFree::new(pfn, order)),
        TraceEvent::PageAllocZoneLocked { pfn, order, migratetype, percpu_refill } => {
            KmemEvent::PageAllocZoneLocked(kmem::MmPageAllocZoneLocked::new(
                Some(pfn),
                order,
                abi(migratetype),
                percpu_refill,
            ))
        }
        TraceEvent::PagePcpuDrain { pfn, order, migratetype } => {
            KmemEvent::PagePcpuDrain(kmem::MmPagePcpuDrain::new(pfn, order, abi(migratetype)))
        }
        TraceEvent::PageAllocExtfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            change_ownership,
        } => KmemEvent::PageAllocExtfrag(kmem::MmPageAllocExtfrag::new(
            pfn,
            alloc_order as i32,
            fallback_order as i32,
            cfg.pageblock_order as i32,
            abi(alloc_migratetype),
            abi(fallback_migratetype),
            change_ownership,
        )),
    }
}
