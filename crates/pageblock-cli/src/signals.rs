//! SIGINT and SIGTERM for the long commands (`demo`, `show`, `bench`, `lab`, `replay`,
//! `inspect`): the temporary files of their unfinished results ([`crate::output::OutputFile`])
//! are removed and the process exits 128 + the signal (130 after Ctrl-C, 143 after SIGTERM),
//! as a shell reports a command killed by it. The earlier result at each path is untouched.
//!
//! A command that runs until it is interrupted (`inspect --watch`) calls [`defer`] first: the
//! first signal is then noted ([`received`], [`sleep_until`]) so that the command writes what
//! it has collected and exits with the same status itself; a second signal ends it at once.
//!
//! The two signals are blocked in every thread (the mask is set before any other thread
//! starts and threads inherit it) and taken by one thread waiting in `sigwait`: it runs
//! ordinary code, so it may take a lock and remove files, which a signal handler may not.
//! `record` handles its signals itself (`pageblock_live::record`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// True once a command asked to stop on its own terms ([`defer`]).
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// The first signal received while deferred (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// How often [`sleep_until`] looks for a signal.
const POLL: Duration = Duration::from_millis(50);

/// Temporary files to remove on a signal.
static TEMPORARY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temporary() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes `path` if a signal ends the process, until [`forget`].
pub fn remove_on_signal(path: &Path) {
    temporary().push(path.to_owned());
}

/// `path` is gone or in place: a signal leaves it alone.
pub fn forget(path: &Path) {
    temporary().retain(|p| p != path);
}

/// Blocks SIGINT and SIGTERM and starts the thread that takes them. Call it before any
/// other thread starts.
pub fn install() -> Result<(), String> {
    // SAFETY: a zeroed sigset_t is a valid argument to sigemptyset, which initialises it;
    // sigaddset and pthread_sigmask only read and write the sets handed to them.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(format!("pthread_sigmask: {}", std::io::Error::from_raw_os_error(rc)));
        }
        set
    };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut signal = 0;
            // SAFETY: sigwait reads the initialised set and writes one int.
            if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
                let first = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                if DEFERRED.load(Ordering::SeqCst) && first {
                    continue;
                }
                for path in temporary().iter() {
                    let _ = std::fs::remove_file(path);
                }
                std::process::exit(128 + signal);
            }
        })
        .map(drop)
        .map_err(|e| format!("starting the signal thread: {e}"))
}

/// From now on the first SIGINT or SIGTERM is noted for the command to act on, not obeyed.
pub fn defer() {
    DEFERRED.store(true, Ordering::SeqCst);
}

/// The first signal received after [`defer`], if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Sleep until `deadline` (`None`: until a signal); false if a signal came first.
pub fn sleep_until(deadline: Option<Instant>) -> bool {
    loop {
        if received().is_some() {
            return false;
        }
        let left = deadline.map_or(POLL, |d| d.saturating_duration_since(Instant::now()));
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(POLL));
    }
}
