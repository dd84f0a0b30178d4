//! Recording (`pageblock record -- COMMAND`): records the live kernel's page-allocator tracepoints while
//! COMMAND runs, into a directory `pageblock trace stats` and `pageblock replay` read:
//! `trace.txt.zst` (ftrace text from `trace_pipe`, a zstd frame per second) and byte-exact copies of
//! `/proc/{zoneinfo,pagetypeinfo,buddyinfo,vmstat}` as `before.*` and `after.*`, and of the THP
//! settings (`/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`) as `thp.*`.
//!
//! Order of a recording: refuse early (no command, not root, a non-empty directory), create
//! the directory, catch signals, find or mount tracefs, claim the journal (refused while
//! another recording's is there), save and change tracefs's state (tracing off, buffer size,
//! events), read the `before` snapshot, tracing on, run the command while streaming the pipe,
//! tracing off, read the `after` snapshot, drain the pipe, restore tracefs and remove the
//! journal, unmount tracefs if we mounted it, finish the files, report. The snapshots are
//! taken next to the switches of `tracing_on`, after the ring buffer is allocated and before
//! it is freed, so its pages are in neither the trace nor the difference of the snapshots.
//!
//! A recording killed by SIGKILL restores nothing; its journal (`record.state` in the
//! directory and in `/run/pageblock`) lets `pageblock record --restore` do it.

mod count;
pub(crate) mod outdir;
mod priority;
mod report;
pub mod restore;
mod signals;
pub(crate) use signals::Signals;
mod snapshot;
mod stream;
mod writer;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use outdir::OutDir;
use snapshot::Snapshot;
use stream::Stream;

use crate::tracefs::{self, Mounted, Session, SessionConfig, Tracefs};

/// The kmem page events, every compaction event, and the reclaim events a replay reads: the
/// direct reclaim windows (without them closed-loop replay takes a direct reclaimer's frees
/// for its workload's), kswapd's wake-ups and runs, and each inactive-list pass of reclaim
/// (`mm_vmscan_lru_shrink_inactive`: what it scanned, reclaimed, activated and kept; about
/// 160k lines in a 91 s run of `lab real`'s workload B, a few per thousand kmem events).
pub const DEFAULT_EVENTS: &str = "kmem:mm_page_alloc,kmem:mm_page_free,kmem:mm_page_free_batched,\
kmem:mm_page_alloc_zone_locked,kmem:mm_page_pcpu_drain,kmem:mm_page_alloc_extfrag,compaction:*,\
vmscan:mm_vmscan_direct_reclaim_begin,vmscan:mm_vmscan_direct_reclaim_end,vmscan:mm_vmscan_kswapd_wake,\
vmscan:mm_vmscan_kswapd_sleep,vmscan:mm_vmscan_wakeup_kswapd,vmscan:mm_vmscan_lru_shrink_inactive";

/// Ring buffer per CPU, KiB: 64 MiB holds about half a million events per CPU, time for the
/// recorder to catch up after a burst.
pub const DEFAULT_BUFFER_KB: u64 = 64 * 1024;

/// Where the snapshots come from.
const PROC: &str = "/proc";
/// The trace file in the directory.
const TRACE_FILE: &str = "trace.txt.zst";

/// What to record: `pageblock record`'s options.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// The directory to write (created; if it exists it must be empty); `None`: a new
    /// `pageblock-record-YYYYmmdd-HHMMSS` in the current directory.
    pub output: Option<PathBuf>,
    /// Ring buffer size per CPU in KiB while recording (restored afterwards).
    pub buffer_size_kb: u64,
    /// The events, comma-separated (`SYSTEM:EVENT`, `SYSTEM:*`, `SYSTEM`, or `EVENT`).
    pub events: String,
    /// Take tracefs over even if someone else is tracing.
    pub force: bool,
    /// The command to run while recording, and its arguments.
    pub command: Vec<String>,
}

/// How a recording shows its progress while the trace streams (the CLI draws it on a
/// terminal).
pub trait Progress {
    /// Trace text read from the pipe so far, and the compressed bytes written for it.
    fn update(&self, text_bytes: u64, compressed_bytes: u64);
    /// Prints `line` on stderr without tearing what is drawn.
    fn note(&self, line: &str);
    /// The stream has ended: clear what is drawn.
    fn finish(&self);
}

/// Why a recording failed, and its exit code: 1, or as shells say a command cannot be run,
/// 127 (not found) and 126 (found but not executable).
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// The exit code it ends the recorder with.
    pub code: u8,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { message, code: 1 }
    }
}

/// What a finished recording tells its caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The exit code the recorder ends with (see [`run`]).
    pub code: u8,
    /// Events in the trace file.
    pub events: u64,
    /// Events lost: the larger of what the `[LOST n EVENTS]` lines count and the ring
    /// buffers' overrun and dropped counters (the same losses, seen from both ends).
    pub lost: u64,
    /// `[LOST EVENTS]` lines that do not say how many.
    pub lost_uncounted: u64,
}

/// Records `args.command`, showing the stream's progress on `progress`: the exit code the
/// recorder ends with (128 + the first signal it caught, else the command's, or 128 + the
/// signal that killed the command), or why it failed.
pub fn run(args: &RecordConfig, progress: Box<dyn Progress>) -> Result<u8, Failure> {
    recorded(args, progress).map(|r| r.code)
}

/// [`run`], telling how many events were recorded and lost.
pub fn recorded(args: &RecordConfig, progress: Box<dyn Progress>) -> Result<Recorded, Failure> {
    if args.command.is_empty() {
        return Err(Failure::from(
            "record: no COMMAND given; usage: pageblock record [-o DIR] -- COMMAND [ARGS...]".to_owned(),
        ));
    }
    need_root()?;
    let out = OutDir::prepare(args.output.as_deref())?;
    let signals = Signals::install()?;
    let result = Mounted::find_or_mount().map_err(Failure::from).and_then(|mut mounted| {
        if mounted.mounted_here() {
            eprintln!(
                "pageblock record: mounted tracefs on {} (unmounted at the end)",
                mounted.fs.root().display()
            );
        }
        let recorded = record(&mounted, args, &out, &signals, progress);
        let unmounted = mounted.unmount();
        if let (Err(e), Err(_)) = (&unmounted, &recorded) {
            eprintln!("pageblock: {e}");
        }
        recorded.and_then(|r| unmounted.map(|()| r).map_err(Failure::from))
    });
    if result.is_err() {
        out.remove_if_created();
    }
    result
}

/// Refuses unless root.
fn need_root() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("record needs root (it changes tracefs and reads /proc/pagetypeinfo); try sudo".into());
    }
    Ok(())
}

/// Everything between finding tracefs and unmounting it. The [`Session`] restores tracefs
/// when it goes out of scope, on every path out of here.
fn record(
    mounted: &Mounted,
    args: &RecordConfig,
    out: &OutDir,
    signals: &Signals,
    progress: Box<dyn Progress>,
) -> Result<Recorded, Failure> {
    let fs = &mounted.fs;
    let events = events_to_enable(fs, &args.events)?;
    check_memory(fs, args.buffer_size_kb)?;
    let journal = [PathBuf::from(tracefs::JOURNAL_RUN_PATH), out.file(tracefs::JOURNAL_FILE)];
    let cfg = SessionConfig {
        events: &events,
        buffer_size_kb: args.buffer_size_kb,
        force: args.force,
        journal: &journal,
        mounted_here: mounted.mounted_here(),
    };
    let mut session = Session::start(fs, &cfg)?;
    let mut stream = Stream::open(fs, &out.file(TRACE_FILE), progress)?;
    let before = Snapshot::read(Path::new(PROC))?;
    if let Some(signal) = signals.received() {
        session.restore()?;
        stream.finish()?;
        eprintln!("pageblock record: {} before COMMAND started; nothing recorded", signals::name(signal));
        let code = report::exit_code(std::process::ExitStatus::default(), Some(signal));
        return Ok(Recorded { code, ..Recorded::default() });
    }
    session.tracing_on()?;
    before.write(&out.path, "before")?;
    snapshot::copy_thp_settings(Path::new(crate::real::THP_SYSFS), &out.path)?;
    snapshot::copy_vm_settings(Path::new(crate::real::PROC_VM), &out.path)?;
    let mut child = spawn(&args.command).inspect_err(|_| {
        // A mistyped command leaves no half recording behind to block the next try.
        let _ = std::fs::remove_file(out.file(TRACE_FILE));
        for name in snapshot::PROC_FILES.iter().chain(&snapshot::OPTIONAL_PROC_FILES) {
            let _ = std::fs::remove_file(out.file(&format!("before.{name}")));
        }
        for name in snapshot::THP_FILES {
            let _ = std::fs::remove_file(out.file(&format!("thp.{name}")));
        }
        for name in snapshot::VM_FILES {
            let _ = std::fs::remove_file(out.file(&format!("vm.{name}")));
        }
    })?;
    eprintln!(
        "pageblock record: recording {} into {} until COMMAND pid {} ends",
        report::count(events.len() as u64, "event"),
        out.path.display(),
        child.id()
    );
    let status = stream.until_exit(&mut child, &mut session, signals)?;
    session.tracing_off()?;
    let after = Snapshot::read(Path::new(PROC))?;
    stream.drain();
    // Before the restore: resizing the ring buffer resets its counters.
    let cpus = tracefs::cpu_stats(fs)?;
    let restored = session.restore();
    let summary = stream.finish()?;
    after.write(&out.path, "after")?;
    let command = args.command.join(" ");
    eprint!("{}", report::render(&out.file(TRACE_FILE), &command, status, &summary, &cpus));
    restored?;
    let c = &summary.counts;
    Ok(Recorded {
        code: report::exit_code(status, signals.received()),
        events: c.total_events(),
        lost: c.lost_events.max(cpus.iter().map(|s| s.overrun + s.dropped).sum::<u64>()),
        lost_uncounted: c.lost_uncounted,
    })
}

fn spawn(command: &[String]) -> Result<Child, Failure> {
    let (program, rest) = command.split_first().ok_or_else(|| Failure::from("no COMMAND".to_owned()))?;
    Command::new(program).args(rest).spawn().map_err(|e| Failure {
        message: format!("cannot run `{program}`: {e}"),
        code: if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 },
    })
}

/// The event list resolved. Items of the default list that this kernel lacks are
/// skipped with a warning; those the user named are an error.
fn events_to_enable(fs: &Tracefs, list: &str) -> Result<Vec<String>, String> {
    let set = tracefs::resolve_events(fs, list)?;
    if !set.missing.is_empty() {
        let missing = set.missing.join(", ");
        if list != DEFAULT_EVENTS {
            return Err(format!("no such events in {}/events: {missing}", fs.root().display()));
        }
        eprintln!("pageblock record: this kernel has no {missing}; recording the rest");
    }
    if set.events.is_empty() {
        return Err(format!("--events `{list}` names no event"));
    }
    Ok(set.events)
}

/// Refuses a ring buffer that would take more than half of the available memory. What the
/// buffers hold already is not asked again: a `lab real` session sizes them before its hog
/// leaves little available, and each run's recording finds them that size.
fn check_memory(fs: &Tracefs, kb_per_cpu: u64) -> Result<(), String> {
    let available_kb =
        crate::meminfo::mem_available_bytes().ok_or("/proc/meminfo has no MemAvailable")? >> 10;
    ring_fits(fs, kb_per_cpu, available_kb)
}

/// [`check_memory`] with `available_kb` of memory available.
fn ring_fits(fs: &Tracefs, kb_per_cpu: u64, available_kb: u64) -> Result<(), String> {
    let sizes = tracefs::per_cpu_buffer_kb(fs)?;
    let cpus = sizes.len().max(1);
    let need_kb = ring_growth_kb(&sizes, kb_per_cpu);
    if need_kb > available_kb / 2 {
        return Err(format!(
            "--buffer-size-kb {kb_per_cpu} on {cpus} CPUs needs {} MiB more, more than half of the {} MiB available",
            need_kb >> 10,
            available_kb >> 10
        ));
    }
    Ok(())
}

/// KiB the ring buffers of `sizes` (KiB per CPU) grow by when each is sized to `kb_per_cpu`
/// (a CPU whose buffer is that size or larger adds nothing).
fn ring_growth_kb(sizes: &[u64], kb_per_cpu: u64) -> u64 {
    sizes.iter().map(|&now| kb_per_cpu.saturating_sub(now)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer already the size asked for (a `lab real` session sized it) asks for nothing
    /// more; a boot-time one for the whole difference on each CPU. Workload B's session was
    /// refused so: 2 x 256 MiB asked again beside its hog, with 955 MiB available.
    #[test]
    fn only_the_growth_of_the_ring_buffers_is_asked_of_the_memory() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, kb) in [(0, "262147\n"), (1, "7\n")] {
            let d = dir.path().join(format!("per_cpu/cpu{cpu}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("buffer_size_kb"), kb).unwrap();
        }
        let fs = Tracefs::at(dir.path());
        let sizes = tracefs::per_cpu_buffer_kb(&fs).unwrap();
        assert_eq!(ring_growth_kb(&sizes, 262_144), 262_144 - 7);
        assert_eq!(ring_growth_kb(&sizes, 7), 0);
        let available_kb = 955 << 10;
        std::fs::write(dir.path().join("per_cpu/cpu1/buffer_size_kb"), "262147\n").unwrap();
        ring_fits(&fs, 262_144, available_kb).unwrap();
        for cpu in 0..2 {
            std::fs::write(dir.path().join(format!("per_cpu/cpu{cpu}/buffer_size_kb")), "7\n").unwrap();
        }
        let refused = ring_fits(&fs, 262_144, available_kb).unwrap_err();
        assert!(refused.contains("needs 511 MiB more"), "{refused}");
        std::fs::write(dir.path().join("per_cpu/cpu1/buffer_size_kb"), "big\n").unwrap();
        assert!(ring_fits(&fs, 7, available_kb).unwrap_err().contains("cpu1/buffer_size_kb"));
    }
}
