//! Reading a trace for replay: the records into memory (32 bytes each, so a replay can run
//! several policies from one decoding pass), what the trace itself counted, and the `/proc`
//! snapshots recorded beside it.
//!
//! A trace is a file, or a directory as `pageblock record` writes it: `trace.txt.zst` (or
//! `.gz`, or plain `trace.txt`) next to `before.{zoneinfo,pagetypeinfo,buddyinfo}` and
//! `after.buddyinfo`. Snapshots next to a trace file are used too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::compaction::CompactionEventKind;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::samples::{BuddyInfoSamples, PageTypeInfoSamples};
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::ZoneInfo;

use pageblock_formats::kmem::KMEM_EVENT_NAMES;

use rustc_hash::FxHashMap;

use super::daemon_timing::WakeLatencies;
use super::facts::TraceFacts;
use super::kmem_counts::KmemCounts;
use super::need_resched::NeedResched;
use super::skip_hints::SkipHints;
use pageblock_trace::{
    trace_file, GfpId, GfpTable, RecordKind, Task, TraceError, TraceReader, TraceRecord, VmscanEvent,
};

/// What the recording machine's `/proc` said.
#[derive(Clone, Debug, Default)]
pub struct Snapshots {
    /// `before.zoneinfo`.
    pub before_zoneinfo: Option<ZoneInfo>,
    /// `before.pagetypeinfo`.
    pub before_pagetypeinfo: Option<PageTypeInfo>,
    /// `before.buddyinfo`.
    pub before_buddyinfo: Option<BuddyInfo>,
    /// `after.buddyinfo`.
    pub after_buddyinfo: Option<BuddyInfo>,
    /// `after.zoneinfo`.
    pub after_zoneinfo: Option<ZoneInfo>,
    /// `before.vmstat`.
    pub before_vmstat: Option<VmStat>,
    /// `after.vmstat`.
    pub after_vmstat: Option<VmStat>,
    /// `vmstat-delta.txt` (`name=value` lines, as `lab real` writes them), for a trace
    /// without both vmstat snapshots.
    pub vmstat_delta: Option<VmStat>,
    /// `before.swaps`: the recording machine's `/proc/swaps`.
    pub before_swaps: Option<pageblock_formats::swaps::Swaps>,
    /// `buddyinfo.samples`: the zones read every 100 ms while `lab real` recorded.
    pub buddyinfo_samples: Option<BuddyInfoSamples>,
    /// `pagetypeinfo.samples`: the zones by migratetype, read every second.
    pub pagetypeinfo_samples: Option<PageTypeInfoSamples>,
    /// `before_zoneinfo` is not the recording's but a what-if's (`--zoneinfo`).
    pub zoneinfo_given: bool,
}

impl Snapshots {
    /// The real kernel's vmstat delta over the trace: `vmstat-delta.txt` if present, else
    /// `after.vmstat` − `before.vmstat` (event counters only).
    pub fn real_vmstat_delta(&self) -> Option<VmStat> {
        match (&self.vmstat_delta, &self.before_vmstat, &self.after_vmstat) {
            (Some(d), _, _) => Some(d.clone()),
            (None, Some(b), Some(a)) => Some(VmStat::delta(b, a)),
            _ => None,
        }
    }
}

/// What the trace's own events say (the real kernel's side of the fidelity report).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Events per tracepoint name.
    pub events: BTreeMap<&'static str, u64>,
    /// The kmem tracepoints a replay compares.
    pub kmem: KmemCounts,
    /// `mm_page_alloc_extfrag` events by kind ([`super::engine::fallback_kind`]).
    pub extfrag_kinds: BTreeMap<String, u64>,
    /// `mm_page_alloc_extfrag` events with `fragmenting`.
    pub extfrag_fragmenting: u64,
    /// `mm_page_alloc_extfrag` events with `change_ownership`.
    pub extfrag_change_ownership: u64,
    /// `mm_page_alloc_zone_locked` events with `percpu_refill=1`.
    pub zone_locked_refill: u64,
    /// Events the ring buffer dropped (`[LOST n EVENTS]`).
    pub lost_events: u64,
    /// Highest CPU number seen, plus one.
    pub cpus: u32,
    /// Pages freed by kswapd and kcompactd (`mm_page_free` events): the kernel reclaimed or
    /// compacted during the trace.
    pub daemon_frees: u64,
    /// Direct reclaim runs (`mm_vmscan_direct_reclaim_begin`, one `allocstall` each) by the
    /// order and mask of the request that stalled.
    pub direct_reclaims: BTreeMap<(u8, GfpId), u64>,
    /// Direct compaction attempts (`mm_compaction_try_to_compact_pages`, every priority)
    /// by the order and mask of the request that asked.
    pub direct_compactions: BTreeMap<(u8, GfpId), u64>,
    /// Zone compactions run for a request (`mm_compaction_begin` in a task, not kcompactd),
    /// by the request that task last asked for: compaction runs in the task that asked
    /// (`try_to_compact_pages` → `compact_zone`), on whatever CPU it has moved to since.
    pub direct_compaction_runs: BTreeMap<(u8, GfpId), u64>,
    /// Reclaim's looks at the inactive lists (`mm_vmscan_lru_shrink_inactive`).
    pub reclaim_looks: super::reclaim_looks::ReclaimLooks,
}

/// A request as the reports name it: `order 9 GFP_TRANSHUGE`.
pub fn request_name(order: u32, gfp: pageblock_core::Gfp) -> String {
    format!("order {order} {gfp}")
}

impl LoadedTrace {
    /// Whether the trace recorded the compaction events (any of them occurred).
    pub fn compaction_recorded(&self) -> bool {
        self.counts.events.keys().any(|k| k.starts_with("mm_compaction_"))
    }

    /// The traced kernel's direct reclaim runs by the request that stalled (`None`: the
    /// trace did not record `mm_vmscan_direct_reclaim_begin`).
    pub fn direct_reclaims(&self) -> Option<BTreeMap<String, u64>> {
        self.counts.events.get("mm_vmscan_direct_reclaim_begin")?;
        Some(self.by_request(&self.counts.direct_reclaims))
    }

    /// The traced kernel's looks at its inactive lists (`None`: the trace did not record
    /// `mm_vmscan_lru_shrink_inactive`).
    pub fn reclaim_looks(&self) -> Option<super::reclaim_looks::ReclaimLooks> {
        self.counts.events.get("mm_vmscan_lru_shrink_inactive")?;
        Some(self.counts.reclaim_looks)
    }

    /// The traced kernel's direct compaction attempts by the request that asked (`None`:
    /// the trace did not record the compaction events).
    pub fn direct_compactions(&self) -> Option<BTreeMap<String, u64>> {
        if !self.compaction_recorded() {
            return None;
        }
        Some(self.by_request(&self.counts.direct_compactions))
    }

    /// The traced kernel's zone compactions for a request, by the request (`None`: the
    /// trace did not record the compaction events).
    pub fn direct_compaction_runs(&self) -> Option<BTreeMap<String, u64>> {
        if !self.compaction_recorded() {
            return None;
        }
        Some(self.by_request(&self.counts.direct_compaction_runs))
    }

    /// Counts keyed by (order, gfp id) renamed as the reports name requests.
    fn by_request(&self, counts: &BTreeMap<(u8, GfpId), u64>) -> BTreeMap<String, u64> {
        let mut by = BTreeMap::new();
        for (&(order, gfp), &n) in counts {
            *by.entry(request_name(u32::from(order), self.gfps.get(gfp).unwrap_or_default())).or_default() +=
                n;
        }
        by
    }
}

/// A trace in memory.
pub struct LoadedTrace {
    /// The trace file.
    pub file: PathBuf,
    /// The requests: allocations and frees, in file order (the kernel's own doings are
    /// counted and gathered into the facts, not kept).
    pub records: Vec<TraceRecord>,
    /// What the trace says about the start.
    pub facts: TraceFacts,
    /// The gfp masks the records' ids name.
    pub gfps: GfpTable,
    /// Lines read, malformed lines skipped.
    pub lines: u64,
    /// Malformed lines skipped (with `skip_bad`).
    pub bad_lines: u64,
    /// Where a truncated compressed file stopped (with `skip_bad`: the trace is the lines
    /// before it), as `FILE: reason`.
    pub truncated: Option<String>,
    /// The trace's own counts.
    pub counts: TraceCounts,
    /// The snapshots beside it.
    pub snapshots: Snapshots,
    /// kswapd's wake-up latencies, as far as the trace shows them.
    pub kswapd_wake_latency: WakeLatencies,
    /// How often async compaction's askers found `need_resched()` set.
    pub need_resched: NeedResched,
    /// The compaction skip hints the trace's first runs show.
    pub skip_hints: SkipHints,
    /// Seconds spent reading, decompressing and decoding.
    pub load_seconds: f64,
}

/// Lines between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

/// Read the trace at `path` (a file or a recording directory) and its snapshots, calling
/// `progress(bytes_read, file_size)` as it goes. A malformed line is an error naming the file
/// and line, and a compressed file cut short an error naming where, unless `skip_bad` (then
/// the lines before the cut are the trace, and `truncated` says where it stopped). A
/// `zoneinfo` given stands for the recording's (`replay --zoneinfo`): the machine is its.
pub fn load(
    path: &Path,
    (skip_bad, zoneinfo): (bool, Option<ZoneInfo>),
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<LoadedTrace, String> {
    let file = trace_file(path)?;
    let mut snapshots = read_snapshots(file.parent().unwrap_or(Path::new(".")))?;
    if let Some(zi) = zoneinfo {
        // Memory onlined during the recording was the recorded machine's, not this one's.
        snapshots.before_zoneinfo = Some(zi);
        snapshots.after_zoneinfo = None;
        snapshots.zoneinfo_given = true;
    }
    let mut facts = facts_for(&snapshots);
    let started = Instant::now();
    let (cpus, machine) = machine_cpus(&snapshots);
    let mut reader = TraceReader::open(&file)
        .map_err(|e| e.to_string())?
        .skip_bad_lines(skip_bad)
        .with_cpus(cpus, machine);
    let read = reader.get_ref().progress();
    // Room for the requests up front: moving a growing vector of millions of them costs more
    // than decoding them. A compressed line is rarely under 8 bytes, a plain one under 128,
    // and about half the lines are requests; reserved but unwritten pages cost no memory.
    let size = reader.get_ref().size();
    let per_record =
        if reader.get_ref().compression() == pageblock_trace::Compression::Plain { 128 } else { 8 };
    let mut records = Vec::with_capacity((size.unwrap_or(0) / per_record).min(1 << 28) as usize);
    let mut counts = TraceCounts::default();
    let mut kmem = [0u64; 6];
    let mut asking = FxHashMap::default();
    let mut kswapd_wake_latency = WakeLatencies::default();
    let mut need_resched = NeedResched::default();
    let mut skip_hints = SkipHints::default();
    let mut next_progress = PROGRESS_EVERY;
    while let Some(item) = reader.next() {
        let (line, rec) = item.map_err(|e: TraceError| e.to_string())?;
        count(&mut counts, &mut kmem, &mut asking, &rec, reader.last_pid());
        facts.observe(&rec);
        kswapd_wake_latency.observe(&rec);
        need_resched.observe(&rec);
        skip_hints.observe(&rec, reader.last_pid());
        if matches!(
            rec.kind,
            RecordKind::Alloc { .. }
                | RecordKind::Free { .. }
                | RecordKind::Compaction(CompactionEventKind::Begin | CompactionEventKind::End)
                | RecordKind::Vmscan(VmscanEvent::DirectReclaimBegin { .. } | VmscanEvent::DirectReclaimEnd)
        ) {
            records.push(rec);
        }
        if line >= next_progress {
            progress(read.bytes(), size);
            next_progress = line + PROGRESS_EVERY;
        }
    }
    progress(read.bytes(), size);
    reader.finish().map_err(|e| e.to_string())?;
    facts.finish();
    counts.kmem = KmemCounts::traced(&kmem);
    for (name, n) in KMEM_EVENT_NAMES.iter().zip(kmem).filter(|(_, n)| *n > 0) {
        counts.events.insert(name, n);
    }
    let lines = reader.counts();
    Ok(LoadedTrace {
        file,
        records,
        facts,
        gfps: reader.gfp_table().clone(),
        lines: lines.lines,
        bad_lines: lines.bad_lines,
        truncated: reader.truncated().map(ToString::to_string),
        counts,
        snapshots,
        kswapd_wake_latency,
        need_resched,
        skip_hints,
        load_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Count `rec`, made by task `pid` (kmem events by their index in `KMEM_EVENT_NAMES`, the
/// rest by name). `asking` holds, per task, the request it last asked direct compaction for.
fn count(
    c: &mut TraceCounts,
    kmem: &mut [u64; 6],
    asking: &mut FxHashMap<u32, (u8, GfpId)>,
    rec: &TraceRecord,
    pid: u32,
) {
    c.cpus = c.cpus.max(u32::from(rec.cpu) + 1);
    if let Some(i) = rec.kind.kmem_index() {
        kmem[i] += 1;
    }
    match rec.kind {
        RecordKind::ZoneLocked { percpu_refill, .. } => c.zone_locked_refill += u64::from(percpu_refill),
        RecordKind::Extfrag {
            fragmenting,
            change_ownership,
            alloc_migratetype,
            fallback_migratetype,
            ..
        } => {
            // The ABI numbers below 4 are the same with or without CMA; 4 is CMA or Isolate.
            let name = |mt: i8| {
                usize::try_from(mt)
                    .ok()
                    .filter(|&i| i < 4)
                    .and_then(pageblock_core::migratetype::MigrateType::from_index)
                    .map_or_else(|| format!("type {mt}"), |t| t.name().to_owned())
            };
            let kind = super::engine::fallback_kind(
                &name(alloc_migratetype),
                &name(fallback_migratetype),
                change_ownership,
            );
            *c.extfrag_kinds.entry(kind).or_default() += 1;
            c.extfrag_fragmenting += u64::from(fragmenting);
            c.extfrag_change_ownership += u64::from(change_ownership);
        }
        RecordKind::Compaction(k) => {
            *c.events.entry(k.name()).or_default() += 1;
            if k == CompactionEventKind::Begin && rec.task != Task::Kcompactd {
                if let Some(&request) = asking.get(&pid) {
                    *c.direct_compaction_runs.entry(request).or_default() += 1;
                }
            }
        }
        RecordKind::TryToCompactPages { order, gfp, .. } => {
            *c.events.entry(CompactionEventKind::TryToCompactPages.name()).or_default() += 1;
            *c.direct_compactions.entry((order, gfp)).or_default() += 1;
            asking.insert(pid, (order, gfp));
        }
        RecordKind::Vmscan(v) => {
            *c.events.entry(v.name()).or_default() += 1;
            match v {
                VmscanEvent::DirectReclaimBegin { order, gfp } => {
                    *c.direct_reclaims.entry((order, gfp)).or_default() += 1;
                }
                VmscanEvent::LruShrinkInactive(s) => c.reclaim_looks.observe(&s, rec.task),
                _ => {}
            }
        }
        RecordKind::Lost { events } => c.lost_events += events.count().unwrap_or(0),
        RecordKind::Free { .. } if matches!(rec.task, Task::Kswapd | Task::Kcompactd) => c.daemon_frees += 1,
        _ => {}
    }
}

/// The CPUs of the machine the replay will simulate: the recording's (one pageset per CPU
/// in `before.zoneinfo`, as [`crate::machine::node_from_zoneinfo`] counts them), or as many
/// as the simulator holds.
fn machine_cpus(s: &Snapshots) -> (u32, &'static str) {
    let recorded = s.before_zoneinfo.as_ref().and_then(|zi| {
        zi.zones.iter().filter(|z| z.node == 0 && z.managed > 0).find_map(|z| z.populated.as_ref())
    });
    match recorded {
        Some(p) => {
            (u32::try_from(p.pagesets.len()).unwrap_or(u32::MAX), "the recorded machine (before.zoneinfo)")
        }
        None => (pageblock_core::config::MAX_CPUS, "a simulated machine"),
    }
}

/// Facts gathering for the machine the snapshots describe (pageblock order, CMA and zone
/// spans from them; the x86_64 defaults without them).
fn facts_for(s: &Snapshots) -> TraceFacts {
    let node = s.before_pagetypeinfo.as_ref().and_then(|p| p.nodes.first());
    let pbo = node.map_or(pageblock_core::types::PAGEBLOCK_ORDER, |n| n.pageblock_order);
    let cma = node.is_some_and(|n| n.blocks.migratetypes.iter().any(|m| m == "CMA"));
    let spans = s.before_zoneinfo.as_ref().map_or(Vec::new(), |zi| {
        zi.zones
            .iter()
            .filter(|z| z.node == 0)
            .filter_map(|z| {
                let t = pageblock_core::ZoneType::from_name(&z.zone)?;
                let start = z.populated.as_ref()?.start_pfn;
                Some((t, start..start.saturating_add(z.spanned)))
            })
            .collect()
    });
    TraceFacts::new(pbo, pageblock_core::types::MAX_PAGE_ORDER, cma, spans)
}

/// The snapshots present in `dir` (each optional; a present but unreadable one is an error).
fn read_snapshots(dir: &Path) -> Result<Snapshots, String> {
    fn read<T>(
        dir: &Path,
        name: &str,
        parse: fn(&str) -> Result<T, pageblock_formats::ParseError>,
    ) -> Result<Option<T>, String> {
        let path = dir.join(name);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        parse(&text).map(Some).map_err(|e| format!("{}: {e}", path.display()))
    }
    Ok(Snapshots {
        before_zoneinfo: read(dir, "before.zoneinfo", ZoneInfo::parse)?,
        before_pagetypeinfo: read(dir, "before.pagetypeinfo", PageTypeInfo::parse)?,
        before_buddyinfo: read(dir, "before.buddyinfo", BuddyInfo::parse)?,
        after_buddyinfo: read(dir, "after.buddyinfo", BuddyInfo::parse)?,
        after_zoneinfo: read(dir, "after.zoneinfo", ZoneInfo::parse)?,
        before_vmstat: read(dir, "before.vmstat", VmStat::parse)?,
        after_vmstat: read(dir, "after.vmstat", VmStat::parse)?,
        vmstat_delta: read(dir, "vmstat-delta.txt", VmStat::parse_delta)?,
        before_swaps: read(dir, "before.swaps", pageblock_formats::swaps::Swaps::parse)?,
        buddyinfo_samples: read(dir, "buddyinfo.samples", BuddyInfoSamples::parse)?,
        pagetypeinfo_samples: read(dir, "pagetypeinfo.samples", PageTypeInfoSamples::parse)?,
        zoneinfo_given: false,
    })
}
