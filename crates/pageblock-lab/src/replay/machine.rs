//! The simulated machine a replay runs on, and its state when the trace begins.
//!
//! With the recording's snapshots: the zones and CPUs of `before.zoneinfo` (managed pages
//! placed where the trace's pfns fall), and the free blocks and pageblock types of
//! `before.pagetypeinfo` ([`super::start`]). Without them: one ZONE_NORMAL over the pfns the
//! trace touches, as many CPUs as it names, everything free except what the trace frees
//! before allocating it.

use std::collections::HashMap;

use pageblock_core::migratetype::MigrateType;
use pageblock_core::zone_state::ZoneLayout;
use pageblock_core::{show, Node, NodeConfig, NodeLocks, Policy, ZoneConfig, ZoneType};

use super::load::LoadedTrace;
use super::start::{plan_layout, BusyPages, PlanShortfall};
use crate::machine::{node_from_zoneinfo, ZoneHints};
use crate::trace::RecordKind;

/// How the starting state came out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartReport {
    /// Where the geometry came from (`before.zoneinfo` or the trace's pfns).
    pub geometry: &'static str,
    /// Where the free memory came from (`before.pagetypeinfo` or "all free").
    pub free_state: &'static str,
    /// Per zone, what did not fit.
    pub shortfall: Vec<(String, PlanShortfall)>,
    /// Pages known allocated at the start (the trace frees them before allocating them).
    pub busy_pages: u64,
}

/// The machine's configuration for `t`.
pub fn node_config(t: &LoadedTrace) -> Result<NodeConfig, String> {
    let (lo, hi) = pfn_range(t).ok_or("the trace has no page events")?;
    let node = match &t.snapshots.before_zoneinfo {
        Some(zi) => {
            let blocks = |zt: ZoneType| {
                let pti = t.snapshots.before_pagetypeinfo.as_ref()?;
                let row =
                    pti.nodes.first()?.blocks.rows.iter().find(|r| r.node == 0 && r.zone == zt.name())?;
                Some(row.counts.iter().sum())
            };
            let lowest = |zt: ZoneType| lowest_pfn_in(t, zi, zt);
            node_from_zoneinfo(zi, &|zt| ZoneHints { blocks: blocks(zt), lowest_managed_pfn: lowest(zt) })?
        }
        None => {
            let align = 1u64 << pageblock_core::types::MAX_PAGE_ORDER;
            let start = lo & !(align - 1);
            let end = (hi + 1).div_ceil(align) * align;
            let zone = ZoneConfig {
                nr_cpus: t.counts.cpus.max(1),
                ..ZoneConfig::new(ZoneType::Normal, start, end - start)
            };
            NodeConfig::single(zone)
        }
    };
    let cpus = node.zones[0].nr_cpus;
    if t.counts.cpus > cpus {
        return Err(format!(
            "the trace names CPU {} but the recorded machine has {cpus} CPUs",
            t.counts.cpus - 1
        ));
    }
    if node.zones.iter().all(|z| hi < z.start_pfn || lo >= z.end_pfn()) {
        return Err(format!("the trace's pfns {lo:#x}..={hi:#x} fall in none of the recorded zones"));
    }
    Ok(node)
}

/// The lowest and highest pfn of an allocation or free.
fn pfn_range(t: &LoadedTrace) -> Option<(u64, u64)> {
    let pfns = t.records.iter().filter(|r| page_event(&r.kind)).map(|r| r.pfn);
    let (lo, hi) = pfns.fold((u64::MAX, 0), |(lo, hi), p| (lo.min(p), hi.max(p)));
    (lo <= hi).then_some((lo, hi))
}

fn page_event(k: &RecordKind) -> bool {
    matches!(k, RecordKind::Alloc { failed: false, .. } | RecordKind::Free { .. })
}

/// The lowest page-event pfn inside zone `zt`'s span, per `zi`.
fn lowest_pfn_in(t: &LoadedTrace, zi: &pageblock_formats::zoneinfo::ZoneInfo, zt: ZoneType) -> Option<u64> {
    let z = zi.zones.iter().find(|z| z.node == 0 && z.zone == zt.name())?;
    let start = z.populated.as_ref()?.start_pfn;
    let span = start..start.saturating_add(z.spanned);
    t.records.iter().filter(|r| page_event(&r.kind) && span.contains(&r.pfn)).map(|r| r.pfn).min()
}

/// Boot the machine under `policy` and put it in the trace's starting state.
pub fn boot(t: &LoadedTrace, config: &NodeConfig, policy: &Policy) -> Result<(Node, StartReport), String> {
    let node = Node::new(config.clone(), policy.clone()).map_err(|e| format!("machine: {e}"))?;
    let mut report = StartReport {
        geometry: if t.snapshots.before_zoneinfo.is_some() { "before.zoneinfo" } else { "the trace's pfns" },
        free_state: if t.snapshots.before_pagetypeinfo.is_some() {
            "before.pagetypeinfo"
        } else {
            "all free"
        },
        ..StartReport::default()
    };
    let config_cma = config.zones[0].config_cma;
    for (i, z) in node.shared().zones().iter().enumerate() {
        let cfg = z.config();
        let busy = busy_pages(t, cfg);
        report.busy_pages += busy.count();
        let layout = match t
            .snapshots
            .before_pagetypeinfo
            .as_ref()
            .and_then(|p| super::snapshot::zone_target(p, cfg.zone_type.name()))
        {
            Some(target) => {
                let votes = votes(t, cfg, config_cma);
                let (layout, short) = plan_layout(cfg, z.pageblocks().len(), &target, &busy, &votes);
                report.shortfall.push((cfg.zone_type.name().to_owned(), short));
                layout
            }
            None => free_except(cfg, z.pageblocks().len(), &busy),
        };
        node.lock_zone(i).set_layout(&layout).map_err(|e| format!("zone {}: {e}", cfg.zone_type.name()))?;
    }
    node.verify().map_err(|e| format!("starting state: {e}"))?;
    Ok((node, report))
}

/// Pages the trace frees before it allocates them: allocated when the trace began.
fn busy_pages(t: &LoadedTrace, cfg: &ZoneConfig) -> BusyPages {
    let mut busy = BusyPages::new(cfg);
    let mut seen = std::collections::HashSet::new();
    for r in &t.records {
        let first = matches!(r.kind, RecordKind::Alloc { failed: false, .. } | RecordKind::Free { .. })
            && (cfg.start_pfn..cfg.end_pfn()).contains(&r.pfn)
            && seen.insert(r.pfn);
        if let (true, RecordKind::Free { order }) = (first, r.kind) {
            busy.mark(r.pfn, 1 << order.min(63));
        }
    }
    busy
}

/// Each pageblock's type as the trace first shows it: the list a block was taken from or
/// drained to, or a fallback's source type.
fn votes(t: &LoadedTrace, cfg: &ZoneConfig, config_cma: bool) -> HashMap<usize, MigrateType> {
    let mut votes = HashMap::new();
    let pbo = cfg.pageblock_order;
    for r in t.records.iter().filter(|r| (cfg.start_pfn..cfg.end_pfn()).contains(&r.pfn)) {
        let mt = match r.kind {
            RecordKind::ZoneLocked { migratetype, .. } | RecordKind::PcpuDrain { migratetype, .. } => {
                migratetype
            }
            RecordKind::Extfrag { fallback_migratetype, .. } => fallback_migratetype,
            _ => continue,
        };
        let Some(mt) =
            MigrateType::ALL.into_iter().find(|&m| show::abi_migratetype(config_cma, m) == i32::from(mt))
        else {
            continue;
        };
        if mt.is_mergeable() || mt == MigrateType::HighAtomic {
            let block = ((r.pfn >> pbo) - (cfg.start_pfn >> pbo)) as usize;
            votes.entry(block).or_insert(mt);
        }
    }
    votes
}

/// Every page free except the busy ones, in the largest aligned blocks that fit (all
/// Movable, as after boot).
fn free_except(cfg: &ZoneConfig, nr_blocks: usize, busy: &BusyPages) -> ZoneLayout {
    let mut free = Vec::new();
    let mut pfn = cfg.start_pfn;
    while pfn < cfg.end_pfn() {
        if busy.is_busy(pfn) {
            pfn += 1;
            continue;
        }
        let mut order = cfg.max_order;
        while !pageblock_core::Pfn(pfn).is_aligned(order)
            || pfn + (1 << order) > cfg.end_pfn()
            || busy.any(pfn, 1 << order)
        {
            order -= 1;
        }
        free.push((pfn, order));
        pfn += 1 << order;
    }
    ZoneLayout { block_types: vec![MigrateType::Movable; nr_blocks], free, reserved: Vec::new() }
}
