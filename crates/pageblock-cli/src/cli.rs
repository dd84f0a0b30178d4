//! The command line, exactly as typed (clap derive). Validation into run specs happens in
//! [`crate::spec`].

use clap::{Args, Parser, Subcommand, ValueEnum};

/// pageblock: Linux's anti-fragmentation page allocator, as a deterministic lab.
#[derive(Debug, Parser)]
#[command(name = "pageblock", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Boot a 16 GiB zone, run the `fragment` workload, and show /proc/pagetypeinfo before
    /// and after with a summary.
    Demo(DemoArgs),
    /// Run a workload and print one kernel-format report of the zone it leaves behind.
    Show(ShowArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Experiments.
    #[command(subcommand)]
    Lab(LabCommand),
    /// Replay a real kernel trace (a file, or a `pageblock record` directory with its /proc
    /// snapshots) against the simulator under each --policy, side by side; with `vanilla`
    /// and the snapshots, how close the simulation comes to the traced kernel.
    Replay(ReplayArgs),
    /// Record the live kernel's page-allocator tracepoints while COMMAND runs (root):
    /// trace.txt.zst and /proc snapshots before and after, tracefs restored as found.
    Record(crate::cmd::record::RecordArgs),
    /// Real kernel page-allocator traces.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// This machine's memory, pageblock by pageblock (read-only; root for kpageflags and
    /// pagetypeinfo): free, huge-page-backed, movable, unmovable and mixed blocks per zone.
    Inspect(InspectArgs),
    /// Serve this machine's fragmentation as Prometheus metrics on /metrics (scrapes share
    /// an inspection, cached for --cache-seconds).
    Exporter(ExporterArgs),
}

/// `pageblock exporter`.
#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9749")]
    pub listen: String,
    /// Where to read /proc's files from (a snapshot directory works too).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc: std::path::PathBuf,
    /// Print one scrape on stdout and exit (no server).
    #[arg(long)]
    pub once: bool,
    /// Serve an inspection to the scrapes of the next SECONDS (concurrent scrapes always
    /// share the one in flight; 0: every scrape inspects afresh).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub cache_seconds: f64,
    /// Do not read kpageflags (linear in memory: 0.6 s at 24 GiB): free blocks, pageblocks
    /// per migratetype, indices and counters only, in milliseconds.
    #[arg(long)]
    pub no_kpageflags: bool,
    /// Threads answering requests (at most 512 connections are open at once; further clients
    /// wait).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
}

/// `pageblock inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Where to read zoneinfo, buddyinfo, pagetypeinfo, iomem, vmstat and kpageflags from: /proc, or
    /// a snapshot of those files (kpageflags may be kpageflags.zst).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc: std::path::PathBuf,
    /// Also write the results as JSON to FILE (with --watch: `{"samples": [...]}`, rewritten
    /// after every sample, so it is complete after Ctrl-C or SIGTERM).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Inspect every SECONDS (a fixed rate; ticks missed by a slow inspection are skipped),
    /// one line per sample (a time series).
    #[arg(long, value_name = "SECONDS")]
    pub watch: Option<f64>,
    /// With --watch: stop after N samples (default: until interrupted).
    #[arg(long, value_name = "N", requires = "watch")]
    pub count: Option<u64>,
    /// With --watch --html: draw the maps of the last N samples (every sample's counts are
    /// charted); the memory held stays bounded however long the watch.
    #[arg(long, value_name = "N", default_value_t = pageblock_live::inspect::history::DEFAULT_KEPT_MAPS, requires = "watch")]
    pub keep_maps: usize,
    /// Also write a self-contained HTML page (pageblock maps; with --watch, their history).
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Also print each zone's pageblock map (colour when stdout is a terminal).
    #[arg(long)]
    pub map: bool,
}

/// `pageblock trace ...`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Statistics of a trace of the kmem page events (and compaction events): ftrace text
    /// (`/sys/kernel/tracing/trace`, `trace_pipe`) or `perf script` output, plain, gzip or zstd.
    Stats(TraceStatsArgs),
}

/// `pageblock trace stats`.
#[derive(Debug, Args)]
pub struct TraceStatsArgs {
    /// The trace file (compression is told by its content), or a `pageblock record` directory.
    pub file: std::path::PathBuf,
    /// Also write the statistics as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Count malformed lines and go on, instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad: bool,
    /// The file is `perf script` output (default: told by its first event line).
    #[arg(long)]
    pub perf: bool,
}

/// `pageblock lab ...`.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Reproduce each seed patch's experiment, before next to after, in mmtests tables.
    Seeds(SeedsArgs),
    /// Seed 004: huge page success and its reclaim and compaction costs under each policy,
    /// run after run on the same node, in the seed's table.
    Thp(ThpArgs),
    /// The real kernel (root): a pressure workload under each defrag_mode and THP setting,
    /// N runs each, every run recorded (tracepoints, /proc snapshots, vmstat delta, mTHP
    /// counters) into a directory `trace stats` and `replay` read, with a table across runs.
    /// Every setting it changes goes back as found, also on Ctrl-C.
    Real(Box<RealArgs>),
    /// A process of a `lab real` run (the hog or the load); not for direct use.
    #[command(hide = true, subcommand)]
    RealWorker(RealWorkerCommand),
}

/// `pageblock lab real`.
#[derive(Debug, Args)]
pub struct RealArgs {
    /// Directory to write (new or empty): SETTING/runK/ per run (trace.txt.zst, before./after.
    /// snapshots, vmstat-delta.txt, buddyinfo.samples, pagetypeinfo.samples, mthp.before/after, run.json,
    /// build.log), summary.txt and summary.json. Default: pageblock-real-YYYYmmdd-HHMMSS here.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<std::path::PathBuf>,
    /// The workload's parts, comma-separated: build (a C build; a run lasts until it ends),
    /// bursts (THP-madvised anonymous bursts), churn (page cache read and partly rewritten
    /// over a large file).
    #[arg(long, value_name = "PARTS", default_value = "build,bursts,churn")]
    pub workload: String,
    /// The build's source tree (built with `make -jN` in a fresh copy each run). Default: a
    /// synthetic tree of --build-files C files, about a second and 80 MiB of `cc -O2` each.
    #[arg(long, value_name = "DIR")]
    pub build_tree: Option<std::path::PathBuf>,
    /// Files of the synthetic build.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub build_files: u32,
    /// `make -j` for the build (default: the CPUs online).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub build_jobs: Option<u32>,
    /// Size of a THP burst.
    #[arg(long, value_name = "SIZE", default_value = "256M")]
    pub bursts: String,
    /// Time from one burst's start to the next's, ms (each burst is held that long).
    #[arg(long, value_name = "MS", default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..))]
    pub bursts_period_ms: u64,
    /// Size of the churned file (default: twice --available, or 4G without a hog).
    #[arg(long, value_name = "SIZE")]
    pub churn: Option<String>,
    /// MemAvailable an mlocked hog leaves the workload, or `none` for no hog.
    #[arg(long, value_name = "SIZE|none", default_value = "2G")]
    pub available: String,
    /// A swap file of SIZE in the work directory, on for the session (off again after).
    #[arg(long, value_name = "SIZE")]
    pub swap: Option<String>,
    /// vm.defrag_mode values to run, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "0,1")]
    pub defrag_mode: String,
    /// transparent_hugepage/enabled values to run, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "always")]
    pub thp: String,
    /// transparent_hugepage/defrag values to run, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "madvise")]
    pub thp_defrag: String,
    /// A vm sysctl for the whole session, NAME=VALUE (vm.NAME or NAME); repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    pub sysctl: Vec<String>,
    /// Runs of each setting (interleaved: run 1 of every setting, then run 2, ...).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub runs: u64,
    /// Unrecorded runs of the first setting before the recorded ones, so that every recorded
    /// run begins from a machine the workload itself left (a first run otherwise begins from
    /// whatever came before the session, and cleans it).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub warmup: u64,
    /// A run's length without a build, and the most a build may take, seconds.
    #[arg(long, value_name = "S", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration: u64,
    /// Work files: the build's copy, the churned file, the swap file (kept between sessions).
    #[arg(long, value_name = "DIR", default_value = pageblock_live::real::DEFAULT_WORK_DIR)]
    pub work_dir: std::path::PathBuf,
    /// Ring buffer size per CPU in KiB while recording.
    #[arg(long, value_name = "N", default_value_t = pageblock_live::real::REAL_BUFFER_KB,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub buffer_size_kb: u64,
    /// Events to record (as `record --events`; by default record's).
    #[arg(long, value_name = "LIST", default_value = pageblock_live::record::DEFAULT_EVENTS)]
    pub events: String,
    /// Put back the settings a killed `lab real` left changed, from its journal
    /// (/run/pageblock/real.state, or DIR/real.state), and run nothing.
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["output", "compare"])]
    pub restore: Option<Option<std::path::PathBuf>>,
    /// Run nothing (no root needed): compare the finished session in DIR. Two settings that
    /// differ in one knob are compared: for defrag_mode, each defrag_mode=0 trace is replayed
    /// closed loop under vanilla and defrag_mode; for a THP setting, each trace of the first
    /// is replayed as recorded and with the other's (--thp-enabled/--thp-defrag). Per row
    /// (THP success, compaction scanned, direct reclaim stalls, pgscan_kswapd) the predicted
    /// change sits beside the real change between the two settings' runs and its run-to-run
    /// spread. Also written to DIR/prediction.txt and DIR/prediction.json.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output"])]
    pub compare: Option<std::path::PathBuf>,
    /// With --compare: replay each trace N times per policy (seeds 1..=N, each drawing the
    /// daemons' timing the trace does not tell); the predicted range covers traces and seeds.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "compare",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: u32,
}

/// `pageblock lab real-worker`.
#[derive(Debug, Subcommand)]
pub enum RealWorkerCommand {
    /// Hold MIB MiB mlocked until stdin closes.
    Hog {
        /// Size.
        #[arg(long)]
        mib: u64,
    },
    /// The recorded load.
    Load(RealLoadArgs),
}

/// `pageblock lab real-worker load`.
#[derive(Debug, Args)]
pub struct RealLoadArgs {
    /// Seconds without a build; a build's limit.
    #[arg(long)]
    pub duration: u64,
    /// The tree to build.
    #[arg(long)]
    pub build_dir: Option<std::path::PathBuf>,
    /// `make -j`.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Where make's output goes.
    #[arg(long)]
    pub build_log: Option<std::path::PathBuf>,
    /// THP bursts, MIB:PERIOD_MS.
    #[arg(long)]
    pub bursts: Option<String>,
    /// The file to churn.
    #[arg(long)]
    pub churn_file: Option<std::path::PathBuf>,
}

/// `pageblock lab thp`.
#[derive(Debug, Args)]
pub struct ThpArgs {
    /// The workload: kbuild-thp (a kernel build with bursts of huge page faults) or thpscale
    /// (mmtests' shape).
    #[arg(long, default_value = "kbuild-thp")]
    pub workload: String,
    /// The policies to run, the first the baseline (default: every one).
    #[command(flatten)]
    pub policies: PolicyArgs,
    /// Consecutive runs on each node.
    #[arg(long, default_value_t = 15)]
    pub runs: usize,
    /// A 512 MiB node and shorter builds (CI): the figures keep their meaning, not their size.
    #[arg(long)]
    pub quick: bool,
    /// transparent_hugepage/enabled for kbuild-thp's build: always (its own anonymous memory
    /// faults in huge pages too, as seed 004's ~68k huge page faults per build suggest) or
    /// madvise (only the madvised bursts do). The bursts and thpscale always madvise.
    #[arg(long, default_value = "always")]
    pub thp: String,
    /// transparent_hugepage/defrag: always, defer, defer+madvise, madvise, never. The default,
    /// defer+madvise, is seed 004's as far as its figures tell: the build's own huge page
    /// faults wake kswapd and kcompactd without stalling (its vanilla kcompactd scans ~8.4M
    /// pfns a build, which under madvise little but proactive compaction would ask for), while
    /// the madvised bursts reclaim and compact directly. The kernel's default is madvise.
    #[arg(long, default_value = "defer+madvise")]
    pub defrag: String,
    /// kbuild-thp's compile jobs per build (default 100, 60 with --quick), spread over the
    /// same simulated 197 s: more jobs, a denser build, a proportionally longer run. The
    /// default build faults ~3.7k huge pages on the 2 GiB node; seed 004's counts ~68.6k,
    /// about 3,300 jobs' worth.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pub jobs: Option<u32>,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Also write a self-contained HTML page: THP success, free pageblocks and unusable
    /// index per run, and each policy's final pageblock map, side by side.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Random seed of the workload (not a seed patch).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Whose reclaim rules.
    #[arg(long, value_enum, default_value_t = KernelArg::Linux6_18)]
    pub kernel: KernelArg,
}

/// `pageblock lab seeds`.
#[derive(Debug, Args)]
pub struct SeedsArgs {
    /// Small sizes (about ten seconds): deterministic figures keep their meaning.
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Random seed of the workloads (not a seed patch; `--only` picks those).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the experiments of one seed patch: 0 (pagetypeinfo counts), 1 (buddy
    /// prefetch), 2 (free_area layout) or 3 (rmqueue fallback memory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=3))]
    pub only: Option<u32>,
    /// The policy each experiment switches its seed's knob on (one; default vanilla).
    #[command(flatten)]
    pub policies: PolicyArgs,
}

/// `pageblock replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace: ftrace or perf-script text, plain, gzip or zstd, or a directory holding
    /// trace.txt.zst and before.*/after.* snapshots.
    pub trace: std::path::PathBuf,
    /// The policies to replay under (default: vanilla and defrag_mode).
    #[command(flatten)]
    pub policies: PolicyArgs,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Count malformed lines and go on instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Also write a self-contained HTML page: free pageblocks and huge share over the
    /// replay and each policy's final pageblock map, side by side.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Whose reclaim rules.
    #[arg(long, value_enum, default_value_t = KernelArg::Linux6_18)]
    pub kernel: KernelArg,
    /// What if: the vm sysctls, on top of every policy replayed (the recorded machine's own
    /// values are not in its snapshots; the policy's, the kernel's defaults, are the base).
    #[command(flatten)]
    pub sysctls: SysctlArgs,
    /// What if: a balloon takes SIZE of free memory (largest blocks first, without
    /// reclaiming) away from the recorded machine before the replay; a trace recorded with
    /// room to spare becomes a pressure experiment (e.g. 2G).
    #[arg(long, value_name = "SIZE", value_parser = crate::size::parse_size, conflicts_with = "mem")]
    pub balloon: Option<u64>,
    /// What if: the recorded machine had SIZE of memory (managed pages) instead; a balloon
    /// takes the rest of its free memory before the replay, as --balloon does (e.g. 8G).
    #[arg(long, value_name = "SIZE", value_parser = crate::size::parse_size)]
    pub mem: Option<u64>,
    /// What if: the machine is the one a /proc/zoneinfo FILE describes (its zones, CPUs and
    /// watermarks) instead of the recording's before.zoneinfo; the recorded free memory is
    /// placed on it as far as it fits.
    #[arg(long, value_name = "FILE")]
    pub zoneinfo: Option<std::path::PathBuf>,
    /// What if: transparent_hugepage/enabled were this (always, madvise, never) instead of
    /// the recording's (its thp.enabled, or the `lab real` setting in run.json). A fault the
    /// setting makes no huge page fault maps base pages; one the recording made as base
    /// pages cannot be told from others, so a replay cannot gain huge page faults.
    #[arg(long, value_name = "SETTING", value_parser = parse_thp_enabled)]
    pub thp_enabled: Option<pageblock_core::thp::ThpEnabled>,
    /// What if: transparent_hugepage/defrag were this (always, defer, defer+madvise,
    /// madvise, never): each huge page fault asks with the mask it gives.
    #[arg(long, value_name = "SETTING", value_parser = parse_thp_defrag)]
    pub thp_defrag: Option<pageblock_core::thp::ThpDefrag>,
    /// What if: the simulated machine has N CPUs instead of the recorded machine's (each
    /// per-CPU page list is one CPU's; traced CPU c replays on c mod N).
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// What if the machine could swap (on) or not (off), instead of what the recording says:
    /// its before.swaps, else whether the traced kernel scanned anonymous memory at all.
    /// Without swap, reclaim leaves anonymous memory alone.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub swap: Option<bool>,
    /// Write each policy's simulated machine at the end into DIR as POLICY.after.buddyinfo,
    /// .pagetypeinfo and .zoneinfo, in the kernel's formats, to set beside the recording's
    /// after.* (the first seed; DIR must exist).
    #[arg(long, value_name = "DIR")]
    pub after_dir: Option<std::path::PathBuf>,
    /// Replay each policy N times, seeds 1..=N (K..K+N-1 with --seed K), each drawing what
    /// the trace does not tell of the daemons' timing (kswapd's wake-up latency from the
    /// trace's own, the periodic daemons' phases); the report gives each row's range over
    /// the seeds.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: u32,
    /// The first seed: seeds K..K+N-1 with --seeds N, and the report's columns (failed
    /// requests, zones, curves, --after-dir) are seed K's replay. To look at the one seed of
    /// a range that went astray
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub seed: u64,
    /// Replay every traced free, the kernel's reclaim and migration included (the default
    /// for a trace without reclaim or compaction, replayed without a balloon).
    #[arg(long, conflicts_with = "closed_loop")]
    pub open_loop: bool,
    /// Replay only the workload's frees: pages kswapd or kcompactd freed, and migration
    /// sources freed in direct compaction, stay with the simulation, whose own reclaim and
    /// compaction decide (the default when the trace shows reclaim or compaction, or with
    /// --balloon).
    #[arg(long)]
    pub closed_loop: bool,
    /// Start with every compaction skip hint clear instead of as the trace's first
    /// compaction runs show them (in each zone, the share of pageblocks they passed without
    /// looking; a zone they passed too few of starts clear either way).
    #[arg(long)]
    pub clear_skip_hints: bool,
}

/// A transparent_hugepage/enabled setting.
fn parse_thp_enabled(s: &str) -> Result<pageblock_core::thp::ThpEnabled, String> {
    pageblock_core::thp::ThpEnabled::from_name(s)
        .ok_or_else(|| format!("`{s}` is not a THP enabled setting; known: always, madvise, never"))
}

/// `on` or `off`.
fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}` is neither on nor off")),
    }
}

/// A transparent_hugepage/defrag setting.
fn parse_thp_defrag(s: &str) -> Result<pageblock_core::thp::ThpDefrag, String> {
    pageblock_core::thp::ThpDefrag::from_name(s).ok_or_else(|| {
        format!("`{s}` is not a THP defrag setting; known: always, defer, defer+madvise, madvise, never")
    })
}

/// The vm sysctls a simulated machine takes, written on top of each policy as `sysctl -w`
/// would (a value the kernel's handler refuses is an error naming it).
#[derive(Debug, Args)]
pub struct SysctlArgs {
    /// vm.min_free_kbytes (default: the kernel's formula for the zone size, with THP).
    #[arg(long)]
    pub min_free_kbytes: Option<u64>,
    /// vm.watermark_scale_factor (1..=3000; default: the policy's, the kernel's 10).
    #[arg(long, value_name = "N")]
    pub watermark_scale_factor: Option<u32>,
    /// vm.watermark_boost_factor (0 disables boosting; default: the policy's, the kernel's
    /// 15000).
    #[arg(long, value_name = "N")]
    pub watermark_boost_factor: Option<u32>,
    /// vm.percpu_pagelist_high_fraction: 0 auto-tunes the per-CPU high mark; 8 or more fixes
    /// it at managed/N shared by the CPUs (default: the policy's, the kernel's 0).
    #[arg(long, value_name = "N")]
    pub percpu_pagelist_high_fraction: Option<u32>,
}

/// `pageblock bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The fast path against buddy_system_allocator and buddy-alloc on a 4 GiB region:
    /// (a) order-0 alloc+free pairs, (b) 1M allocations then random-order frees, (c) a mixed
    /// workload, (e) a and c on two threads, (f) 900,000 allocations then random-order frees,
    /// also under three memmap layouts and bulk-free settings and in one free_pages_batch
    /// call. Medians of several repetitions.
    Fastpath(FastpathArgs),
}

/// `pageblock bench fastpath`.
#[derive(Debug, Args)]
pub struct FastpathArgs {
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// A tiny run that only checks that every case works (numbers are meaningless).
    #[arg(long)]
    pub smoke: bool,
    /// Give pageblock's memmap the kernel's shape: one record of N bytes per page holding
    /// links and state (12 to 256, a multiple of 4; 64 = the kernel's struct page). Default:
    /// pageblock's split layout (1-byte state words beside 8-byte link records).
    #[arg(long, value_name = "N")]
    pub struct_page_bytes: Option<u32>,
}

/// `pageblock demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The simulated zone, its workload and policy.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pageblock show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Which report.
    #[arg(value_enum)]
    pub report: Report,
    /// How /proc/pagetypeinfo counts free blocks: the per-migratetype counts (seed 000)
    /// printed as 6.18 prints them (`>100000` at the cap), the same counts exactly, or
    /// walking the free lists with the cap (the kernel before the patch).
    #[arg(long, value_enum, default_value_t = PagetypeinfoMode::CountsCapped)]
    pub pagetypeinfo_mode: PagetypeinfoMode,
    /// Add page_owner's "Number of mixed blocks" table to /proc/pagetypeinfo.
    #[arg(long)]
    pub page_owner: bool,
    /// Also write a self-contained HTML page: the pageblock map and the report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// The simulated zone, its workload and policy.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The reports `show` can print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Report {
    /// /proc/pagetypeinfo
    Pagetypeinfo,
    /// /proc/buddyinfo
    Buddyinfo,
    /// /proc/zoneinfo
    Zoneinfo,
    /// /proc/vmstat (the lines the simulation maintains)
    Vmstat,
    /// debugfs extfrag/unusable_index
    UnusableIndex,
    /// debugfs extfrag/extfrag_index
    ExtfragIndex,
    /// Every counter, kernel and pageblock-specific, as `name value` lines
    Counters,
    /// The pageblock map: one character per pageblock by what it holds (colour on a terminal)
    Map,
}

/// `--pagetypeinfo-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PagetypeinfoMode {
    /// Read the per-migratetype free counts, print 100000 or more as `>100000` (6.18).
    CountsCapped,
    /// Read the per-migratetype free counts and print them exactly (not a kernel format).
    Counts,
    /// Walk the free lists, capped at 100000 per list.
    Walk,
}

/// `--policy NAME`: the named policies a command simulates under, one way on every command.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// A named policy (repeat, or separate with commas): vanilla, defrag_mode,
    /// defrag_mode_2026, pageblock (and its variants pageblock_swap, pageblock_no_wake,
    /// pageblock_any_zone, pageblock_no_targets), no_rmqueue_mode_memory. `show` and `demo`
    /// run one (default vanilla; the sysctl flags below change it), `lab seeds` switches each
    /// seed's knob on one (default vanilla), `replay` compares
    /// several (default vanilla and defrag_mode), `lab thp` too (default every one, the
    /// first the baseline).
    #[arg(long, alias = "policies", value_name = "NAME", value_delimiter = ',')]
    pub policy: Vec<String>,
}

/// The machine, the workload and the allocator policy of a run.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Memory of the simulated machine: 16G, 512M, 4GiB, 1.5T... (see --zones).
    #[arg(long, default_value = "16G", value_parser = crate::size::parse_size)]
    pub mem: u64,
    /// How --mem is laid out in zones: `x86-64` as a PC (ZONE_DMA in the first 16 MiB,
    /// ZONE_DMA32 up to the 3 GiB PCI hole, ZONE_NORMAL from 4 GiB), or one ZONE_NORMAL.
    #[arg(long, value_enum, default_value_t = ZonesArg::X86_64)]
    pub zones: ZonesArg,
    /// Take the zones and the CPU count from a real /proc/zoneinfo file instead of --mem,
    /// --zones and --cpus (which it excludes).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["mem", "zones", "cpus"])]
    pub zoneinfo: Option<std::path::PathBuf>,
    /// Workload to run before reporting (`fragment`); none means a freshly booted zone.
    /// `demo` runs `fragment` unless told otherwise.
    #[arg(long)]
    pub workload: Option<String>,
    /// Operations (allocation attempts plus frees) the workload performs (default: 1000000,
    /// `demo` 4000000). `show` needs --workload with it.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Random seed of the workload: the same seed gives byte-identical output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Online CPUs of the simulated machine (pagesets, vmstat thresholds).
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// The policy the run simulates under; the flags below, where given, change it.
    #[command(flatten)]
    pub policies: PolicyArgs,
    /// vm.defrag_mode=1 on top of the policy: never fragment a pageblock before reclaim and
    /// compaction failed (`--policy defrag_mode` is the same).
    #[arg(long)]
    pub defrag_mode: bool,
    /// Turn off seed 003's rmqueue mode memory (6.15 behaviour: every block of a bulk
    /// refill restarts the fallback search from the top; `--policy no_rmqueue_mode_memory`
    /// is the same).
    #[arg(long)]
    pub no_rmqueue_mode_memory: bool,
    /// The vm sysctls.
    #[command(flatten)]
    pub sysctls: SysctlArgs,
    /// The per-CPU batch (default: the kernel's zone_batchsize, 63 for zones of 1 GiB+).
    #[arg(long)]
    pub pcp_batch: Option<u32>,
    /// Write the run's kmem tracepoint events to FILE as ftrace text
    /// (`/sys/kernel/tracing/trace` format).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// MAX_PAGE_ORDER of the zone.
    #[arg(long, default_value_t = 10)]
    pub max_order: u32,
    /// pageblock_order of the zone.
    #[arg(long, default_value_t = 9)]
    pub pageblock_order: u32,
    /// A CMA area of this size at the top of the highest zone (turns on CONFIG_CMA; whole
    /// pageblocks).
    #[arg(long, value_parser = crate::size::parse_size)]
    pub cma: Option<u64>,
    /// Memory layout of free_area[] (seed 002); `plain` keeps no per-type counts (default:
    /// the policy's, `counts`).
    #[arg(long, value_enum)]
    pub free_area_layout: Option<FreeAreaLayoutArg>,
    /// Turn on seed 001's buddy prefetch in bulk frees from per-CPU lists (where it runs is
    /// --bulk-free's).
    #[arg(long)]
    pub buddy_prefetch: bool,
    /// How a bulk free from a per-CPU list reaches the memmap: the 2018 kernel's two passes,
    /// the 2022 kernel's single pass under the zone lock, or pageblock's software pipeline.
    /// Speed only: every setting decides the same (default: the policy's, `pipelined`).
    #[arg(long, value_enum)]
    pub bulk_free: Option<BulkFreeArg>,
    /// Give the memmap the kernel's shape: one record of N bytes per page holding links and
    /// state (12 to 256, a multiple of 4; 64 = the kernel's struct page). Default: pageblock's
    /// split layout (1-byte state words beside 8-byte link records). Speed only.
    #[arg(long, value_name = "N")]
    pub struct_page_bytes: Option<u32>,
    /// Whose reclaim rules (default: the policy's, 6.18).
    #[arg(long, value_enum)]
    pub kernel: Option<KernelArg>,
}

/// `--kernel`: whose reclaim rules, where they changed after seed 004 was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// Linux 6.18: kswapd under defrag_mode counts whole free pageblocks only above order 0
    /// and hands off to kcompactd once it reclaimed a compaction gap.
    #[value(name = "6.18")]
    Linux6_18,
    /// The March 2025 kernel seed 004 measured: kswapd under defrag_mode reclaims until whole
    /// free pageblocks reach the high watermark, at every order.
    #[value(name = "seed-004")]
    Seed004,
}

/// `--bulk-free`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BulkFreeArg {
    /// 2018-2022: pick the batch outside the zone lock, then merge under it.
    TwoPass,
    /// 2022 on: one pass under the zone lock.
    SinglePass,
    /// pageblock's: one pass with a software pipeline of prefetches ahead of the merge.
    Pipelined,
}

/// `--zones`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ZonesArg {
    /// DMA, DMA32 and Normal as on an x86_64 PC.
    #[value(name = "x86-64")]
    X86_64,
    /// One ZONE_NORMAL of the whole size.
    Normal,
}

/// `--free-area-layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FreeAreaLayoutArg {
    /// `{ free_list[MT]; nr_free }`.
    Plain,
    /// `{ free_list[MT]; nr_free; mt_nr_free[MT] }`.
    Counts,
    /// `{ { free_list; nr_free }[MT]; nr_free }`.
    PerList,
}
