//! The simulated machine a replay runs on, and its state when the trace begins.
//!
//! With the recording's snapshots: the zones and CPUs of `before.zoneinfo` (managed pages
//! placed where the trace's pfns fall), and the free blocks and pageblock types of
//! `before.pagetypeinfo` ([`super::start`]); without that, the free blocks per order of
//! `before.buddyinfo` (all Movable), or all free but the zone's reserved pages. Without
//! snapshots: one ZONE_NORMAL over the pfns the trace touches (at most 1 TiB), as many CPUs
//! as it names, everything free except what the trace frees before allocating it.
//!
//! `--zoneinfo FILE` (what if the machine were another): FILE's zones and CPUs stand for
//! `before.zoneinfo`; the recorded free state is placed on them as far as it fits (the
//! report counts the blocks that found no place).

use std::collections::HashMap;

use pageblock_core::migratetype::MigrateType;
use pageblock_core::show::{self, PagetypeinfoMode};
use pageblock_core::types::aligned_blocks;
use pageblock_core::unstable::ZoneInternals;
use pageblock_core::zone::zone_state::ZoneLayout;
use pageblock_core::{Node, NodeConfig, NodeLocks, Policy, ZoneConfig, ZoneType};

use super::facts::TraceFacts;
use super::load::LoadedTrace;
use super::start::{plan_layout, BusyPages, PlanShortfall};
use crate::machine::{node_from_zoneinfo, ZoneHints};

/// How the starting state came out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartReport {
    /// Where the geometry came from (`before.zoneinfo` or the trace's pfns).
    pub geometry: &'static str,
    /// Where the free memory came from (`before.pagetypeinfo`, `before.buddyinfo` or "all
    /// free").
    pub free_state: &'static str,
    /// Per zone, what did not fit.
    pub shortfall: Vec<(String, PlanShortfall)>,
    /// Pages known allocated at the start (the trace frees them before allocating them).
    pub busy_pages: u64,
    /// Pages put on per-CPU lists, as the snapshot's pagesets held them.
    pub pcp_pages: u64,
    /// Free pages a movable request could only steal: on the Unmovable and Reclaimable
    /// lists below the pageblock order. `defrag_mode` keeps them from it.
    pub steal_only_pages: u64,
    /// The compaction skip hints set at the start, and what set them ([`super::skip_hints`]).
    pub skip_hints: String,
}

/// The most pages a machine sized by a trace's pfns may have (1 TiB): booting it takes time
/// and memory in proportion, and a damaged pfn must not decide that.
const MAX_SPAN_PAGES: u64 = 1 << 28;

/// The machine's configuration for `t`.
pub fn node_config(t: &LoadedTrace) -> Result<NodeConfig, String> {
    let (lo, hi) = t.facts.pfn_range.ok_or("the trace has no page events")?;
    let node = match &t.snapshots.before_zoneinfo {
        Some(zi) => {
            let blocks = |zt: ZoneType| {
                // The recording's pageblock counts describe the recorded machine only.
                if t.snapshots.zoneinfo_given {
                    return None;
                }
                let pti = t.snapshots.before_pagetypeinfo.as_ref()?;
                let row =
                    pti.nodes.first()?.blocks.rows.iter().find(|r| r.node == 0 && r.zone == zt.name())?;
                Some(row.counts.iter().sum())
            };
            let lowest = |zt: ZoneType| t.facts.lowest_in(zt);
            // Memory onlined during the trace (a later zoneinfo manages more): offline at the
            // start, onlined when the trace frees it.
            let managed = |zi: &pageblock_formats::zoneinfo::ZoneInfo, zt: ZoneType| {
                zi.zones.iter().find(|z| z.node == 0 && z.zone == zt.name()).map_or(0, |z| z.managed)
            };
            let onlined = |zt: ZoneType| {
                t.snapshots
                    .after_zoneinfo
                    .as_ref()
                    .map_or(0, |after| managed(after, zt).saturating_sub(managed(zi, zt)))
            };
            node_from_zoneinfo(zi, &|zt| ZoneHints {
                blocks: blocks(zt),
                lowest_managed_pfn: lowest(zt),
                offline_pages: onlined(zt),
            })?
        }
        None => {
            let align = 1u64 << pageblock_core::types::MAX_PAGE_ORDER;
            let start = lo & !(align - 1);
            let pages = ((hi - start) / align + 1).saturating_mul(align);
            if pages > MAX_SPAN_PAGES || start.checked_add(pages).is_none() {
                return Err(format!(
                    "the trace's pfns {lo:#x}..={hi:#x} span {} MiB; without before.zoneinfo the machine is \
                     sized by them, and at most {} GiB is simulated (replay the recording directory, or \
                     check the trace for damaged pfns)",
                    (hi - lo) >> (20 - pageblock_core::types::PAGE_SHIFT),
                    MAX_SPAN_PAGES >> (30 - pageblock_core::types::PAGE_SHIFT),
                ));
            }
            let zone = ZoneConfig {
                nr_cpus: t.counts.cpus.max(1),
                ..ZoneConfig::new(ZoneType::Normal, start, pages)
            };
            NodeConfig::single(zone)
        }
    };
    if node.zones.iter().all(|z| hi < z.start_pfn || lo >= z.end_pfn()) {
        return Err(format!("the trace's pfns {lo:#x}..={hi:#x} fall in none of the recorded zones"));
    }
    Ok(node)
}

/// The trace's facts as a zone's starting state needs them.
impl TraceFacts {
    /// The busy pages of a zone of `cfg`.
    /// (Frees of the zone's offline memory are memory being onlined, not busy pages.)
    fn busy(&self, cfg: &ZoneConfig) -> BusyPages {
        let mut busy = BusyPages::new(cfg);
        let online = cfg.start_pfn..cfg.end_pfn() - cfg.offline_pages;
        for &(pfn, order) in self.first_frees.iter().filter(|(p, _)| online.contains(p)) {
            busy.mark(pfn, 1 << order.min(63));
        }
        busy
    }

    /// The votes of a zone of `cfg`, by the zone's pageblock index.
    fn zone_votes(&self, cfg: &ZoneConfig) -> HashMap<usize, MigrateType> {
        let pbo = cfg.pageblock_order;
        let (first, end) = (cfg.start_pfn >> pbo, (cfg.end_pfn() - 1) >> pbo);
        self.votes
            .iter()
            .filter(|(&b, _)| (first..=end).contains(&b))
            .map(|(&b, &mt)| ((b - first) as usize, mt))
            .collect()
    }
}

/// Boot the machine under `policy` and put it in the trace's starting state.
pub fn boot(t: &LoadedTrace, config: &NodeConfig, policy: &Policy) -> Result<(Node, StartReport), String> {
    let node = Node::new(config.clone(), policy.clone()).map_err(|e| format!("machine: {e}"))?;
    let mut report = StartReport {
        geometry: match (&t.snapshots.before_zoneinfo, t.snapshots.zoneinfo_given) {
            (Some(_), true) => "--zoneinfo",
            (Some(_), false) => "before.zoneinfo",
            (None, _) => "the trace's pfns",
        },
        free_state: match (&t.snapshots.before_pagetypeinfo, &t.snapshots.before_buddyinfo) {
            (Some(_), _) => "before.pagetypeinfo",
            (None, Some(_)) => "before.buddyinfo (free blocks all Movable)",
            (None, None) => "all free",
        },
        ..StartReport::default()
    };
    for (i, z) in node.shared().zones().iter().enumerate() {
        let cfg = z.config();
        let busy = t.facts.busy(cfg);
        report.busy_pages += busy.count();
        let (zone, nr_blocks) = (cfg.zone_type.name(), z.pageblocks().len());
        let target = match (&t.snapshots.before_pagetypeinfo, &t.snapshots.before_buddyinfo) {
            (Some(p), _) => super::snapshot::zone_target(p, zone),
            (None, Some(b)) => super::snapshot::zone_target_from_buddyinfo(b, zone, nr_blocks as u64),
            (None, None) => None,
        };
        let layout = match target {
            Some(target) => {
                let (layout, short) = plan_layout(cfg, nr_blocks, &target, &busy, &t.facts.zone_votes(cfg));
                report.shortfall.push((zone.to_owned(), short));
                layout
            }
            None => free_except(cfg, nr_blocks, &busy),
        };
        node.lock_zone(i).set_layout(&layout).map_err(|e| format!("zone {}: {e}", cfg.zone_type.name()))?;
        if let Some(zi) = &t.snapshots.before_zoneinfo {
            report.pcp_pages += fill_pagesets(&node, i, zi, &busy);
        }
    }
    node.verify().map_err(|e| format!("starting state: {e}"))?;
    report.steal_only_pages = steal_only_pages(&node);
    Ok((node, report))
}

/// Free pages on the Unmovable and Reclaimable lists below the pageblock order, over the
/// node's zones (see [`StartReport::steal_only_pages`]), counted as pagetypeinfo's are; none
/// for a free-area layout that keeps no per-type counts.
fn steal_only_pages(node: &Node) -> u64 {
    show::pagetypeinfo_counts(node.shared(), PagetypeinfoMode::Counts)
        .map_or(0, |info| info.steal_only_pages())
}

/// Put on each CPU's lists of zone `i` as many pages as its pageset held in the snapshot
/// (`count`), with its `high`: pages the snapshot counted neither free nor allocated. They
/// come from the starting state's allocated pages in Movable pageblocks that the trace does
/// not free (so they were free in fact), freed through the CPU's own path. Returns the
/// pages placed.
fn fill_pagesets(node: &Node, i: usize, zi: &pageblock_formats::zoneinfo::ZoneInfo, busy: &BusyPages) -> u64 {
    let shared = node.shared();
    let z = shared.zone(i);
    let cfg = z.config();
    let Some(pagesets) = zi
        .zones
        .iter()
        .find(|s| s.node == 0 && s.zone == cfg.zone_type.name())
        .and_then(|s| s.populated.as_ref())
        .map(|p| p.pagesets.clone())
    else {
        return 0;
    };
    let mm = z.memmap();
    let mut candidates = (cfg.start_pfn..cfg.end_pfn()).filter(|&p| {
        let info = mm.info((p - cfg.start_pfn) as u32);
        info.state == pageblock_core::memmap::PageState::Allocated
            && info.tag.migratetype == MigrateType::Movable
            && !busy.is_busy(p)
    });
    let mut placed = 0;
    let nr_cpus = shared.nr_cpus();
    for ps in &pagesets {
        // With fewer CPUs than recorded (`--cpus`), a dropped CPU's pages go to the CPU its
        // records replay on; its high mark is not kept.
        let cpu = ps.cpu as usize % nr_cpus;
        if (ps.cpu as usize) < nr_cpus {
            node.lock_pcp(cpu, i).set_high(z, ps.high.max(0) as u64);
        }
        for _ in 0..ps.count.max(0) {
            let Some(pfn) = candidates.next() else { return placed };
            if node.free_pages(cpu, pageblock_core::Pfn(pfn), 0).is_ok() {
                placed += 1;
            }
        }
    }
    placed
}

/// Every online page free except the busy ones and the zone's reserved pages (the lowest
/// pages the trace does not free, then the lowest it does), in the largest aligned blocks
/// that fit (all Movable, as after boot).
fn free_except(cfg: &ZoneConfig, nr_blocks: usize, busy: &BusyPages) -> ZoneLayout {
    let end = cfg.end_pfn() - cfg.offline_pages;
    let mut taken = busy.clone();
    let mut reserved: Vec<(u64, u64)> = Vec::new();
    let mut left = cfg.reserved_pages;
    for on_busy in [false, true] {
        for p in (cfg.start_pfn..end).filter(|&p| busy.is_busy(p) == on_busy).take(left as usize) {
            match reserved.last_mut() {
                Some(r) if r.0 + r.1 == p => r.1 += 1,
                _ => reserved.push((p, 1)),
            }
            taken.mark(p, 1);
            left -= 1;
        }
    }
    reserved.sort_unstable();
    let mut free = Vec::new();
    let mut pfn = cfg.start_pfn;
    while pfn < end {
        if taken.is_busy(pfn) {
            pfn += 1;
            continue;
        }
        let run_end = (pfn..end).find(|&p| taken.is_busy(p)).unwrap_or(end);
        free.extend(aligned_blocks(pfn, run_end, cfg.max_order));
        pfn = run_end;
    }
    ZoneLayout { block_types: vec![MigrateType::Movable; nr_blocks], free, reserved }
}
