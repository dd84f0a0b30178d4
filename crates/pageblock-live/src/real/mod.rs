//! `pageblock lab real` (root): a named pressure workload on this machine's kernel under each
//! given setting of `vm.defrag_mode` and THP, N runs each, every run recorded as `pageblock
//! record` records (tracepoints, `/proc` snapshots before and after), with its vmstat delta,
//! mTHP counters and the daemons' CPU time beside it, and a table across runs.
//!
//! Order of a session: refuse early (not root, missing tools, an output directory in use),
//! create the output directory, catch signals, claim the settings journal, find (or mount)
//! tracefs, apply the `--sysctl`s, size the ring buffers for the whole session, prepare the
//! work files (synthetic tree, churn file, swap file, turned on), run the warm-up runs
//! (the first setting's load under the hog, not recorded), then for run 1..N, for each
//! setting in turn (interleaved, so a drift of the machine over time spreads over
//! every setting): apply the setting, copy the build's tree fresh, drop caches, start the
//! hog and wait until it holds its memory, record the load, stop the hog, write the run's
//! files and rewrite the table. At the end, or on the first signal or error, every setting
//! goes back as found ([`knobs`]), the ring buffers' size too. A run cut short by a signal
//! stays on disk but is left out of the table.
//!
//! The ring buffers are sized once, before the first hog, because allocating them is part
//! of what a run would otherwise measure: sized per recording, after the hog, the 512 MiB
//! of `REAL_BUFFER_KB` on two CPUs came out of a nearly full machine right before each
//! trace began, and in every run of recording C8 turned 165–190 of Normal's Movable
//! pageblocks Unmovable and took Normal's free Unmovable memory (42k pages in one run); the
//! reclaim that followed freed page cache into those blocks. Allocated once while memory is
//! free, the buffers take whole free pageblocks and stay where they are for every run.
//!
//! The warm-up run is there for the same reason: the first run of a session begins from
//! whatever the machine held before it. In C8 and C9 the first run began with Normal holding
//! 80 Reclaimable pageblocks (slab from before the session, its pages dropped with the caches
//! but its blocks still typed) where every later run began with 22–26: a `defrag_mode=0` run
//! cleans them (movable requests claim them back), a `defrag_mode=1` run would not. After a
//! warm-up every recorded run begins from a machine the workload left.
//!
//! The runs' directories are what `pageblock trace stats` and `pageblock replay` read.

pub mod knobs;
pub mod measure;
pub mod sampler;
pub mod summary;
pub mod worker;
pub mod workload;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use knobs::Knobs;
use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::VmStat;
use sampler::Sampler;
use summary::{RunResult, Summary};
use workload::{BuildSource, Workload};

use crate::record::outdir::OutDir;
use crate::record::{self, Failure, Progress, RecordConfig, Signals};

/// The sysctl directory.
pub const PROC_VM: &str = "/proc/sys/vm";
/// THP's sysfs directory.
pub const THP_SYSFS: &str = "/sys/kernel/mm/transparent_hugepage";

/// `lab real`'s ring buffer per CPU, KiB: four times `record`'s. A run whose compaction
/// scans tens of millions of pfns outruns the reader: two `defrag_mode` runs of workload C
/// lost 38% of their events with 64 MiB, the next six none with 256 MiB. The hog leaves
/// room for it ([`RealConfig::available_mib`] is what the workload gets).
pub const REAL_BUFFER_KB: u64 = 256 * 1024;

/// The default work directory (build copies, churn file, swap file).
pub const DEFAULT_WORK_DIR: &str = "/var/tmp/pageblock-real";

/// One setting of the kernel a run is made under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// `vm.defrag_mode`.
    pub defrag_mode: u8,
    /// THP `enabled`.
    pub thp_enabled: String,
    /// THP `defrag`.
    pub thp_defrag: String,
}

impl Setting {
    /// `dm1-always-madvise`: the setting's directory name and column.
    pub fn label(&self) -> String {
        format!("dm{}-{}-{}", self.defrag_mode, self.thp_enabled, self.thp_defrag)
    }
}

/// What `lab real` runs.
#[derive(Clone, Debug)]
pub struct RealConfig {
    /// The output directory (new or empty); default `pageblock-real-YYYYmmdd-HHMMSS`.
    pub output: Option<PathBuf>,
    /// The workload.
    pub workload: Workload,
    /// The settings, each run `runs` times.
    pub settings: Vec<Setting>,
    /// `vm.` sysctls set for the whole session (name without `vm.`, value).
    pub sysctls: Vec<(String, String)>,
    /// Runs per setting.
    pub runs: usize,
    /// Unrecorded runs of the first setting before the recorded ones.
    pub warmup: usize,
    /// Memory the hog leaves the workload, MiB (the ring buffers are allocated before it;
    /// `None`: no hog).
    pub available_mib: Option<u64>,
    /// A swap file of this many MiB, on for the session (`None`: swap as found).
    pub swap_mib: Option<u64>,
    /// Work files' directory.
    pub work_dir: PathBuf,
    /// Ring buffer per CPU while recording, KiB.
    pub buffer_size_kb: u64,
    /// The events recorded.
    pub events: String,
    /// How to start a worker process: the program and the arguments before `hog`/`load`.
    pub worker: Vec<String>,
}

/// What a session ended with.
#[derive(Debug)]
pub struct RealOutcome {
    /// The table of every complete run.
    pub summary: Summary,
    /// Where it all is.
    pub output: PathBuf,
    /// 128 + the signal that cut the session short, else 0.
    pub code: u8,
}

/// Runs a session; `progress` makes each recording's progress display.
pub fn run(cfg: &RealConfig, progress: &dyn Fn() -> Box<dyn Progress>) -> Result<RealOutcome, Failure> {
    check(cfg)?;
    let out = OutDir::prepare_or(cfg.output.as_deref(), "pageblock-real")?;
    let signals = Signals::install()?;
    let journal = [PathBuf::from(knobs::JOURNAL_RUN_PATH), out.file(knobs::JOURNAL_FILE)];
    let mut knobs = match Knobs::claim(&journal) {
        Ok(k) => k,
        Err(e) => {
            out.remove_if_created();
            return Err(Failure::from(e));
        }
    };
    let mut results = Vec::new();
    let ran = session(cfg, &out.path, &mut knobs, &signals, progress, &mut results);
    let restored = knobs.restore();
    let summary = Summary::of(&results);
    let ran = ran.and_then(|()| restored.map_err(Failure::from));
    ran?;
    let code = signals.received().map_or(0, |s| u8::try_from(128 + s).unwrap_or(1));
    Ok(RealOutcome { summary, output: out.path, code })
}

/// Refusals before anything is touched.
fn check(cfg: &RealConfig) -> Result<(), Failure> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Failure::from(
            "lab real needs root (it changes vm sysctls and THP settings, drops caches and records tracepoints); try sudo"
                .to_owned(),
        ));
    }
    if cfg.runs == 0 || cfg.settings.is_empty() {
        return Err(Failure::from("lab real: nothing to run (--runs 0 or no setting)".to_owned()));
    }
    let needs = |path: &Path, what: &str| {
        if path.exists() {
            Ok(())
        } else {
            Err(Failure::from(format!("{} is missing: this kernel has no {what}", path.display())))
        }
    };
    needs(&Path::new(PROC_VM).join("defrag_mode"), "vm.defrag_mode (Linux 6.15 or later)")?;
    needs(&Path::new(THP_SYSFS).join("enabled"), "transparent huge pages")?;
    for (name, _) in &cfg.sysctls {
        needs(&Path::new(PROC_VM).join(name), &format!("vm.{name}"))?;
    }
    if let Some(b) = &cfg.workload.build {
        for tool in ["make", "cc"] {
            if !on_path(tool) {
                return Err(Failure::from(format!("the build needs `{tool}` on PATH")));
            }
        }
        if let BuildSource::Tree(dir) = &b.source {
            if !dir.join("Makefile").is_file() && !dir.join("makefile").is_file() {
                return Err(Failure::from(format!(
                    "{}: no Makefile; --build-tree needs a tree `make` builds",
                    dir.display()
                )));
            }
        }
    }
    if cfg.swap_mib.is_some() && !on_path("mkswap") {
        return Err(Failure::from("--swap needs `mkswap` on PATH (util-linux)".to_owned()));
    }
    Ok(())
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// Everything between claiming the journal and restoring it.
fn session(
    cfg: &RealConfig,
    out: &Path,
    knobs: &mut Knobs,
    signals: &Signals,
    progress: &dyn Fn() -> Box<dyn Progress>,
    results: &mut Vec<RunResult>,
) -> Result<(), Failure> {
    for (name, value) in &cfg.sysctls {
        knobs.set(&Path::new(PROC_VM).join(name), value)?;
    }
    let tracefs = knobs.tracefs()?;
    knobs.set_ring_buffer(&tracefs, cfg.buffer_size_kb)?;
    let work = Work::prepare(cfg)?;
    if let Some(swapfile) = &work.swapfile {
        knobs.swapon(swapfile)?;
    }
    for n in 1..=cfg.warmup {
        let Some(setting) = cfg.settings.first() else { break };
        if signals.received().is_some() {
            return Ok(());
        }
        eprintln!(
            "pageblock lab real: warm-up {n} of {} under {} (not recorded)",
            cfg.warmup,
            setting.label()
        );
        apply(knobs, setting)?;
        warm_up(cfg, &work, signals)?;
    }
    for run in 1..=cfg.runs {
        for setting in &cfg.settings {
            if signals.received().is_some() {
                return Ok(());
            }
            let label = setting.label();
            eprintln!("pageblock lab real: {label}, run {run} of {}", cfg.runs);
            apply(knobs, setting)?;
            let result = one_run(cfg, &tracefs, &work, out, &label, run, signals, progress)?;
            if signals.received().is_some() {
                eprintln!("pageblock lab real: {label} run {run} was cut short; it stays in {} but not in the table", result.dir);
                return Ok(());
            }
            results.push(result);
            write_summary(out, &Summary::of(results))?;
        }
    }
    Ok(())
}

fn apply(knobs: &mut Knobs, s: &Setting) -> Result<(), String> {
    knobs.set(&Path::new(PROC_VM).join("defrag_mode"), &s.defrag_mode.to_string())?;
    knobs.set(&Path::new(THP_SYSFS).join("enabled"), &s.thp_enabled)?;
    knobs.set(&Path::new(THP_SYSFS).join("defrag"), &s.thp_defrag)
}

/// The session's work files.
struct Work {
    /// The tree the build copies, if there is a build.
    tree: Option<PathBuf>,
    /// The fresh copy each run builds.
    build_dir: PathBuf,
    churn_file: Option<PathBuf>,
    swapfile: Option<PathBuf>,
}

impl Work {
    fn prepare(cfg: &RealConfig) -> Result<Work, String> {
        let dir = &cfg.work_dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let tree = match cfg.workload.build.as_ref().map(|b| &b.source) {
            Some(BuildSource::Tree(t)) => Some(t.clone()),
            Some(BuildSource::Synthetic { files }) => {
                let t = dir.join(format!("synthetic-{files}"));
                if !t.join("Makefile").is_file() {
                    let _ = std::fs::remove_dir_all(&t);
                    workload::write_synthetic_tree(&t, *files)?;
                }
                Some(t)
            }
            None => None,
        };
        let churn_file = cfg.workload.churn.map(|c| dir.join(format!("churn-{}m.dat", c.mib)));
        if let (Some(path), Some(c)) = (&churn_file, cfg.workload.churn) {
            ensure_file(path, c.mib << 20)?;
        }
        let swapfile = cfg.swap_mib.map(|m| dir.join(format!("swapfile-{m}m")));
        if let (Some(path), Some(m)) = (&swapfile, cfg.swap_mib) {
            if std::fs::metadata(path).map(|md| md.len()).ok() != Some(m << 20) {
                ensure_file(path, m << 20)?;
                std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let ok = Command::new("mkswap")
                    .arg(path)
                    .stdout(Stdio::null())
                    .status()
                    .map_err(|e| e.to_string())?;
                if !ok.success() {
                    return Err(format!("mkswap {} failed", path.display()));
                }
            }
        }
        Ok(Work { tree, build_dir: dir.join("build"), churn_file, swapfile })
    }
}

/// A file of exactly `len` bytes of written data (not a sparse one: swap refuses holes, and
/// the churn must read real blocks), made once and kept.
fn ensure_file(path: &Path, len: u64) -> Result<(), String> {
    use std::io::Write as _;
    if std::fs::metadata(path).is_ok_and(|m| m.len() == len) {
        return Ok(());
    }
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let tmp = path.with_extension("part");
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(err)?;
        left -= n as u64;
    }
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// The tree copied fresh and the caches dropped, as before every run.
fn fresh_start(work: &Work) -> Result<(), String> {
    if let Some(tree) = &work.tree {
        if work.build_dir.exists() {
            std::fs::remove_dir_all(&work.build_dir)
                .map_err(|e| format!("{}: {e}", work.build_dir.display()))?;
        }
        workload::copy_tree(tree, &work.build_dir)?;
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write(Path::new(PROC_VM).join("drop_caches"), "3").map_err(|e| format!("drop_caches: {e}"))
}

/// A warm-up run: a run as [`one_run`] makes it, hog and all, without recording anything
/// (the build's log goes to the work directory). Signals reach the load as they would a
/// recorded one's.
fn warm_up(cfg: &RealConfig, work: &Work, signals: &Signals) -> Result<(), Failure> {
    fresh_start(work)?;
    let hog = Hog::start(cfg, signals)?;
    let command = load_command(cfg, work, &cfg.work_dir);
    let (program, rest) = command.split_first().ok_or_else(|| "no worker program".to_owned())?;
    let mut child = Command::new(program)
        .args(rest)
        .spawn()
        .map_err(|e| format!("cannot start the warm-up load: {e}"))?;
    let status = loop {
        signals.forward_to(child.id());
        if let Some(status) = child.try_wait().map_err(|e| format!("waiting for the warm-up load: {e}"))? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    hog.stop();
    if !status.success() && signals.received().is_none() {
        return Err(Failure::from(format!("the warm-up load failed ({status})")));
    }
    Ok(())
}

/// One recorded run of `label`.
#[allow(clippy::too_many_arguments)]
fn one_run(
    cfg: &RealConfig,
    tracefs: &crate::tracefs::Tracefs,
    work: &Work,
    out: &Path,
    label: &str,
    run: usize,
    signals: &Signals,
    progress: &dyn Fn() -> Box<dyn Progress>,
) -> Result<RunResult, Failure> {
    let rel = format!("{label}/run{run}");
    let dir = out.join(&rel);
    fresh_start(work)?;
    let ring_buffer_kb = ring_buffer_kb(tracefs)?;
    let hog = Hog::start(cfg, signals)?;
    let proc = Path::new("/proc");
    let ticks = || (measure::cpu_ticks(proc, "kswapd0"), measure::cpu_ticks(proc, "kcompactd0"));
    let (k0, c0) = ticks();
    let mthp_before = measure::mthp_counters(Path::new(THP_SYSFS));
    let buddy_sampler = Sampler::<BuddyInfo>::start(proc.join("buddyinfo"), sampler::BUDDYINFO_PERIOD);
    let type_sampler =
        Sampler::<PageTypeInfo>::start(proc.join("pagetypeinfo"), sampler::PAGETYPEINFO_PERIOD);
    let started = Instant::now();
    let recorded = record::recorded(
        &RecordConfig {
            output: Some(dir.clone()),
            buffer_size_kb: cfg.buffer_size_kb,
            events: cfg.events.clone(),
            force: false,
            command: load_command(cfg, work, &dir),
        },
        progress(),
    );
    let buddyinfo_samples = buddy_sampler.stop();
    let pagetypeinfo_samples = type_sampler.stop();
    let recorded = recorded?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let (k1, c1) = ticks();
    let mthp_after = measure::mthp_counters(Path::new(THP_SYSFS));
    let hog_mib = hog.stop();
    let read = |name: &str| {
        let p = dir.join(name);
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        VmStat::parse(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let vmstat = VmStat::delta(&read("before.vmstat")?, &read("after.vmstat")?);
    let mthp = VmStat::delta(&mthp_before, &mthp_after);
    let ms = |ticks: u64| ticks * 1000 / measure::clock_ticks();
    let result = RunResult {
        setting: label.to_owned(),
        run,
        dir: rel,
        elapsed_s,
        exit_code: recorded.code,
        events: recorded.events,
        lost_events: recorded.lost,
        hog_mib,
        ring_buffer_kb,
        kswapd_cpu_ms: ms(k1 - k0),
        kcompactd_cpu_ms: ms(c1 - c0),
        vmstat: vmstat.items.iter().cloned().collect(),
        mthp: mthp.items.into_iter().collect(),
    };
    write_file(&dir.join("vmstat-delta.txt"), &vmstat.render_delta())?;
    write_file(&dir.join("buddyinfo.samples"), &buddyinfo_samples.render())?;
    write_file(&dir.join("pagetypeinfo.samples"), &pagetypeinfo_samples.render())?;
    write_file(&dir.join("mthp.before"), &mthp_before.render())?;
    write_file(&dir.join("mthp.after"), &mthp_after.render())?;
    write_file(&dir.join("run.json"), &to_json(&result)?)?;
    if recorded.code != 0 && signals.received().is_none() {
        return Err(Failure::from(format!(
            "{}: the load exited with status {} (the build failed? see {})",
            dir.display(),
            recorded.code,
            dir.join("build.log").display()
        )));
    }
    Ok(result)
}

/// The recorded command: the load worker with the run's parts.
fn load_command(cfg: &RealConfig, work: &Work, dir: &Path) -> Vec<String> {
    let mut c = cfg.worker.clone();
    c.push("load".into());
    c.extend(["--duration".into(), cfg.workload.duration_s.to_string()]);
    if let Some(b) = &cfg.workload.build {
        c.extend([
            "--build-dir".into(),
            work.build_dir.display().to_string(),
            "--jobs".into(),
            b.jobs.to_string(),
        ]);
        c.extend(["--build-log".into(), dir.join("build.log").display().to_string()]);
    }
    if let Some(b) = cfg.workload.bursts {
        c.extend(["--bursts".into(), format!("{}:{}", b.mib, b.period_ms)]);
    }
    if let Some(f) = &work.churn_file {
        c.extend(["--churn-file".into(), f.display().to_string()]);
    }
    c
}

/// Each CPU's ring buffer size, KiB (the largest if they differ).
fn ring_buffer_kb(fs: &crate::tracefs::Tracefs) -> Result<u64, String> {
    Ok(crate::tracefs::per_cpu_buffer_kb(fs)?.into_iter().max().unwrap_or(0))
}

/// The hog process, holding memory until stopped.
struct Hog {
    child: Option<Child>,
    mib: u64,
}

impl Hog {
    /// Starts a hog that leaves `available_mib` of MemAvailable (the session's ring buffers
    /// are allocated already), and waits until it holds its memory; none if there is no
    /// target or nothing to take.
    fn start(cfg: &RealConfig, signals: &Signals) -> Result<Hog, String> {
        let none = Hog { child: None, mib: 0 };
        let Some(target) = cfg.available_mib else { return Ok(none) };
        let available =
            crate::meminfo::mem_available_bytes().ok_or("/proc/meminfo has no MemAvailable")? >> 20;
        let mib = available.saturating_sub(target);
        if mib == 0 || signals.received().is_some() {
            return Ok(none);
        }
        let (program, rest) = cfg.worker.split_first().ok_or("no worker program")?;
        let mut child = Command::new(program)
            .args(rest)
            .args(["hog", "--mib", &mib.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the hog: {e}"))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let hog = Hog { child: Some(child), mib };
        if line.trim() != "ready" && signals.received().is_none() {
            return Err(format!("the hog could not take {mib} MiB"));
        }
        Ok(hog)
    }

    /// Lets the memory go; the hog's size, MiB.
    fn stop(self) -> u64 {
        self.mib
    }
}

/// However a hog ends (stopped, or dropped on an error path), its process goes with it.
impl Drop for Hog {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn to_json(v: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(v).map(|j| j + "\n").map_err(|e| e.to_string())
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    crate::state_file::replace(path, text)
}

/// `summary.txt` and `summary.json`, each replaced whole, so an interrupted session keeps the
/// table of the runs it finished.
fn write_summary(out: &Path, summary: &Summary) -> Result<(), String> {
    write_file(&out.join("summary.txt"), &summary.render())?;
    write_file(&out.join("summary.json"), &to_json(summary)?)
}
