//! What a replay reports: per policy side by side, the fidelity table, as text and JSON.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use serde::Serialize;

use super::engine::{Divergence, Replayed};
use super::fallback::ThpFallbacks;
use super::fidelity::Fidelity;
use super::kmem_counts::KmemCounts;
use super::load::LoadedTrace;
use super::machine::StartReport;
use super::reclaim_looks::ReclaimLooks;
use super::series::{self, Columns, Summary};
use super::type_samples::{TypeSamples, TypeView};
use super::zone_samples::{Percentiles, ZoneSamples};

/// The trace's side.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSide {
    /// The trace file.
    pub file: String,
    /// Lines read.
    pub lines: u64,
    /// Events per tracepoint.
    pub events: BTreeMap<&'static str, u64>,
    /// Malformed lines skipped.
    pub bad_lines: u64,
    /// Where a truncated compressed file stopped (the replay is of the lines before it).
    pub truncated: Option<String>,
    /// Events the ring buffer dropped.
    pub lost_events: u64,
    /// CPUs named.
    pub cpus: u32,
    /// Seconds to read, decompress and decode.
    pub load_seconds: f64,
}

/// The starting state.
#[derive(Clone, Debug, Serialize)]
pub struct StartSide {
    /// Where the zones came from.
    pub geometry: &'static str,
    /// Where the free memory came from.
    pub free_state: &'static str,
    /// Pages allocated at the start that the trace frees.
    pub busy_pages: u64,
    /// Pages on per-CPU lists at the start (the snapshot's pagesets).
    pub pcp_pages: u64,
    /// Free pages at the start that a movable request could only steal (on the Unmovable
    /// and Reclaimable lists below the pageblock order).
    pub steal_only_pages: u64,
    /// Free blocks of the snapshot that found no place, per zone.
    pub unplaced_blocks: BTreeMap<String, u64>,
    /// Reserved pages that had to sit on pages the trace frees, per zone.
    pub reserved_on_busy: BTreeMap<String, u64>,
    /// The compaction skip hints set at the start, from the trace's first runs.
    pub skip_hints: String,
}

/// Huge-page availability.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HugeShare {
    /// Mean.
    pub mean: f64,
    /// At the end.
    pub end: f64,
}

/// Mixed pageblocks (page_owner's count).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Mixed {
    /// At the start.
    pub start: u64,
    /// At the end.
    pub end: u64,
}

/// One policy's replay.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyResult {
    /// The policy.
    pub name: &'static str,
    /// The simulation's kernel events.
    pub events: KmemCounts,
    /// Fallbacks that fragmented a pageblock.
    pub extfrag_fragmenting: u64,
    /// Fallbacks after which the pageblock changed owner.
    pub extfrag_change_ownership: u64,
    /// Free pageblocks over the run.
    pub free_pageblocks: Summary,
    /// Free pages in whole pageblocks / free pages.
    pub huge_share: HugeShare,
    /// Unusable free index at pageblock order, at the end, as a fraction (0..1, as debugfs
    /// prints it).
    pub unusable_index_end_fraction: f64,
    /// Mixed pageblocks.
    pub mixed_pageblocks: Mixed,
    /// Requests the kernel served and the simulation failed.
    pub failed_requests: u64,
    /// Direct reclaim runs (`allocstall`) by the request that stalled (`order N MASK`).
    pub direct_reclaims: BTreeMap<String, u64>,
    /// Reclaim's looks at the inactive lists over the replay.
    pub reclaim_looks: ReclaimLooks,
    /// Fallbacks (`mm_page_alloc_extfrag`) by kind: `Unmovable from Movable, claimed`.
    pub fallbacks_by_kind: BTreeMap<String, u64>,
    /// Each zone's steal-only memory at the times of `pagetypeinfo.samples`, beside the
    /// kernel's (`null` without them): what this policy made of it.
    pub zone_types: Option<TypeSamples>,
    /// Direct compaction attempts asked for (`try_to_compact_pages` entered), whether they
    /// ran (`compact_stall`) or were skipped or deferred first.
    pub compact_attempts: u64,
    /// Those attempts by the request that asked (`order N MASK`).
    pub direct_compactions: BTreeMap<String, u64>,
    /// The zone compactions those attempts ran (past the suitability checks, where the
    /// kernel's `mm_compaction_begin` fires), by request.
    pub direct_compaction_runs: BTreeMap<String, u64>,
    /// Of those, the ones no caller's fallback exists for, by order and mask.
    pub failed_without_fallback: BTreeMap<String, u64>,
    /// Pages allocated from each zone (`pgalloc_<zone>`).
    pub pgalloc: BTreeMap<&'static str, u64>,
    /// Pages on per-CPU lists at the end.
    pub pcp_pages_end: u64,
    /// The simulation's vmstat delta over the replay: the pressure rows, in the kernel's
    /// names.
    pub vmstat: BTreeMap<String, u64>,
    /// Everything the simulation did differently.
    pub divergence: Divergence,
    /// Closed loop's own counts (`null` in open loop).
    pub closed_loop: Option<super::closed_loop::ClosedLoopCounts>,
    /// Base pages a balloon took before the replay (`--balloon`).
    pub balloon_pages: u64,
    /// Trace records (allocations and frees) replayed per second of the replay loop.
    pub records_per_second: f64,
    /// The trace's events (every line: the kernel's refills, drains, reclaim and compaction
    /// events included) per second of the replay loop; reading the trace is not in it.
    pub trace_events_per_second: f64,
    /// Seconds of the replay loop.
    pub seconds: f64,
    /// Free pageblocks and huge share over the replay, sample by sample (evenly spaced in
    /// the trace's records).
    pub series: Columns,
    /// Each zone's pageblock map at the end.
    #[serde(skip)]
    pub final_map: Vec<(String, Vec<pageblock_view::BlockKind>)>,
    /// Every seed's replay (`--seeds`), the first being the one the fields above describe.
    pub seeds: Vec<SeedRun>,
}

/// One seed's replay of a policy: what varies with the daemons' timing.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// The simulation's kernel events.
    pub events: KmemCounts,
    /// The simulation's vmstat delta (the pressure rows).
    pub vmstat: BTreeMap<String, u64>,
}

impl SeedRun {
    /// Seed `seed`'s replay `r` with its vmstat delta.
    pub fn new(seed: u64, r: &Replayed, vmstat: BTreeMap<String, u64>) -> SeedRun {
        SeedRun { seed, events: KmemCounts::simulated(&r.events), vmstat }
    }
}

impl PolicyResult {
    /// The result of replay `r` under policy `name` of a trace of `records` records and
    /// `events` events.
    pub fn new(
        name: &'static str,
        r: &Replayed,
        (mixed_start, mixed_end): (u64, u64),
        vmstat: BTreeMap<String, u64>,
        (records, trace_events): (u64, u64),
    ) -> PolicyResult {
        let e = &r.events;
        let events = KmemCounts::simulated(e);
        let huge = r.series.summary(|s| s.huge_share);
        let node = r.node.shared();
        let pgalloc = node
            .zones()
            .iter()
            .map(|z| (z.config().zone_type.name(), z.counters().event(pageblock_core::VmEvent::PgAlloc)))
            .collect();
        PolicyResult {
            name,
            events,
            extfrag_fragmenting: e.extfrag_fragmenting,
            extfrag_change_ownership: e.extfrag_change_ownership,
            fallbacks_by_kind: e.extfrag_kinds.clone(),
            zone_types: None,
            free_pageblocks: r.series.summary(|s| s.free_pageblocks as f64),
            huge_share: HugeShare { mean: huge.mean, end: huge.end },
            unusable_index_end_fraction: series::unusable_index(node),
            mixed_pageblocks: Mixed { start: mixed_start, end: mixed_end },
            failed_requests: r.divergence.failed_requests,
            failed_without_fallback: r.failed_without_fallback.clone(),
            direct_reclaims: r.direct_reclaims.clone(),
            reclaim_looks: r.reclaim_looks,
            compact_attempts: r.compact_attempts,
            direct_compactions: r.direct_compactions.clone(),
            direct_compaction_runs: r.direct_compaction_runs.clone(),
            pgalloc,
            pcp_pages_end: node.nr_pcp_pages(),
            vmstat,
            divergence: r.divergence,
            closed_loop: r.closed_loop,
            balloon_pages: r.balloon_pages,
            records_per_second: records as f64 / r.seconds.max(1e-9),
            trace_events_per_second: trace_events as f64 / r.seconds.max(1e-9),
            seconds: r.seconds,
            series: r.series.columns(),
            final_map: crate::block_map::node_block_kinds(&r.node),
            seeds: Vec::new(),
        }
    }
}

/// Everything a replay reports.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// The trace.
    pub trace: TraceSide,
    /// The starting state.
    pub start: StartSide,
    /// One entry per policy, in the order asked.
    pub policies: Vec<PolicyResult>,
    /// The replay under the traced kernel's own policy (`vanilla`, or `defrag_mode` for a
    /// trace made under `vm.defrag_mode=1`, [`super::fidelity::own_policy`]) against the real
    /// kernel (needs the `after` snapshot and that policy among those replayed).
    pub fidelity: Option<Fidelity>,
    /// The real kernel's vmstat delta over the trace (the pressure rows), to set beside each
    /// policy's `vmstat`.
    pub real_vmstat_delta: Option<BTreeMap<String, u64>>,
    /// The traced kernel's direct reclaim runs by the request that stalled
    /// (`mm_vmscan_direct_reclaim_begin`; `None` if the trace did not record it).
    pub real_direct_reclaims: Option<BTreeMap<String, u64>>,
    /// The traced kernel's looks at its inactive lists (`mm_vmscan_lru_shrink_inactive`;
    /// `None` if the trace did not record it).
    pub real_reclaim_looks: Option<ReclaimLooks>,
    /// The traced kernel's direct compaction attempts (`mm_compaction_try_to_compact_pages`;
    /// `None` if the trace did not record the compaction events).
    pub real_compact_attempts: Option<u64>,
    /// The traced kernel's direct compaction attempts by the request that asked (`None` if
    /// the trace did not record the compaction events).
    pub real_direct_compactions: Option<BTreeMap<String, u64>>,
    /// The traced kernel's zone compactions for a request (`mm_compaction_begin` outside
    /// kcompactd, given to the request its task last asked for), by request (`None` if
    /// the trace did not record the compaction events).
    pub real_direct_compaction_runs: Option<BTreeMap<String, u64>>,
    /// The traced kernel's fallbacks by kind (`mm_page_alloc_extfrag`).
    pub real_fallbacks_by_kind: BTreeMap<String, u64>,
    /// Where each simulated kswapd wake-up's latency is drawn from.
    pub kswapd_wake_latency: String,
    /// The rate at which async direct compaction finds `need_resched()` set between zones.
    pub need_resched: String,
    /// `open` (every traced free replayed) or `closed` (only the workload's).
    #[serde(rename = "loop")]
    pub mode: super::engine::Loop,
    /// Seconds, end to end (read, decompress, decode, every replay).
    pub seconds: f64,
    /// The THP settings, when the replay's are not the recording's (`--thp-enabled`,
    /// `--thp-defrag`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp: Option<ThpSide>,
    /// Whether the simulation could swap, and why.
    pub swap: super::swap_space::SwapSpace,
}

/// The THP settings of a what-if replay, as `enabled/defrag`.
#[derive(Clone, Debug, Serialize)]
pub struct ThpSide {
    /// The recording machine's.
    pub recorded: String,
    /// The replay's.
    pub replayed: String,
}

impl ReplayReport {
    /// Assemble the report.
    pub fn new(
        t: &LoadedTrace,
        start: StartReport,
        policies: Vec<PolicyResult>,
        (fidelity, real_vmstat_delta): (Option<Fidelity>, Option<BTreeMap<String, u64>>),
        mode: super::engine::Loop,
        swap: super::swap_space::SwapSpace,
        seconds: f64,
    ) -> Self {
        let per_zone = |f: &dyn Fn(&super::start::PlanShortfall) -> u64| {
            start.shortfall.iter().map(|(z, s)| (z.clone(), f(s))).filter(|(_, n)| *n > 0).collect()
        };
        let real_direct_compactions = t.direct_compactions();
        ReplayReport {
            trace: TraceSide {
                file: t.file.display().to_string(),
                lines: t.lines,
                events: t.counts.events.clone(),
                bad_lines: t.bad_lines,
                truncated: t.truncated.clone(),
                lost_events: t.counts.lost_events,
                cpus: t.counts.cpus,
                load_seconds: t.load_seconds,
            },
            start: StartSide {
                geometry: start.geometry,
                free_state: start.free_state,
                busy_pages: start.busy_pages,
                pcp_pages: start.pcp_pages,
                steal_only_pages: start.steal_only_pages,
                unplaced_blocks: per_zone(&|s| s.unplaced.iter().map(|u| u.2).sum()),
                reserved_on_busy: per_zone(&|s| s.reserved_on_busy),
                skip_hints: start.skip_hints,
            },
            policies,
            fidelity,
            real_vmstat_delta,
            real_direct_reclaims: t.direct_reclaims(),
            real_reclaim_looks: t.reclaim_looks(),
            real_compact_attempts: real_direct_compactions.as_ref().map(|by| by.values().sum()),
            real_direct_compactions,
            real_direct_compaction_runs: t.direct_compaction_runs(),
            real_fallbacks_by_kind: t.counts.extfrag_kinds.clone(),
            kswapd_wake_latency: t.kswapd_wake_latency.source(),
            need_resched: t.need_resched.source(),
            mode,
            seconds,
            thp: None,
            swap,
        }
    }

    /// The HTML report: the policies side by side — free pageblocks and huge share over the
    /// replay, each policy's final pageblock map, the text report.
    pub fn html(&self) -> String {
        let mut page = pageblock_view::html::Page::new(&format!("pageblock replay: {}", self.trace.file));
        let series = |f: fn(&Columns) -> Vec<f64>| -> Vec<(String, Vec<f64>)> {
            self.policies.iter().map(|p| (p.name.to_owned(), f(&p.series))).collect()
        };
        page.heading("Over the replay");
        page.chart(
            "Whole free pageblocks",
            "sample (evenly spaced in the trace)",
            "pageblocks",
            &series(|c| c.free_pageblocks.iter().map(|&n| n as f64).collect()),
        );
        page.chart(
            "Huge share: free pages in whole free pageblocks / free pages",
            "sample",
            "share",
            &series(|c| c.huge_share.clone()),
        );
        page.heading("Pageblock maps at the end, side by side");
        page.policy_maps(self.policies.iter().map(|p| (p.name, p.final_map.as_slice())));
        page.heading("The report as printed");
        page.pre(&self.render());
        page.render()
    }

    /// The printed report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let t = &self.trace;
        let events: u64 = t.events.values().sum();
        let _ = writeln!(
            out,
            "trace {}: {} lines, {events} events, {} CPUs, {} lost, {} bad lines skipped",
            t.file, t.lines, t.cpus, t.lost_events, t.bad_lines
        );
        let lost_share = super::predict::lost_share(events, t.lost_events);
        if self.mode == super::engine::Loop::Closed && lost_share > super::predict::LOSSY_SHARE {
            let _ = writeln!(
                out,
                "warning: the trace lost {:.1}% of its events; in closed loop a page whose free was lost stays allocated \
                 until the trace allocates it again, so the replay runs on a fuller machine than the traced one",
                100.0 * lost_share
            );
        }
        if let Some(cut) = &t.truncated {
            let _ = writeln!(out, "truncated: {cut}");
        }
        let s = &self.start;
        let _ = writeln!(
            out,
            "start: zones from {}, free memory from {}; {} pages on per-CPU lists; {} pages allocated before the trace that it frees",
            s.geometry, s.free_state, s.pcp_pages, s.busy_pages
        );
        let _ = writeln!(
            out,
            "start: {} free pages a movable request could only steal (Unmovable and Reclaimable lists below the pageblock order; defrag_mode does not)",
            s.steal_only_pages
        );
        let _ = writeln!(out, "start: compaction skip hints {}", s.skip_hints);
        let _ = writeln!(
            out,
            "loop: {}",
            match self.mode {
                super::engine::Loop::Open => "open (every traced free replayed)",
                super::engine::Loop::Closed =>
                    "closed (the kernel's reclaim and migration frees left to the simulation's own)",
            }
        );
        let _ = writeln!(out, "kswapd wake-up latency: drawn from {}", self.kswapd_wake_latency);
        let _ =
            writeln!(out, "need_resched between zones (async compaction): drawn at {}", self.need_resched);
        let _ = writeln!(out, "swap: {}", self.swap.source);
        if let Some(first) = self.policies.first().and_then(|p| p.seeds.first()).filter(|s| s.seed != 1) {
            let _ = writeln!(out, "seed: the columns are seed {}'s replay (--seed)", first.seed);
        }
        if let Some(thp) = &self.thp {
            let _ = writeln!(out, "THP: what if {} (recorded under {})", thp.replayed, thp.recorded);
        }
        if !s.unplaced_blocks.is_empty() {
            let _ = writeln!(out, "  snapshot blocks that found no place: {:?}", s.unplaced_blocks);
        }
        out.push('\n');
        self.render_policies(&mut out);
        out.push('\n');
        self.render_vmstat(&mut out);
        self.render_direct_reclaims(&mut out);
        self.render_reclaim_looks(&mut out);
        self.render_compact_attempts(&mut out);
        self.render_fallbacks(&mut out);
        self.render_steal_only(&mut out);
        self.render_thp_fallbacks(&mut out);
        if let Some(f) = &self.fidelity {
            out.push('\n');
            render_fidelity(&mut out, f);
        }
        let _ =
            writeln!(out, "\n{:.2} s end to end ({:.2} s reading the trace)", self.seconds, t.load_seconds);
        out
    }

    fn render_policies(&self, out: &mut String) {
        type Cell = Box<dyn Fn(&PolicyResult) -> String>;
        let mut rows: Vec<(&str, Cell)> = vec![
            ("pages taken by a balloon", Box::new(|p| p.balloon_pages.to_string())),
            ("requests replayed", Box::new(|p| p.divergence.requests.to_string())),
            ("failed requests (kernel served)", Box::new(|p| p.failed_requests.to_string())),
            (
                "served by the caller's fallback",
                Box::new(|p| fallback(p, |f| f.thp_retries_served + f.base_page_requests)),
            ),
            ("  huge page fault retried", Box::new(|p| fallback(p, |f| f.thp_retries_served))),
            ("  base pages instead", Box::new(|p| fallback(p, |f| f.base_page_requests))),
            ("  none: past the OOM killer", Box::new(|p| fallback(p, |f| f.after_oom))),
            ("requests reaching the OOM killer", Box::new(|p| p.divergence.oom_requests.to_string())),
            ("free pageblocks, mean", Box::new(|p| format!("{:.1}", p.free_pageblocks.mean))),
            ("free pageblocks, min", Box::new(|p| format!("{:.0}", p.free_pageblocks.min))),
            ("free pageblocks, end", Box::new(|p| format!("{:.0}", p.free_pageblocks.end))),
            ("huge share of free memory, mean", Box::new(|p| format!("{:.3}", p.huge_share.mean))),
            ("huge share of free memory, end", Box::new(|p| format!("{:.3}", p.huge_share.end))),
            ("unusable index order 9, end", Box::new(|p| format!("{:.3}", p.unusable_index_end_fraction))),
            ("mixed pageblocks, start", Box::new(|p| p.mixed_pageblocks.start.to_string())),
            ("mixed pageblocks, end", Box::new(|p| p.mixed_pageblocks.end.to_string())),
            ("mm_page_alloc_extfrag", Box::new(|p| p.events.mm_page_alloc_extfrag.to_string())),
            ("  fragmenting", Box::new(|p| p.extfrag_fragmenting.to_string())),
            ("  change_ownership", Box::new(|p| p.extfrag_change_ownership.to_string())),
            ("mm_page_alloc_zone_locked", Box::new(|p| p.events.mm_page_alloc_zone_locked.to_string())),
            ("mm_page_pcpu_drain", Box::new(|p| p.events.mm_page_pcpu_drain.to_string())),
            ("pages on per-CPU lists, end", Box::new(|p| p.pcp_pages_end.to_string())),
            ("unmatched frees", Box::new(|p| p.divergence.unmatched_frees.to_string())),
            ("kswapd frees left to the simulation", Box::new(|p| closed(p, |c| c.reclaim_frees_skipped))),
            ("migration sources left to it", Box::new(|p| closed(p, |c| c.migration_frees_skipped))),
            ("kernel's frees of older pages", Box::new(|p| closed(p, |c| c.start_frees_replayed))),
            ("  freed later as migration targets", Box::new(|p| closed(p, |c| c.migrated_pages_freed))),
            ("pages its reclaim took", Box::new(|p| closed(p, |c| c.pages_reclaimed))),
            ("  freed later by the workload", Box::new(|p| closed(p, |c| c.reclaimed_then_freed))),
            ("pages its compaction moved", Box::new(|p| closed(p, |c| c.pages_moved))),
            ("  allocated before the trace", Box::new(|p| closed(p, |c| c.start_pages_moved))),
            ("large folios its compaction split", Box::new(|p| closed(p, |c| c.folios_split))),
            ("pages onlined (memory hotplug)", Box::new(|p| p.divergence.pages_onlined.to_string())),
            ("records per second", Box::new(|p| format!("{:.0}", p.records_per_second))),
            ("trace events per second", Box::new(|p| format!("{:.0}", p.trace_events_per_second))),
        ];
        if self.thp.is_some() {
            let at =
                rows.iter().position(|r| r.0 == "requests reaching the OOM killer").unwrap_or(rows.len());
            let what_if: [(&str, Cell); 3] = [
                (
                    "huge page attempts made base pages",
                    Box::new(|p| p.divergence.thp_what_if.as_base_pages.to_string()),
                ),
                ("huge page attempts not made", Box::new(|p| p.divergence.thp_what_if.dropped.to_string())),
                (
                    "huge page retries not replayed",
                    Box::new(|p| p.divergence.thp_what_if.retries_not_replayed.to_string()),
                ),
            ];
            rows.splice(at..at, what_if);
        }
        self.head(out, "policy", false);
        for (label, cell) in rows {
            row(out, label, self.policies.iter().map(&cell), None::<u64>);
            if label == "  none: past the OOM killer" {
                self.render_failed_without_fallback(out);
            }
        }
        let zones: Vec<&str> =
            self.policies.first().map_or(Vec::new(), |p| p.pgalloc.keys().copied().collect());
        for zone in zones {
            let cells = self.policies.iter().map(|p| p.pgalloc.get(zone).copied().unwrap_or(0));
            row(out, &format!("pages allocated from {zone}"), cells, None::<u64>);
        }
    }

    /// A table's head: `title`, each policy's name, and `real` over a real column.
    fn head(&self, out: &mut String, title: &str, real: bool) {
        let _ = write!(out, "{title:<LABEL_WIDTH$}");
        for p in &self.policies {
            let _ = write!(out, " {:>24}", p.name);
        }
        if real {
            let _ = write!(out, " {:>12}", "real");
        }
        out.push('\n');
    }
}

/// The width of a report row's label column.
const LABEL_WIDTH: usize = 40;

/// A table row under [`ReplayReport::head`]: `label`, a cell per policy, the real one if any.
fn row(
    out: &mut String,
    label: &str,
    cells: impl IntoIterator<Item = impl Display>,
    real: Option<impl Display>,
) {
    let _ = write!(out, "{label:<LABEL_WIDTH$}");
    for cell in cells {
        let _ = write!(out, " {cell:>24}");
    }
    if let Some(r) = real {
        let _ = write!(out, " {r:>12}");
    }
    out.push('\n');
}

/// A count of the requests the simulation refused and their callers made up.
fn fallback(p: &PolicyResult, f: fn(&super::fallback::Fallbacks) -> u64) -> String {
    f(&p.divergence.fallbacks).to_string()
}

/// A closed-loop count of `p`, or `-` in open loop.
fn closed(p: &PolicyResult, f: fn(&super::closed_loop::ClosedLoopCounts) -> u64) -> String {
    p.closed_loop.as_ref().map_or_else(|| "-".to_owned(), |c| f(c).to_string())
}

impl ReplayReport {
    /// Each policy's vmstat delta, and the real kernel's with each policy's ratio to it.
    fn render_vmstat(&self, out: &mut String) {
        let real = self.real_vmstat_delta.as_ref();
        self.head(out, "vmstat delta over the replay", real.is_some());
        let names: Vec<&String> = self.policies.first().map_or(Vec::new(), |p| p.vmstat.keys().collect());
        for name in names {
            let r = real.and_then(|d| d.get(name)).copied();
            let cells = self.policies.iter().map(|p| {
                let v = p.vmstat.get(name).copied().unwrap_or(0);
                match r {
                    Some(r) if r > 0 => format!("{v} ({:.2}x)", v as f64 / r as f64),
                    _ => v.to_string(),
                }
            });
            row(out, name, cells, r);
        }
        if real.is_none() {
            let _ =
                writeln!(out, "(no real delta: the trace has no before/after vmstat nor vmstat-delta.txt)");
        }
        self.render_seed_ranges(out);
    }

    /// Direct reclaim runs by the request that stalled.
    fn render_direct_reclaims(&self, out: &mut String) {
        let real = self.real_direct_reclaims.as_ref();
        if self.policies.iter().all(|p| p.direct_reclaims.is_empty()) && real.is_none_or(BTreeMap::is_empty) {
            return;
        }
        out.push('\n');
        self.head(out, "direct reclaim runs, by request", real.is_some());
        self.render_by_request(out, "  all", |p| &p.direct_reclaims, real);
    }

    /// Reclaim's looks at the inactive lists, each policy's beside the traced kernel's.
    fn render_reclaim_looks(&self, out: &mut String) {
        let real = self.real_reclaim_looks.map(|l| l.rows());
        if real.is_none() && self.policies.iter().all(|p| p.reclaim_looks == ReclaimLooks::default()) {
            return;
        }
        out.push('\n');
        self.head(out, "reclaim's looks at the inactive lists", real.is_some());
        let per_policy: Vec<_> = self.policies.iter().map(|p| p.reclaim_looks.rows()).collect();
        for (i, (label, _)) in ReclaimLooks::default().rows().into_iter().enumerate() {
            let r = real.as_ref().map(|rows| rows[i].1);
            row(out, label, per_policy.iter().map(|rows| rows[i].1.cell(r)), r);
        }
        if real.is_none() {
            let _ =
                writeln!(out, "(the trace has no mm_vmscan_lru_shrink_inactive records to set beside these)");
        }
    }

    /// Direct compaction attempts asked for, by the request that asked, and those that went
    /// ahead (`compact_stall`): the rest were skipped (too little free memory to compact)
    /// or deferred.
    fn render_compact_attempts(&self, out: &mut String) {
        let real_stalls = self.real_vmstat_delta.as_ref().and_then(|d| d.get("compact_stall")).copied();
        let real = self.real_direct_compactions.as_ref();
        out.push('\n');
        self.head(out, "direct compaction attempts", real.is_some());
        self.render_by_request(out, "  asked (try_to_compact_pages)", |p| &p.direct_compactions, real);
        let stalls = |p: &PolicyResult| p.vmstat.get("compact_stall").copied().unwrap_or(0);
        let went_ahead = self.policies.iter().map(stalls);
        row(out, "  went ahead (compact_stall)", went_ahead, real_stalls.filter(|_| real.is_some()));
        let real_runs = self.real_direct_compaction_runs.as_ref();
        self.render_by_request(out, "  ran (mm_compaction_begin)", |p| &p.direct_compaction_runs, real_runs);
    }

    /// Fallbacks by kind, beside the traced kernel's (nothing if neither side fell back).
    fn render_fallbacks(&self, out: &mut String) {
        let real = &self.real_fallbacks_by_kind;
        if real.is_empty() && self.policies.iter().all(|p| p.fallbacks_by_kind.is_empty()) {
            return;
        }
        out.push('\n');
        self.head(out, "fallbacks (mm_page_alloc_extfrag), by kind", true);
        self.render_by_request(out, "  all", |p| &p.fallbacks_by_kind, Some(real));
    }

    /// Each zone's steal-only pages during the run under each policy, beside the sampled
    /// kernel's: median, and first -> last sample (nothing without `pagetypeinfo.samples`).
    fn render_steal_only(&self, out: &mut String) {
        let Some(real) = self.policies.first().and_then(|p| p.zone_types.as_ref()) else { return };
        out.push('\n');
        self.head(out, "steal-only pages: median (first->last)", true);
        let cell = |v: &TypeView| format!("{:.0} ({})", v.steal_only_pages.p50, v.first_to_last());
        for (i, zone) in real.zones.iter().enumerate() {
            let sim = self.policies.iter().map(|p| {
                p.zone_types
                    .as_ref()
                    .and_then(|t| t.zones.get(i))
                    .map_or_else(|| "-".to_owned(), |c| cell(&c.simulated))
            });
            row(
                out,
                &format!("  {}", zone.zone),
                sim,
                Some(format!("{:.0}", zone.real.steal_only_pages.p50)),
            );
        }
    }

    /// A count by request (`order N MASK`): the sum on the `all` row, then the most
    /// frequent requests (the real kernel's first, if the trace recorded them), each row's
    /// mask on the line below it, the rest summed.
    fn render_by_request(
        &self,
        out: &mut String,
        all: &str,
        sim: impl Fn(&PolicyResult) -> &BTreeMap<String, u64>,
        real: Option<&BTreeMap<String, u64>>,
    ) {
        const SHOWN: usize = 8;
        let count = |by: &BTreeMap<String, u64>, k: &str| by.get(k).copied().unwrap_or(0);
        let mut kinds: Vec<&String> = self
            .policies
            .iter()
            .flat_map(|p| sim(p).keys())
            .chain(real.into_iter().flat_map(BTreeMap::keys))
            .collect();
        kinds.sort();
        kinds.dedup();
        let weight = |k: &str| {
            let simulated: u64 = self.policies.iter().map(|p| count(sim(p), k)).sum();
            (real.map_or(0, |r| count(r, k)), simulated)
        };
        kinds.sort_by_key(|k| std::cmp::Reverse(weight(k)));
        let by_request = |out: &mut String, label: &str, cell: &dyn Fn(&BTreeMap<String, u64>) -> u64| {
            row(out, label, self.policies.iter().map(|p| cell(sim(p))), real.map(cell));
        };
        by_request(out, all, &|by| by.values().sum());
        // Short kinds label their rows; long ones (requests' gfp flags) go under them, all
        // of a table's kinds the same way.
        let inline = kinds.iter().take(SHOWN).all(|k| k.len() + 2 < LABEL_WIDTH);
        for kind in kinds.iter().take(SHOWN) {
            if inline {
                by_request(out, &format!("  {kind}"), &|by| count(by, kind));
            } else {
                by_request(out, "  ", &|by| count(by, kind));
                let _ = writeln!(out, "    {kind}");
            }
        }
        if kinds.len() > SHOWN {
            let rest = &kinds[SHOWN..];
            by_request(out, "  the other requests", &|by| rest.iter().map(|k| count(by, k)).sum());
        }
    }

    /// The huge page faults that fell back, by whether they could reclaim, beside the
    /// traced kernel's counted the same way (nothing without huge page faults).
    fn render_thp_fallbacks(&self, out: &mut String) {
        let faults = |p: &PolicyResult| {
            ["thp_fault_alloc", "thp_fault_fallback"].iter().filter_map(|n| p.vmstat.get(*n)).sum::<u64>()
        };
        let Some(first) = self.policies.first().filter(|_| self.policies.iter().any(|p| faults(p) > 0))
        else {
            return;
        };
        let real = first.divergence.thp_fallbacks;
        out.push('\n');
        self.head(out, "huge page faults fallen back", true);
        let cells =
            |f: fn(&ThpFallbacks) -> u64| self.policies.iter().map(move |p| f(&p.divergence.thp_fallbacks));
        row(out, "  may reclaim (GFP_TRANSHUGE)", cells(|f| f.may_reclaim), Some(real.real_may_reclaim));
        row(out, "  light (GFP_TRANSHUGE_LIGHT)", cells(|f| f.light), Some(real.real_light));
    }

    /// The requests that failed with no fallback, one row per order and mask (the mask
    /// below the row), over every policy.
    fn render_failed_without_fallback(&self, out: &mut String) {
        let mut kinds: Vec<&String> =
            self.policies.iter().flat_map(|p| p.failed_without_fallback.keys()).collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let cells =
                self.policies.iter().map(|p| p.failed_without_fallback.get(kind).copied().unwrap_or(0));
            row(out, "  none: no fallback exists", cells, None::<u64>);
            let _ = writeln!(out, "    {kind}");
        }
    }

    /// With more than one seed: each vmstat row's lowest .. highest over the seeds.
    fn render_seed_ranges(&self, out: &mut String) {
        let seeds = self.policies.first().map_or(0, |p| p.seeds.len());
        if seeds < 2 {
            return;
        }
        out.push('\n');
        self.head(out, &format!("range over {seeds} seeds"), false);
        let mut names: Vec<&str> =
            self.policies.first().map_or(Vec::new(), |p| p.vmstat.keys().map(String::as_str).collect());
        names.extend(["mm_page_alloc_zone_locked", "mm_page_pcpu_drain"]);
        let value = |s: &SeedRun, name: &str| match name {
            "mm_page_alloc_zone_locked" => s.events.mm_page_alloc_zone_locked,
            "mm_page_pcpu_drain" => s.events.mm_page_pcpu_drain,
            _ => s.vmstat.get(name).copied().unwrap_or(0),
        };
        for name in names {
            let cells = self.policies.iter().map(|p| {
                let lo = p.seeds.iter().map(|s| value(s, name)).min().unwrap_or(0);
                let hi = p.seeds.iter().map(|s| value(s, name)).max().unwrap_or(0);
                format!("{lo} .. {hi}")
            });
            row(out, name, cells, None::<u64>);
        }
    }
}

fn render_fidelity(out: &mut String, f: &Fidelity) {
    let _ = writeln!(out, "fidelity ({} against the traced kernel and its after snapshot)", f.policy);
    let _ = writeln!(out, "{:<40} {:>12} {:>12} {:>8}", "", "simulated", "real", "ratio");
    for r in &f.rows {
        let ratio = r.ratio.map_or("-".to_owned(), |x| format!("{x:.3}"));
        let name = if r.part_of.is_some() { format!("  of which {}", r.name) } else { r.name.clone() };
        let _ = writeln!(out, "{name:<40} {:>12} {:>12} {ratio:>8}", r.simulated, r.real);
    }
    if let Some(z) = &f.zones {
        render_zone_samples(out, z);
    }
    if let Some(z) = &f.zone_types {
        render_type_samples(out, z);
    }
}

/// A sampled quantity's p10 / median / p90.
fn spread(s: &Percentiles) -> String {
    format!("{:.0} / {:.0} / {:.0}", s.p10, s.p50, s.p90)
}

/// A table of the zones as sampled and simulated: `title`, then each zone's rows (name,
/// simulated, real), the zone named on its first.
fn render_sampled_zones<'a>(
    out: &mut String,
    title: &str,
    zones: impl IntoIterator<Item = (&'a str, Vec<(&'static str, String, String)>)>,
) {
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(out, "{:<34} {:>24} {:>24}", "", "simulated", "real (sampled)");
    for (zone, rows) in zones {
        for (i, (name, sim, real)) in rows.into_iter().enumerate() {
            let zone = if i == 0 { zone } else { "" };
            let _ = writeln!(out, "{zone:<7} {name:<26} {sim:>24} {real:>24}");
        }
    }
}

/// The zones' migratetypes as `lab real` sampled them, beside the simulation's.
fn render_type_samples(out: &mut String, z: &TypeSamples) {
    let title = format!(
        "zones by migratetype during the run ({} pagetypeinfo samples in the trace), p10 / median / p90",
        z.samples
    );
    let zones = z.zones.iter().map(|c| {
        let rows = vec![
            ("steal-only pages", spread(&c.simulated.steal_only_pages), spread(&c.real.steal_only_pages)),
            ("  first -> last sample", c.simulated.first_to_last(), c.real.first_to_last()),
            (
                "Unmov.+Recl. pageblocks",
                spread(&c.simulated.foreign_pageblocks),
                spread(&c.real.foreign_pageblocks),
            ),
        ];
        (c.zone.as_str(), rows)
    });
    render_sampled_zones(out, &title, zones);
}

/// The zones as `lab real` sampled them, beside the simulation's at the same moments.
fn render_zone_samples(out: &mut String, z: &ZoneSamples) {
    let title =
        format!("zones during the run ({} buddyinfo samples in the trace), p10 / median / p90", z.samples);
    let zones = z.zones.iter().map(|c| {
        let rows = vec![
            ("free pages", spread(&c.simulated.free_pages), spread(&c.real.free_pages)),
            ("free pageblocks", spread(&c.simulated.free_pageblocks), spread(&c.real.free_pageblocks)),
            (
                "samples with none",
                format!("{:.0}%", 100.0 * c.simulated.no_free_pageblock),
                format!("{:.0}%", 100.0 * c.real.no_free_pageblock),
            ),
            ("free blocks of orders 0-3", spread(&c.simulated.small_blocks), spread(&c.real.small_blocks)),
        ];
        (c.zone.as_str(), rows)
    });
    render_sampled_zones(out, &title, zones);
}
