//! Replaying a real kernel's page-allocator trace against the simulator, under one or more
//! policies, side by side — "what would this policy have done on my workload?" — and, for
//! the kernel's own policy, how far the simulation is from what the kernel really did.
//!
//! ```text
//! load      the trace into 32-byte records (once), its own event counts, the snapshots
//! machine   the recorded machine's zones and CPUs, booted in the trace's starting state
//! balloon   what-if: memory taken away from the recorded machine first
//! thp_settings  what-if: the huge page faults under other THP settings
//! engine    the trace's requests through the one allocation path, per policy
//! start_pages  the pages from before the trace, and where compaction moved them
//! fallback  what a caller does when the simulation refuses what the kernel served
//! series    huge-page availability over time
//! fidelity  the simulation's kernel events and end state next to the real ones
//! ```
//!
//! Each policy's vmstat delta over the replay, in the kernel's names ([`PRESSURE_ROWS`]), sits
//! beside the real kernel's (the snapshots' difference or `vmstat-delta.txt`).

pub mod after_files;
pub mod balloon;
pub mod closed_loop;
pub mod daemon_timing;
pub mod engine;
pub mod facts;
pub mod fallback;
pub mod fidelity;
pub mod kmem_counts;
pub mod load;
pub mod machine;
pub mod need_resched;
pub mod pfnmap;
pub mod predict;
pub mod reclaim_looks;
pub mod report;
pub mod series;
pub mod skip_hints;
pub mod snapshot;
pub mod start;
pub mod start_pages;
pub mod swap_space;
pub mod thp_settings;
pub mod type_samples;
pub mod zone_samples;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use pageblock_formats::vmstat::{VmStat, PRESSURE_ROWS};

use pageblock_core::named_policy::NamedPolicy;
use pageblock_core::show;
use pageblock_core::thp::{ThpDefrag, ThpEnabled};
use thp_settings::{ThpSettings, ThpWhatIf};

pub use report::{PolicyResult, ReplayReport};

/// Where a replay is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage<'a> {
    /// Reading the trace: bytes of the file read so far, of `total`.
    Loading {
        /// Bytes read.
        bytes: u64,
        /// The file's size.
        total: Option<u64>,
    },
    /// Replaying under a policy and seed: records done of `total`.
    Replaying {
        /// The policy.
        policy: &'a str,
        /// The seed (1 ..= `Options::seeds`).
        seed: u64,
        /// Records replayed.
        done: u64,
        /// Records in the trace.
        total: u64,
    },
}

/// Open or closed loop for a replay: as asked, or by default closed when the trace shows the
/// kernel reclaiming or compacting (kswapd or kcompactd freed pages, or compaction ran) or a
/// balloon squeezes the machine (`--balloon`, `--mem`: the simulation's reclaim then needs the workload's pages
/// on its lists).
pub fn loop_for(t: &load::LoadedTrace, options: &Options) -> engine::Loop {
    options.mode.unwrap_or_else(|| {
        let compacted = t.counts.events.get("mm_compaction_begin").copied().unwrap_or(0) > 0;
        if t.counts.daemon_frees > 0 || compacted || options.balloon_pages > 0 || options.mem_pages.is_some()
        {
            engine::Loop::Closed
        } else {
            engine::Loop::Open
        }
    })
}

/// How to replay, beyond the policies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Count malformed lines and go on instead of stopping at the first.
    pub skip_bad: bool,
    /// Open or closed loop (`None`: as [`loop_for`] chooses).
    pub mode: Option<engine::Loop>,
    /// Base pages of free memory a balloon takes away before the replay ([`balloon`]).
    pub balloon_pages: u64,
    /// What if the machine had this many base pages (managed): a balloon takes the rest
    /// (instead of `balloon_pages`).
    pub mem_pages: Option<u64>,
    /// What if the machine were the one this zoneinfo file describes, instead of the
    /// recording's `before.zoneinfo` ([`machine`]).
    pub zoneinfo: Option<std::path::PathBuf>,
    /// What if THP `enabled` were this ([`thp_settings`]).
    pub thp_enabled: Option<ThpEnabled>,
    /// What if THP `defrag` were this.
    pub thp_defrag: Option<ThpDefrag>,
    /// CPUs of the simulated machine instead of the recorded machine's (the trace's CPUs
    /// are folded onto them: CPU `c` replays on `c % cpus`).
    pub cpus: Option<u32>,
    /// What if the machine could swap (`Some(true)`) or not, instead of what the recording
    /// says ([`swap_space`]).
    pub swap: Option<bool>,
    /// Write each policy's machine at the end (the first seed) into this directory as
    /// `POLICY.after.*` ([`after_files`]).
    pub after_dir: Option<std::path::PathBuf>,
    /// Replays per policy, each with its own draw of the daemons' timing
    /// ([`daemon_timing`]): `seeds` of them (0 counts as 1) from [`Options::first_seed`].
    pub seeds: u32,
    /// The first seed (0 counts as 1); the report's columns are its replay. To look closely
    /// at the one seed of a range that went astray.
    pub first_seed: u64,
    /// Boot with every compaction skip hint clear instead of as the trace's first runs show
    /// them ([`skip_hints`]).
    pub clear_skip_hints: bool,
}

/// Replay the trace at `path` under each of `policies`, in order, as `options` say.
pub fn run(
    path: &Path,
    policies: &[NamedPolicy],
    options: Options,
    progress: &mut dyn FnMut(Stage<'_>),
) -> Result<ReplayReport, String> {
    let trace = load_trace(path, &options, progress)?;
    replay_trace(&trace, policies, &options, progress)
}

/// Read the trace at `path` as `options` say (`skip_bad`, `zoneinfo`), once for any number of
/// [`replay_trace`] calls.
pub fn load_trace(
    path: &Path,
    options: &Options,
    progress: &mut dyn FnMut(Stage<'_>),
) -> Result<load::LoadedTrace, String> {
    let zoneinfo = options.zoneinfo.as_deref().map(read_zoneinfo).transpose()?;
    load::load(path, (options.skip_bad, zoneinfo), &mut |bytes, total| {
        progress(Stage::Loading { bytes, total })
    })
}

/// Replay `trace` (read by [`load_trace`]) under each of `policies`, in order, as `options`
/// say; the report's seconds are the reading's and these replays'.
pub fn replay_trace(
    trace: &load::LoadedTrace,
    policies: &[NamedPolicy],
    options: &Options,
    progress: &mut dyn FnMut(Stage<'_>),
) -> Result<ReplayReport, String> {
    let started = Instant::now();
    let mode = loop_for(trace, options);
    let mut config = machine::node_config(trace)?;
    if let Some(cpus) = options.cpus {
        for z in &mut config.zones {
            z.nr_cpus = cpus;
        }
    }
    let balloon = match options.mem_pages {
        Some(mem) => config.managed_pages().checked_sub(mem).ok_or_else(|| {
            format!(
                "--mem: the recorded machine manages {} MiB; a replay can take memory away, not add it",
                config.managed_pages() >> (20 - pageblock_core::types::PAGE_SHIFT)
            )
        })?,
        None => options.balloon_pages,
    };
    let thp = thp_what_if(trace, options)?;
    if let Some(dir) = options.after_dir.as_ref().filter(|d| !d.is_dir()) {
        return Err(format!("--after-dir {}: not a directory", dir.display()));
    }
    let swap = swap_space::swap_space(&trace.snapshots, options.swap);
    let mut results = Vec::new();
    let mut start_report = None;
    let mut fidelity = None;
    let own_policy = fidelity::own_policy(trace)?;
    for p in policies {
        let mut first: Option<PolicyResult> = None;
        let mut seed_runs = Vec::new();
        let first_seed = options.first_seed.max(1);
        for seed in first_seed..first_seed + u64::from(options.seeds.max(1)) {
            let (mut node, mut start) = machine::boot(trace, &config, &p.policy)?;
            start.skip_hints = if options.clear_skip_hints {
                "clear (--clear-skip-hints)".into()
            } else {
                trace.skip_hints.apply(&node, seed);
                trace.skip_hints.source(&node)
            };
            start_report.get_or_insert(start);
            let (wake_delay, phases) = trace.kswapd_wake_latency.timing(seed);
            node.set_daemon_timing(wake_delay, phases);
            node.set_need_resched(trace.need_resched.draw(seed));
            let mixed_start = mixed_pageblocks(node.shared());
            let vmstat_start = show::vmstat(node.shared());
            let records = trace.records.len() as u64;
            let setup = engine::Setup { mode, balloon, thp, swap: swap.swap };
            let done = engine::replay(trace, node, setup, &mut |done| {
                progress(Stage::Replaying { policy: p.name, seed, done, total: records })
            });
            if done.balloon_pages < balloon {
                return Err(format!(
                    "{}: the machine had {} pages to give above its watermarks, not {} ({})",
                    if options.mem_pages.is_some() { "--mem" } else { "--balloon" },
                    done.balloon_pages,
                    balloon,
                    p.name
                ));
            }
            // A replay that breaks an invariant is a bug in the allocator or the replay.
            done.node.verify().map_err(|e| format!("{} (seed {seed}): after the replay: {e}", p.name))?;
            let vmstat = pressure_rows(&VmStat::delta(&vmstat_start, &show::vmstat(done.node.shared())));
            seed_runs.push(report::SeedRun::new(seed, &done, vmstat.clone()));
            if first.is_some() {
                continue;
            }
            let mut result = PolicyResult::new(
                p.name,
                &done,
                (mixed_start, mixed_pageblocks(done.node.shared())),
                vmstat,
                (records, trace.counts.events.values().sum()),
            );
            result.zone_types = (trace.snapshots.pagetypeinfo_samples.as_ref())
                .map(|real| type_samples::compare(real, done.zone_samples.types()));
            if let Some(dir) = &options.after_dir {
                after_files::write(dir, p.name, &done.node)?;
            }
            // The kernel's own policy is the one whose distance to the kernel means something.
            if p.name == own_policy && trace.snapshots.after_buddyinfo.is_some() {
                fidelity = Some(fidelity::table(trace, own_policy, &done, result.zone_types.clone()));
            }
            first = Some(result);
        }
        if let Some(mut result) = first {
            result.seeds = seed_runs;
            results.push(result);
        }
    }
    let start = start_report.unwrap_or_default();
    let real = trace.snapshots.real_vmstat_delta().map(|d| pressure_rows(&d));
    let mut report = ReplayReport::new(
        trace,
        start,
        results,
        (fidelity, real),
        mode,
        swap,
        trace.load_seconds + started.elapsed().as_secs_f64(),
    );
    report.thp = thp.map(|w| report::ThpSide { recorded: w.recorded.label(), replayed: w.replayed.label() });
    Ok(report)
}

/// A `--zoneinfo` file.
fn read_zoneinfo(path: &Path) -> Result<pageblock_formats::zoneinfo::ZoneInfo, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--zoneinfo {}: {e}", path.display()))?;
    pageblock_formats::zoneinfo::ZoneInfo::parse(&text)
        .map_err(|e| format!("--zoneinfo {}: {e}", path.display()))
}

/// The THP what-if `options` ask for, if they ask for settings other than the recording's.
fn thp_what_if(t: &load::LoadedTrace, options: &Options) -> Result<Option<ThpWhatIf>, String> {
    if options.thp_enabled.is_none() && options.thp_defrag.is_none() {
        return Ok(None);
    }
    let dir = t.file.parent().unwrap_or(Path::new("."));
    let recorded = ThpSettings::recorded(dir)?.ok_or_else(|| {
        format!(
            "--thp-enabled/--thp-defrag: the recording does not say its THP settings; put the recording machine's \
             sysfs files beside the trace as {} and {}",
            dir.join("thp.enabled").display(),
            dir.join("thp.defrag").display()
        )
    })?;
    let replayed = ThpSettings {
        enabled: options.thp_enabled.unwrap_or(recorded.enabled),
        defrag: options.thp_defrag.unwrap_or(recorded.defrag),
    };
    if replayed == recorded {
        return Ok(None);
    }
    ThpWhatIf::new(recorded, replayed).map(Some)
}

/// The rows of `delta` a run under pressure is judged by ([`PRESSURE_ROWS`]), by name; a
/// counter the kernel lacks counts 0.
fn pressure_rows(delta: &VmStat) -> BTreeMap<String, u64> {
    PRESSURE_ROWS.iter().map(|&n| (n.to_owned(), delta.get(n).unwrap_or(0))).collect()
}

/// Pageblocks page_owner would call mixed, over every zone.
fn mixed_pageblocks(node: &pageblock_core::NodeShared) -> u64 {
    node.zones().iter().map(|z| show::mixed_block_counts(z).iter().sum::<u64>()).sum()
}
