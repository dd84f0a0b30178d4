//! The kernel's reports about a node, as `pageblock-formats` models that render byte for byte
//! (`mm/vmstat.c`: `frag_show_print`, `pagetypeinfo_show*`, `zoneinfo_show_print`,
//! `vmstat_show`, `unusable_show_print`, `extfrag_show_print`; `mm/page_owner.c`'s mixed-block
//! count; kmem tracepoints).
//!
//! Reports built from [`NodeShared`] need no lock: they read counters, pageblock bits and the
//! memmap. The walking form of `/proc/pagetypeinfo` needs the lists, so it takes each zone's
//! lock through [`NodeLocks`], one order at a time as the kernel does.
//!
//! zoneinfo and vmstat print every line a 6.18 kernel prints (`crate::vmstat_items`). The
//! allocation, compaction, reclaim, swap and THP events this model counts carry their values;
//! what it does not keep as kernel counters (LRU and slab sizes, NUMA balancing, ...) prints
//! as 0.

use pageblock_formats::buddyinfo::{BuddyInfo, BuddyInfoZone};
use pageblock_formats::extfrag::{ExtfragIndex, UnusableIndex};
use pageblock_formats::kmem::{self, KmemEvent};
use pageblock_formats::pagetypeinfo::{PageTypeInfo, PageTypeInfoNode, ZoneCounts, FREE_COUNT_CAP};
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::{Pageset, PopulatedZone, ZoneInfo, ZoneInfoZone};

use crate::config::{ZoneType, MAX_NR_ZONES};
use crate::locks::NodeLocks;
use crate::memmap::{Memmap, PageState};
use crate::migratetype::MigrateType;
use crate::node::NodeShared;
use crate::pcp;
use crate::stats::{VmEvent, ZoneStat};
use crate::trace::TraceEvent;
use crate::vmstat_items::{vmstat_items, NODE_STAT_ITEMS, ZONE_STAT_ITEMS};
use crate::zone::{Zone, ZoneShared};

/// How `/proc/pagetypeinfo` counts free blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagetypeinfoMode {
    /// Read the per-migratetype counts (seed 000) and print 100000 or more as `>100000`, as
    /// 6.18 and the seed patch both do (the default: byte-compatible with the kernel).
    CountsCapped,
    /// Read the per-migratetype counts and print them exactly, so the rows always sum to
    /// buddyinfo (pageblock's own, non-kernel output).
    Counts,
    /// Walk every free list under the zone lock, stopping at 100000 entries (the kernel
    /// before seed 000): O(free blocks).
    Walk,
}

/// The migratetypes the kernel's reports list for this configuration, in ABI order: CMA only
/// with CONFIG_CMA.
pub fn reported_migratetypes(config_cma: bool) -> Vec<MigrateType> {
    MigrateType::ALL.into_iter().filter(|&mt| mt != MigrateType::Cma || config_cma).collect()
}

/// The number a tracepoint prints for `mt` in this configuration (`enum migratetype` is
/// renumbered when CMA is not configured: Isolate is 4 then).
pub fn abi_migratetype(config_cma: bool, mt: MigrateType) -> i32 {
    if !config_cma && mt == MigrateType::Isolate {
        return 4;
    }
    mt as i32
}

fn config_cma(node: &NodeShared) -> bool {
    node.zone(0).config().config_cma
}

/// `/proc/buddyinfo`: one line per populated zone.
pub fn buddyinfo(node: &NodeShared) -> BuddyInfo {
    let zones = node
        .zones()
        .iter()
        .map(|z| {
            let cfg = z.config();
            let nr_free = z.free_areas().nr_free_per_order(cfg.max_order);
            BuddyInfoZone { node: cfg.node, zone: cfg.zone_type.name().to_owned(), nr_free }
        })
        .collect();
    BuddyInfo { zones }
}

/// Pageblocks of each reported type (in [`reported_migratetypes`] order) in zone `z`,
/// counted the kernel's way: from the zone's first pfn in pageblock strides to its end.
pub fn pageblock_counts(z: &ZoneShared) -> Vec<u64> {
    block_counts(z, &reported_migratetypes(z.config().config_cma))
}

fn block_counts(z: &ZoneShared, types: &[MigrateType]) -> Vec<u64> {
    let cfg = z.config();
    let pb = 1u64 << cfg.pageblock_order;
    let mut counts = vec![0u64; types.len()];
    let mut pfn = cfg.start_pfn;
    while pfn < cfg.end_pfn() {
        // pfn_to_online_page(): offline memory has no pageblocks to count.
        let online = !z.page_offline(pfn);
        if let Some(i) = types.iter().position(|&t| t == z.pageblock_migratetype(pfn)).filter(|_| online) {
            counts[i] += 1;
        }
        pfn += pb;
    }
    counts
}

/// `/proc/pagetypeinfo` of `node` with free counts from `free_count(zone, order, type)`.
fn pagetypeinfo_from(
    node: &NodeShared,
    cap: bool,
    free_count: impl Fn(usize, u32, MigrateType) -> u64,
) -> PageTypeInfo {
    let first = node.zone(0).config();
    let types = reported_migratetypes(first.config_cma);
    let zones: Vec<ZoneCounts> = node
        .zones()
        .iter()
        .enumerate()
        .map(|(i, z)| ZoneCounts {
            node: z.config().node,
            zone: z.config().zone_type.name().to_owned(),
            free: types
                .iter()
                .map(|&mt| (0..=first.max_order).map(|o| free_count(i, o, mt)).collect())
                .collect(),
            blocks: block_counts(z, &types),
        })
        .collect();
    let names: Vec<&str> = types.iter().map(|mt| mt.name()).collect();
    let orders = first.max_order as usize + 1;
    PageTypeInfo {
        nodes: vec![PageTypeInfoNode::from_counts(first.pageblock_order, orders, &names, &zones, cap)],
    }
}

/// `/proc/pagetypeinfo` from the per-migratetype counts, without any lock (seed 000).
/// `None` if the free-area layout keeps no per-type counts
/// ([`crate::policy::FreeAreaLayout::Plain`], the kernel before the patch): walk instead.
pub fn pagetypeinfo_counts(node: &NodeShared, mode: PagetypeinfoMode) -> Option<PageTypeInfo> {
    node.zone(0).free_areas().mt_nr_free(0, MigrateType::Unmovable)?;
    let cap = mode != PagetypeinfoMode::Counts;
    Some(pagetypeinfo_from(node, cap, |z, o, mt| node.zone(z).free_areas().mt_nr_free(o, mt).unwrap_or(0)))
}

/// One order's part of the list walk in one zone: the length of each reported migratetype's
/// list, counting no further than 100000 (the kernel's lockup guard). The kernel takes the
/// zone lock for one order at a time; so does [`pagetypeinfo_walk`].
pub fn walk_free_counts(zone: &Zone, order: u32) -> Vec<u64> {
    reported_migratetypes(zone.config().config_cma)
        .into_iter()
        .map(|mt| zone.free_list(order, mt).take(FREE_COUNT_CAP as usize).count() as u64)
        .collect()
}

/// `/proc/pagetypeinfo` by walking the free lists, taking each zone's lock once per order.
pub fn pagetypeinfo_walk<L: NodeLocks + ?Sized>(l: &L) -> PageTypeInfo {
    let node = l.node();
    let walked: Vec<Vec<Vec<u64>>> = (0..node.zones().len())
        .map(|z| (0..=node.max_order()).map(|o| walk_free_counts(&l.lock_zone(z), o)).collect())
        .collect();
    let types = reported_migratetypes(config_cma(node));
    pagetypeinfo_from(node, true, |z, o, mt| {
        let i = types.iter().position(|&t| t == mt).unwrap_or(0);
        walked[z][o as usize][i]
    })
}

/// `/proc/pagetypeinfo` in `mode` (the counting modes walk when the layout keeps no counts).
pub fn pagetypeinfo<L: NodeLocks + ?Sized>(l: &L, mode: PagetypeinfoMode) -> PageTypeInfo {
    match mode {
        PagetypeinfoMode::Counts | PagetypeinfoMode::CountsCapped => {
            pagetypeinfo_counts(l.node(), mode).unwrap_or_else(|| pagetypeinfo_walk(l))
        }
        PagetypeinfoMode::Walk => pagetypeinfo_walk(l),
    }
}

/// `/proc/pagetypeinfo` as the node's policy reads it: the capped counts with
/// `SeedPatches::pagetypeinfo_from_counts` (seed 000), else the capped list walk — both as 6.18
/// prints them.
pub fn pagetypeinfo_by_policy<L: NodeLocks + ?Sized>(l: &L) -> PageTypeInfo {
    let mode = if l.node().policy().seed_patches.pagetypeinfo_from_counts {
        PagetypeinfoMode::CountsCapped
    } else {
        PagetypeinfoMode::Walk
    };
    pagetypeinfo(l, mode)
}

/// Per reported pageblock type, the pageblocks of zone `z` that page_owner calls mixed
/// (`pagetypeinfo_showmixedcount_print`): scanning each pageblock, the first allocated page
/// whose owner's migratetype differs from the block's counts the block — under Movable if the
/// block is CMA — and ends its scan. Free blocks are skipped whole; an allocated block whose
/// type matches is skipped by its order, which steps over the rest of a multi-pageblock
/// allocation (only its first pageblock is examined). Reads the memmap without any lock, as
/// the kernel does.
pub fn mixed_block_counts(z: &ZoneShared) -> Vec<u64> {
    let cfg = z.config();
    let types = reported_migratetypes(cfg.config_cma);
    let mm = z.memmap();
    let pb = 1u64 << cfg.pageblock_order;
    let mut counts = vec![0u64; types.len()];
    let mut pfn = cfg.start_pfn;
    while pfn < cfg.end_pfn() {
        let block_end = ((pfn | (pb - 1)) + 1).min(cfg.end_pfn());
        let block_mt = z.pageblock_migratetype(pfn);
        while pfn < block_end {
            let Some((state, owner_mt, order)) = owner_of(mm, cfg.start_pfn, pfn) else {
                pfn += 1;
                continue;
            };
            if state == PageState::Allocated && owner_mt != block_mt {
                let counted = if block_mt == MigrateType::Cma { MigrateType::Movable } else { block_mt };
                if let Some(i) = types.iter().position(|&t| t == counted) {
                    counts[i] += 1;
                }
                pfn = block_end;
                break;
            }
            pfn += 1 << order;
        }
    }
    counts
}

/// The block pfn `pfn` of a zone starting at `start` belongs to, as page_owner sees it: its
/// state, its owner's migratetype and its order. `None` for pages that are neither free nor
/// allocated (cached on a per-CPU list, isolated): the scan steps over them one page at a
/// time.
fn owner_of(mm: &Memmap, start: u64, pfn: u64) -> Option<(PageState, MigrateType, u32)> {
    let mut info = mm.info((pfn - start) as u32);
    if info.state == PageState::Tail {
        info = mm.tail_block_info(start, pfn, crate::types::MAX_ORDER_LIMIT)?;
    }
    match info.state {
        PageState::Buddy | PageState::Allocated => Some((info.state, info.tag.migratetype, info.order)),
        PageState::Tail | PageState::Pcp | PageState::Isolated | PageState::Reserved | PageState::Offline => {
            None
        }
    }
}

/// Add the page_owner "Number of mixed blocks" table to a pagetypeinfo report of `node`.
pub fn add_mixed_blocks(report: &mut PageTypeInfo, node: &NodeShared) {
    for n in report.nodes.iter_mut() {
        let mut table = n.blocks.clone();
        for row in table.rows.iter_mut() {
            if let Some(z) = node.zones().iter().find(|z| z.config().zone_type.name() == row.zone) {
                row.counts = mixed_block_counts(z);
            }
        }
        n.mixed = Some(table);
    }
}

fn unpopulated_zone(node: u32, t: ZoneType, protection: Vec<i64>) -> ZoneInfoZone {
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
        protection,
        populated: None,
    }
}

/// A zone stat or NUMA event of `z` as zoneinfo and vmstat name it (0 if not modelled).
fn zone_item(z: &ZoneShared, name: &str) -> u64 {
    let c = z.counters();
    if let Some(&stat) = ZoneStat::ALL.iter().find(|s| s.name() == name) {
        return c.zone_stat(stat);
    }
    match name {
        "numa_hit" | "numa_local" => c.event(VmEvent::NumaHit),
        _ => 0,
    }
}

fn populated_zone(z: &ZoneShared, node_stats: Option<Vec<(String, u64)>>) -> ZoneInfoZone {
    let cfg = z.config();
    let c = z.counters();
    let wm = c.watermarks();
    let boost = c.watermark_boost();
    let limits = z.pageset();
    let threshold = pcp::stat_threshold(cfg.nr_cpus, z.managed_pages()) as i32;
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
    let stats = ZONE_STAT_ITEMS.iter().map(|&n| (n.to_owned(), zone_item(z, n))).collect();
    ZoneInfoZone {
        node: cfg.node,
        zone: cfg.zone_type.name().to_owned(),
        node_stats,
        pages_free: c.zone_stat(ZoneStat::NrFreePages),
        boost,
        min: wm.min + boost,
        low: wm.low + boost,
        high: wm.high + boost,
        promo: Some(wm.promo + boost),
        spanned: cfg.span.spanned_pages,
        present: cfg.span.present_pages + (z.managed_pages() - cfg.managed_pages),
        managed: z.managed_pages(),
        cma: cfg.cma_pages,
        protection: z.lowmem_reserve_pages().iter().map(|&p| p as i64).collect(),
        populated: Some(PopulatedZone {
            stats,
            pagesets,
            node_unreclaimable: 0,
            start_pfn: cfg.span.start_pfn,
        }),
    }
}

/// `/proc/zoneinfo`: every zone type of the node. The first populated zone carries the
/// `per-node stats` block (all 0: LRU, slab and workingset state is not modelled);
/// `pagesets` show each CPU's cached pages and current high mark (0 until the CPU first uses
/// its lists, as in the kernel) with the zone's limits.
pub fn zoneinfo(node: &NodeShared) -> ZoneInfo {
    let node_id = node.zone(0).config().node;
    let mut node_stats = Some(NODE_STAT_ITEMS.iter().map(|&n| (n.to_owned(), 0)).collect());
    let zones = ZoneType::ALL
        .into_iter()
        .map(|t| match node.zone_index(t) {
            Some(i) => populated_zone(node.zone(i), node_stats.take()),
            // An unpopulated zone protects nothing and is protected by nothing.
            None => unpopulated_zone(node_id, t, vec![0; MAX_NR_ZONES]),
        })
        .collect();
    ZoneInfo { zones }
}

/// One `/proc/vmstat` value (0 for what the model does not keep).
fn vmstat_item(node: &NodeShared, name: &str) -> u64 {
    let per_zone = |prefix: &str| {
        name.strip_prefix(prefix).and_then(|s| ZoneType::ALL.into_iter().find(|t| t.vmstat_suffix() == s))
    };
    if let Some(t) = per_zone("pgalloc_") {
        return node.zone_index(t).map_or(0, |i| node.zone(i).counters().event(VmEvent::PgAlloc));
    }
    if let Some(t) = per_zone("allocstall_") {
        return node.counters().allocstall(t);
    }
    if ZONE_STAT_ITEMS.contains(&name) {
        return node.zones().iter().map(|z| zone_item(z, name)).sum();
    }
    match VmEvent::ALL.iter().find(|e| e.in_kernel_vmstat() && e.name() == name) {
        Some(&ev) => node.event(ev),
        None => 0,
    }
}

/// `/proc/vmstat`: every line 6.18 prints, in its order.
pub fn vmstat(node: &NodeShared) -> VmStat {
    VmStat { items: vmstat_items().map(|n| (n.to_owned(), vmstat_item(node, n))).collect() }
}

/// Every counter, kernel and pageblock-specific, summed over the node, as `(name, value)` in
/// declaration order.
pub fn all_counters(node: &NodeShared) -> Vec<(String, u64)> {
    let sum = |f: &dyn Fn(&ZoneShared) -> u64| node.zones().iter().map(|z| f(z)).sum::<u64>();
    let mut v: Vec<(String, u64)> =
        ZoneStat::ALL.iter().map(|&s| (s.name().to_owned(), sum(&|z| z.counters().zone_stat(s)))).collect();
    v.extend(VmEvent::ALL.iter().map(|&e| (e.name().to_owned(), node.event(e))));
    for t in ZoneType::ALL {
        v.push((format!("allocstall_{}", t.vmstat_suffix()), node.counters().allocstall(t)));
    }
    v.push(("nr_free_highatomic".to_owned(), sum(&|z| z.counters().nr_free_highatomic())));
    v.push(("nr_reserved_highatomic".to_owned(), sum(&|z| z.counters().nr_reserved_highatomic())));
    v.push(("watermark_boost_pages".to_owned(), sum(&|z| z.counters().watermark_boost())));
    v
}

/// debugfs `extfrag/unusable_index`.
pub fn unusable_index(node: &NodeShared) -> UnusableIndex {
    UnusableIndex::from_buddyinfo(&buddyinfo(node))
}

/// debugfs `extfrag/extfrag_index`.
pub fn extfrag_index(node: &NodeShared) -> ExtfragIndex {
    ExtfragIndex::from_buddyinfo(&buddyinfo(node))
}

/// A trace event as the kernel's kmem tracepoint prints it on a machine with (or without)
/// CONFIG_CMA and this `pageblock_order`.
pub fn kmem_event(config_cma: bool, pageblock_order: u32, ev: &TraceEvent) -> KmemEvent {
    let abi = |mt| abi_migratetype(config_cma, mt);
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
            pageblock_order as i32,
            abi(alloc_migratetype),
            abi(fallback_migratetype),
            change_ownership,
        )),
    }
}
