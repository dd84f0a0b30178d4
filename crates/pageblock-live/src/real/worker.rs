//! The processes of a `lab real` run (the hidden `pageblock lab real-worker`): the hog,
//! which holds memory mlocked until its parent lets go, and the load, which runs the build
//! with the bursts and the churn beside it, recorded as `record`'s COMMAND.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::workload::Bursts;
use crate::record::Signals;

/// Base page and PMD huge page sizes (x86_64, arm64 with 4 KiB pages).
const PAGE: usize = 4096;
const HPAGE: usize = 2 << 20;

/// An anonymous private mapping, unmapped when dropped.
struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> Result<Mapping, String> {
        // SAFETY: an anonymous private mapping at an address the kernel picks touches no
        // existing memory.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(format!("mmap {} MiB: {}", len >> 20, std::io::Error::last_os_error()));
        }
        Ok(Mapping { addr, len })
    }

    /// The huge-page-aligned range of `len` bytes inside (the mapping must be `HPAGE` longer).
    fn aligned(&self, len: usize) -> *mut u8 {
        let start = (self.addr as usize).next_multiple_of(HPAGE);
        debug_assert!(start + len <= self.addr as usize + self.len);
        start as *mut u8
    }

    /// `madvise(advice)` on `len` bytes at `start` (inside the mapping).
    fn advise(start: *mut u8, len: usize, advice: libc::c_int) {
        // SAFETY: the range lies inside a live mapping; madvise changes no Rust-visible memory.
        unsafe { libc::madvise(start.cast(), len, advice) };
    }

    /// Writes one byte in every page of `len` bytes at `start` (inside the mapping).
    fn touch(start: *mut u8, len: usize) {
        for off in (0..len).step_by(PAGE) {
            // SAFETY: `start + off` lies inside the live, writable mapping.
            unsafe { start.add(off).write_volatile(1) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and nothing refers to it any more.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// The hog: `mib` MiB faulted in base pages and mlocked; says `ready` on stdout, then holds
/// it until stdin closes (its parent ended) or the parent dies.
pub fn hog(mib: u64) -> Result<(), String> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and has no memory effects.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let len = usize::try_from(mib << 20).map_err(|_| "hog too large".to_owned())?;
    let map = Mapping::new(len)?;
    let start = map.addr.cast::<u8>();
    Mapping::advise(start, len, libc::MADV_NOHUGEPAGE);
    Mapping::touch(start, len);
    // SAFETY: the range is the live mapping.
    if unsafe { libc::mlock(map.addr, len) } != 0 {
        return Err(format!("mlock {mib} MiB: {}", std::io::Error::last_os_error()));
    }
    let mut out = std::io::stdout();
    writeln!(out, "ready").and_then(|()| out.flush()).map_err(|e| e.to_string())?;
    let mut sink = [0u8; 64];
    while std::io::stdin().read(&mut sink).is_ok_and(|n| n > 0) {}
    drop(map);
    Ok(())
}

/// What the load runs.
#[derive(Clone, Debug, Default)]
pub struct LoadSpec {
    /// The build's tree (copied fresh) and `make -j`, if there is a build.
    pub build: Option<(PathBuf, u32)>,
    /// Where the build's output goes.
    pub build_log: Option<PathBuf>,
    /// THP bursts, if any.
    pub bursts: Option<Bursts>,
    /// The churn's file, if any.
    pub churn_file: Option<PathBuf>,
    /// The run's length without a build, and a build's limit.
    pub duration_s: u64,
}

/// The load: the bursts and the churn in threads beside the build (or for `duration_s`);
/// the build's exit status (0 without a build). SIGINT or SIGTERM ends it early, the build
/// included.
pub fn load(spec: &LoadSpec) -> Result<i32, String> {
    let signals = Signals::install()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    if let Some(b) = spec.bursts {
        let stop = Arc::clone(&stop);
        threads.push(std::thread::spawn(move || bursts(b, &stop)));
    }
    if let Some(file) = spec.churn_file.clone() {
        let stop = Arc::clone(&stop);
        threads.push(std::thread::spawn(move || churn(&file, &stop)));
    }
    let deadline = Instant::now() + Duration::from_secs(spec.duration_s);
    let status = match &spec.build {
        Some((dir, jobs)) => build(dir, *jobs, spec.build_log.as_deref(), deadline, &signals),
        None => {
            while Instant::now() < deadline && signals.received().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(0)
        }
    };
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    let status = status?;
    Ok(signals.received().map_or(status, |s| 128 + s))
}

/// `make -C dir -jJOBS`, ended with SIGTERM (which make passes to its jobs) at the deadline
/// or on a signal: its exit status.
fn build(
    dir: &std::path::Path,
    jobs: u32,
    log: Option<&std::path::Path>,
    deadline: Instant,
    signals: &Signals,
) -> Result<i32, String> {
    let out = match log {
        Some(p) => Stdio::from(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Stdio::null(),
    };
    let mut make = Command::new("make")
        .arg("-C")
        .arg(dir)
        .arg(format!("-j{jobs}"))
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run make: {e}"))?;
    let mut ended = false;
    loop {
        if let Some(status) = make.try_wait().map_err(|e| e.to_string())? {
            return Ok(status.code().unwrap_or(128 + 15));
        }
        if !ended && (Instant::now() >= deadline || signals.received().is_some()) {
            ended = true;
            if let Ok(pid) = libc::pid_t::try_from(make.id()) {
                // SAFETY: kill has no memory-safety preconditions; `make` is our unreaped child.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Bursts until `stop`: map, madvise and fault `mib` MiB, hold it for the period, unmap.
fn bursts(b: Bursts, stop: &AtomicBool) {
    let Ok(len) = usize::try_from(b.mib << 20) else { return };
    let period = Duration::from_millis(b.period_ms);
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let Ok(map) = Mapping::new(len + HPAGE) else { return };
        let start = map.aligned(len);
        Mapping::advise(start, len, libc::MADV_HUGEPAGE);
        Mapping::touch(start, len);
        while started.elapsed() < period && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(map);
    }
}

/// Churn until `stop`: read `file` front to back in 1 MiB chunks, over and over, writing one
/// chunk in eight back as it was read (dirty page cache, written back by the flusher).
fn churn(file: &std::path::Path, stop: &AtomicBool) {
    const CHUNK: usize = 1 << 20;
    let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open(file) else { return };
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    let mut chunk = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match f.read_at(&mut buf, off) {
            Ok(0) | Err(_) => off = 0,
            Ok(n) => {
                if chunk % 8 == 0 {
                    let _ = f.write_at(&buf[..n], off);
                }
                off += n as u64;
                chunk += 1;
            }
        }
    }
}
