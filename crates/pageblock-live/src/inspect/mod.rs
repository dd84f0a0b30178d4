//! `pageblock inspect`: the running kernel's memory, pageblock by pageblock, read-only.
//!
//! Sources, all under one directory (`/proc`, or a snapshot of it): `zoneinfo` (required:
//! the zones, their spans and free pages), `buddyinfo`, `pagetypeinfo` (root: the pageblock
//! order and the blocks per migratetype), `iomem` (root: where RAM is, so that holes inside a
//! zone's span are not taken for kernel pages) and `kpageflags` (root: one flags word per pfn;
//! a snapshot may hold `kpageflags.zst`), and `vmstat` for the huge page and compaction
//! counters. With kpageflags every pageblock is classified
//! by what it holds ([`blocks`]; memory the kernel does not manage — offline, or struct pages
//! not initialised yet — is a state of its own); without it, whole free pageblocks come from buddyinfo and
//! the rest is reported as unreadable, with the reason.

pub mod blocks;
pub mod history;
pub mod kpageflags;
pub mod metrics;

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use pageblock_formats::buddyinfo::{free_blocks_of, BuddyInfo};
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::{ZoneInfo, ZoneInfoZone};
use serde::Serialize;

pub use blocks::ZoneBlocks;
pub use history::History;
use pageblock_view::BlockKind;

/// `pageblock_order` when `pagetypeinfo` cannot be read (x86-64's `HPAGE_PMD_ORDER`).
pub const DEFAULT_PAGEBLOCK_ORDER: u32 = 9;

/// The `vmstat` counters the report carries.
pub const VMSTAT_ITEMS: [&str; 12] = [
    "thp_fault_alloc",
    "thp_fault_fallback",
    "compact_stall",
    "compact_fail",
    "compact_success",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "compact_daemon_wake",
    "pgmigrate_success",
    "allocstall_normal",
    "pgscan_kswapd",
    "pswpout",
];

/// The exporter's metric name of each [`VMSTAT_ITEMS`] counter.
pub const VMSTAT_METRICS: [(&str, &str); 12] = [
    ("thp_fault_alloc", "pageblock_vmstat_thp_fault_alloc_total"),
    ("thp_fault_fallback", "pageblock_vmstat_thp_fault_fallback_total"),
    ("compact_stall", "pageblock_vmstat_compact_stall_total"),
    ("compact_fail", "pageblock_vmstat_compact_fail_total"),
    ("compact_success", "pageblock_vmstat_compact_success_total"),
    ("compact_migrate_scanned", "pageblock_vmstat_compact_migrate_scanned_total"),
    ("compact_free_scanned", "pageblock_vmstat_compact_free_scanned_total"),
    ("compact_daemon_wake", "pageblock_vmstat_compact_daemon_wake_total"),
    ("pgmigrate_success", "pageblock_vmstat_pgmigrate_success_total"),
    ("allocstall_normal", "pageblock_vmstat_allocstall_normal_total"),
    ("pgscan_kswapd", "pageblock_vmstat_pgscan_kswapd_total"),
    ("pswpout", "pageblock_vmstat_pswpout_total"),
];

/// pfns read from kpageflags per `pread` (8 MiB of flags).
const CHUNK_PFNS: u64 = 1 << 20;

/// One zone, as inspected.
#[derive(Clone, Debug, Serialize)]
pub struct ZoneReport {
    /// NUMA node.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// First pfn.
    pub start_pfn: u64,
    /// Spanned pages.
    pub spanned: u64,
    /// Managed pages.
    pub managed: u64,
    /// `NR_FREE_PAGES` from zoneinfo (per-CPU cached pages are not in it).
    pub nr_free_pages: u64,
    /// Free blocks per order, from buddyinfo.
    pub buddy_free: Option<Vec<u64>>,
    /// Free blocks per order per migratetype, from pagetypeinfo (root; the kernel stops
    /// counting a list at 100000).
    pub free_by_migratetype: Option<Vec<(String, Vec<u64>)>>,
    /// Whole free pageblocks by buddyinfo: free blocks of at least pageblock order, in
    /// pageblocks.
    pub buddyinfo_free_pageblocks: Option<u64>,
    /// Pageblocks per migratetype, from pagetypeinfo (root).
    pub blocks_by_migratetype: Option<Vec<(String, u64)>>,
    /// The pageblocks by content, from kpageflags (root).
    #[serde(flatten)]
    pub content: Option<ZoneBlocks>,
}

/// A whole inspection.
#[derive(Clone, Debug, Serialize)]
pub struct Inspection {
    /// `pageblock_order` used.
    pub pageblock_order: u32,
    /// Populated zones.
    pub zones: Vec<ZoneReport>,
    /// Huge page and compaction counters from `vmstat` (since boot).
    pub vmstat: Vec<(String, u64)>,
    /// Sources that could not be read, and why.
    pub unreadable: Vec<(String, String)>,
    /// Each source tried (`zoneinfo`, `buddyinfo`, …) and whether it could be read.
    pub sources: Vec<(String, bool)>,
    /// Seconds the inspection took.
    pub seconds: f64,
}

/// Why an inspection failed outright.
#[derive(Debug)]
pub struct InspectError(pub String);

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InspectError {}

fn read_text(dir: &Path, name: &str) -> Result<String, String> {
    std::fs::read_to_string(dir.join(name)).map_err(|e| e.to_string())
}

/// The flags of pfns `start..start + len`, from a live `kpageflags` (`pread`) or a snapshot.
enum Flags {
    Live(File),
    Snapshot(Vec<u64>),
}

impl Flags {
    fn open(dir: &Path) -> Result<Flags, String> {
        let live = dir.join("kpageflags");
        match File::open(&live) {
            Ok(f) => return Ok(Flags::Live(f)),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.to_string()),
            Err(_) => {}
        }
        let zst = dir.join("kpageflags.zst");
        let mut bytes = Vec::new();
        let file = File::open(&zst).map_err(|_| "no kpageflags here".to_owned())?;
        zstd::stream::read::Decoder::new(file)
            .and_then(|mut d| d.read_to_end(&mut bytes))
            .map_err(|e| format!("{}: {e}", zst.display()))?;
        Ok(Flags::Snapshot(
            bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect(),
        ))
    }

    /// Fill `out` with the words of pfns from `start`; pfns past the end read as holes.
    /// `bytes` is the read buffer, kept by the caller across chunks.
    fn read(&self, start: u64, out: &mut [u64], bytes: &mut Vec<u8>) -> Result<(), String> {
        const HOLE: u64 = 1 << kpageflags::KPF_NOPAGE;
        match self {
            Flags::Snapshot(v) => {
                for (i, w) in out.iter_mut().enumerate() {
                    *w = v.get(start as usize + i).copied().unwrap_or(HOLE);
                }
            }
            Flags::Live(f) => {
                bytes.resize(out.len() * 8, 0);
                let mut got = 0;
                while got < bytes.len() {
                    match f.read_at(&mut bytes[got..], start * 8 + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                for (i, w) in out.iter_mut().enumerate() {
                    let b = &bytes[i * 8..i * 8 + 8];
                    *w = if i * 8 < got { u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) } else { HOLE };
                }
            }
        }
        Ok(())
    }
}

/// The pfn ranges of `System RAM` in `iomem` (root: others see zero addresses, and `None`
/// comes back). Pfns outside them are holes, whatever kpageflags says of them (the kernel
/// reports a flagless page for holes inside a memory section).
fn system_ram(dir: &Path) -> Result<Vec<(u64, u64)>, String> {
    let text = read_text(dir, "iomem")?;
    let mut ranges = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with(' ')) {
        let Some((span, what)) = line.split_once(" : ") else {
            continue;
        };
        if what.trim() != "System RAM" {
            continue;
        }
        let parse =
            |h: &str| u64::from_str_radix(h.trim(), 16).map_err(|e| format!("iomem line `{line}`: {e}"));
        let (a, b) = span.split_once('-').ok_or_else(|| format!("iomem line `{line}`: no range"))?;
        let (a, b) = (parse(a)?, parse(b)?);
        if b > a {
            ranges.push((a.div_ceil(4096), (b + 1) / 4096));
        }
    }
    if ranges.is_empty() {
        return Err("no System RAM ranges with addresses (root can see them)".into());
    }
    Ok(ranges)
}

/// Mark the words of pfns `start..` that lie outside every RAM range as holes.
fn mark_holes(ram: &[(u64, u64)], start: u64, words: &mut [u64]) {
    const HOLE: u64 = 1 << kpageflags::KPF_NOPAGE;
    let end = start + words.len() as u64;
    let mut pfn = start;
    for &(a, b) in ram.iter().filter(|&&(a, b)| b > start && a < end) {
        for w in &mut words[(pfn - start) as usize..(a.max(pfn) - start) as usize] {
            *w = HOLE;
        }
        pfn = pfn.max(b.min(end));
    }
    for w in &mut words[(pfn - start) as usize..] {
        *w = HOLE;
    }
}

/// Classify every pageblock of the zone `[start, start + spanned)`.
fn zone_content(
    flags: &Flags,
    ram: Option<&[(u64, u64)]>,
    start: u64,
    spanned: u64,
    order: u32,
) -> Result<ZoneBlocks, String> {
    // Read whole pageblocks per chunk so that no block is split across two tallies.
    let pb = 1u64 << order;
    let first = start & !(pb - 1);
    let end = start + spanned;
    let mut total = ZoneBlocks::default();
    let mut buf = vec![0u64; CHUNK_PFNS.max(pb) as usize];
    let mut bytes = Vec::new();
    let mut chunk = first;
    while chunk < end {
        let lo = chunk.max(start);
        let hi = (chunk + CHUNK_PFNS.max(pb)).min(end);
        let words = &mut buf[..(hi - lo) as usize];
        flags.read(lo, words, &mut bytes)?;
        if let Some(ram) = ram {
            mark_holes(ram, lo, words);
        }
        let part = ZoneBlocks::tally(lo, words, order);
        total.merge(part);
        chunk += CHUNK_PFNS.max(pb);
    }
    Ok(total)
}

/// [`zone_content`] of zone `z` (from `start`), with what it has beyond its managed pages and
/// the reserved and offline pages the flags show — struct pages not initialised yet — taken
/// out as not managed.
fn managed_content(
    flags: &Flags,
    ram: Option<&[(u64, u64)]>,
    z: &ZoneInfoZone,
    start: u64,
    order: u32,
) -> Result<ZoneBlocks, String> {
    let mut c = zone_content(flags, ram, start, z.spanned, order)?;
    let p = &c.pages;
    c.mark_not_managed(z.present.saturating_sub(z.managed + p.reserved + p.not_managed));
    Ok(c)
}

/// Inspect the kernel whose `/proc` (or a snapshot of it) is `dir`.
pub fn inspect(dir: &Path) -> Result<Inspection, InspectError> {
    inspect_sources(dir, true)
}

/// Inspect without kpageflags (and iomem): the cheap picture, from the small text files only
/// (free blocks, pageblocks per migratetype, indices, counters), in milliseconds whatever the
/// size of memory.
pub fn inspect_cheap(dir: &Path) -> Result<Inspection, InspectError> {
    inspect_sources(dir, false)
}

fn inspect_sources(dir: &Path, read_kpageflags: bool) -> Result<Inspection, InspectError> {
    let t0 = Instant::now();
    let mut unreadable = Vec::new();
    let zoneinfo = read_text(dir, "zoneinfo")
        .map_err(|e| InspectError(format!("{}: {e}", dir.join("zoneinfo").display())))?;
    let zoneinfo = ZoneInfo::parse(&zoneinfo)
        .map_err(|e| InspectError(format!("{}: {e}", dir.join("zoneinfo").display())))?;
    let mut note = |name: &str, why: String| unreadable.push((dir.join(name).display().to_string(), why));
    let pagetypeinfo = read_text(dir, "pagetypeinfo")
        .and_then(|t| PageTypeInfo::parse(&t).map_err(|e| e.to_string()))
        .map_err(|e| note("pagetypeinfo", e))
        .ok();
    let buddyinfo = read_text(dir, "buddyinfo")
        .and_then(|t| BuddyInfo::parse(&t).map_err(|e| e.to_string()))
        .map_err(|e| note("buddyinfo", e))
        .ok();
    let flags = match Flags::open(dir) {
        _ if !read_kpageflags => None,
        Ok(f) => Some(f),
        Err(e) => {
            note("kpageflags", e);
            None
        }
    };
    let ram = flags.as_ref().and_then(|_| system_ram(dir).map_err(|e| note("iomem", e)).ok());
    let order = pagetypeinfo
        .as_ref()
        .and_then(|p| p.nodes.first())
        .map_or(DEFAULT_PAGEBLOCK_ORDER, |n| n.pageblock_order);
    let mut zones = Vec::new();
    for z in &zoneinfo.zones {
        let Some(pop) = &z.populated else {
            continue;
        };
        if z.spanned == 0 {
            continue;
        }
        if let Some(Flags::Snapshot(v)) = &flags {
            if (v.len() as u64) < pop.start_pfn + z.spanned {
                let why = format!(
                    "the snapshot ends at pfn {:#x}: zone {} reads as holes past it",
                    v.len(),
                    z.zone
                );
                note("kpageflags.zst", why);
            }
        }
        let content = match &flags {
            Some(f) => match managed_content(f, ram.as_deref(), z, pop.start_pfn, order) {
                Ok(c) => Some(c),
                Err(e) => {
                    note("kpageflags", e);
                    None
                }
            },
            None => None,
        };
        zones.push(ZoneReport {
            node: z.node,
            zone: z.zone.clone(),
            start_pfn: pop.start_pfn,
            spanned: z.spanned,
            managed: z.managed,
            nr_free_pages: z.pages_free,
            buddy_free: buddyinfo.as_ref().and_then(|b| {
                b.zones.iter().find(|r| r.node == z.node && r.zone == z.zone).map(|r| r.nr_free.clone())
            }),
            free_by_migratetype: pagetypeinfo.as_ref().map(|p| free_rows(p, z.node, &z.zone)),
            buddyinfo_free_pageblocks: buddyinfo
                .as_ref()
                .and_then(|b| buddy_free_pageblocks(b, z.node, &z.zone, order)),
            blocks_by_migratetype: pagetypeinfo.as_ref().and_then(|p| blocks_of(p, z.node, &z.zone)),
            content,
        });
    }
    let vmstat = match read_text(dir, "vmstat").and_then(|t| VmStat::parse(&t).map_err(|e| e.to_string())) {
        Ok(v) => VMSTAT_ITEMS.iter().filter_map(|&k| v.get(k).map(|n| (k.to_owned(), n))).collect(),
        Err(e) => {
            unreadable.push((dir.join("vmstat").display().to_string(), e));
            Vec::new()
        }
    };
    let mut tried = vec!["zoneinfo", "buddyinfo", "pagetypeinfo", "vmstat"];
    tried.extend(read_kpageflags.then_some("kpageflags"));
    tried.extend(flags.is_some().then_some("iomem"));
    let sources = sources_read(dir, &tried, &unreadable);
    Ok(Inspection {
        pageblock_order: order,
        zones,
        vmstat,
        unreadable,
        sources,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Each source tried and whether it was read (it is not among the `unreadable`).
fn sources_read(dir: &Path, tried: &[&str], unreadable: &[(String, String)]) -> Vec<(String, bool)> {
    tried
        .iter()
        .map(|&name| {
            let path = dir.join(name).display().to_string();
            (name.to_owned(), !unreadable.iter().any(|(p, _)| *p == path))
        })
        .collect()
}

/// Free blocks of at least pageblock order, counted in pageblocks.
fn buddy_free_pageblocks(b: &BuddyInfo, node: u32, zone: &str, order: u32) -> Option<u64> {
    Some(free_blocks_of(&b.zone(node, zone)?.nr_free, order))
}

fn free_rows(p: &PageTypeInfo, node: u32, zone: &str) -> Vec<(String, Vec<u64>)> {
    p.nodes
        .iter()
        .flat_map(|n| &n.free)
        .filter(|r| r.node == node && r.zone == zone)
        .map(|r| (r.migratetype.clone(), r.counts.iter().map(|c| c.count).collect()))
        .collect()
}

fn blocks_of(p: &PageTypeInfo, node: u32, zone: &str) -> Option<Vec<(String, u64)>> {
    let n = p.nodes.iter().find(|n| n.blocks.rows.iter().any(|r| r.node == node))?;
    let row = n.blocks.rows.iter().find(|r| r.node == node && r.zone == zone)?;
    Some(n.blocks.migratetypes.iter().cloned().zip(row.counts.iter().copied()).collect())
}

impl Inspection {
    /// The HTML report: each zone's pageblock map, the summary; with a watch run's history,
    /// the counts over time and the kept maps as small multiples.
    pub fn html(&self, history: Option<&History>) -> String {
        let mut page = pageblock_view::html::Page::new("pageblock inspect: this machine's pageblocks");
        let maps: Vec<(String, &[BlockKind])> = self
            .zones
            .iter()
            .filter_map(|z| {
                z.content.as_ref().map(|c| (format!("Node {}, zone {}", z.node, z.zone), c.kinds.as_slice()))
            })
            .collect();
        if maps.is_empty() {
            page.para("No pageblock map: /proc/kpageflags could not be read (run as root).");
        } else {
            page.heading(&format!(
                "Pageblock map (order {}, one cell per pageblock, lowest pfn top left)",
                self.pageblock_order
            ));
            page.maps(&maps);
        }
        if let Some(h) = history.filter(|h| h.len() > 1) {
            page.heading("Over time");
            for (title, pick) in [
                ("Whole free pageblocks", History::free as fn(&History, usize) -> &[f64]),
                ("Mixed pageblocks", History::mixed),
            ] {
                let series: Vec<(String, Vec<f64>)> = self
                    .zones
                    .iter()
                    .enumerate()
                    .map(|(i, z)| (z.zone.clone(), pick(h, i).to_vec()))
                    .collect();
                page.chart(title, "sample", "pageblocks", &series);
            }
            page.heading(&format!("Maps over time (small multiples, the last {} samples)", h.kept()));
            let rows: Vec<pageblock_view::html::MapRow<'_>> = self
                .zones
                .iter()
                .enumerate()
                .filter(|(_, z)| z.content.as_ref().is_some_and(|c| c.kinds.len() > 8))
                .map(|(i, z)| {
                    let maps = h.maps(i).map(|(k, kinds)| (format!("sample {k}"), kinds)).collect();
                    (format!("Node {}, zone {}", z.node, z.zone), maps)
                })
                .collect();
            page.small_multiples(&rows);
        }
        page.heading("Summary");
        page.pre(&self.render());
        page.render()
    }
}

/// Where inspect reads by default.
pub fn default_proc() -> PathBuf {
    PathBuf::from("/proc")
}

impl Inspection {
    /// The text summary.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let pb_mib = (1u64 << self.pageblock_order) * 4 / 1024;
        let _ = writeln!(
            out,
            "pageblocks of order {} ({} MiB), read in {:.3} s",
            self.pageblock_order,
            pb_mib.max(1),
            self.seconds
        );
        for z in &self.zones {
            let _ = writeln!(
                out,
                "\nNode {}, zone {:>8}: pfns {:#x}..{:#x}, {} managed pages, {} free",
                z.node,
                z.zone,
                z.start_pfn,
                z.start_pfn + z.spanned,
                z.managed,
                z.nr_free_pages
            );
            if let Some(c) = &z.content {
                let pct =
                    |n: u64| if c.pageblocks == 0 { 0.0 } else { 100.0 * n as f64 / c.pageblocks as f64 };
                let _ = writeln!(out, "  pageblocks   {:>9}", c.pageblocks);
                for (name, n) in [
                    ("free", c.free_pageblocks),
                    ("thp", c.thp_pageblocks),
                    ("movable", c.movable_pageblocks),
                    ("unmovable", c.unmovable_pageblocks),
                    ("mixed", c.mixed_pageblocks),
                    ("  by slab", c.mixed_slab_pageblocks),
                    ("hugetlb", c.hugetlb_pageblocks),
                    ("not managed", c.not_managed_pageblocks),
                    ("hole", c.hole_pageblocks),
                ] {
                    let _ = writeln!(out, "    {name:<11} {n:>8}  {:>5.1}%", pct(n));
                }
                let p = &c.pages;
                let _ = writeln!(
                    out,
                    "  pages: free {}, movable {} (thp {}), slab {}, page tables {}, reserved {}, other kernel {}, hugetlb {}, not managed {}",
                    p.free, p.movable, p.thp, p.slab, p.page_table, p.reserved, p.kernel, p.hugetlb, p.not_managed
                );
            }
            if let Some(n) = z.buddyinfo_free_pageblocks {
                let _ = writeln!(out, "  buddyinfo: {n} free pageblocks");
            }
            if let Some(b) = &z.blocks_by_migratetype {
                let list: Vec<String> = b.iter().map(|(t, n)| format!("{t} {n}")).collect();
                let _ = writeln!(out, "  pagetypeinfo blocks: {}", list.join(", "));
            }
        }
        if !self.vmstat.is_empty() {
            let list: Vec<String> = self.vmstat.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(out, "\nvmstat: {}", list.join(", "));
        }
        for (path, why) in &self.unreadable {
            let _ = writeln!(out, "\nnot read: {path}: {why}");
        }
        if self.unreadable.iter().any(|(p, _)| p.ends_with("kpageflags")) {
            let _ = writeln!(out, "(the per-pageblock picture needs /proc/kpageflags: run as root)");
        }
        out
    }
}
