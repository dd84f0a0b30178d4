//! A request to stop (SIGINT, SIGTERM), noted instead of obeyed at once, so that a command
//! that runs until it is interrupted (`inspect --watch`) writes what it has collected before
//! it exits, with the usual status 128 + the signal. `record` has its own handlers
//! (`cmd/record/signals.rs`): it also passes signals on to its command.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The signals noted.
const CAUGHT: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// How often a sleep looks for a stop request.
const POLL: Duration = Duration::from_millis(50);

/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// The installed handlers (they stay until the process exits).
#[derive(Debug)]
pub struct Stop(());

impl Stop {
    /// Install the handlers.
    pub fn install() -> Result<Stop, String> {
        for signal in CAUGHT {
            // SAFETY: the handler has the plain signature (no SA_SIGINFO) and only touches an
            // atomic, which is async-signal-safe.
            unsafe { set_handler(signal, on_signal as *const () as libc::sighandler_t, libc::SA_RESTART)? };
        }
        Ok(Stop(()))
    }

    /// The first signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Sleep until `deadline` (`None`: until a stop request); false if a stop request came
    /// first.
    pub fn sleep_until(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.received().is_some() {
                return false;
            }
            let left = deadline.map_or(POLL, |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(POLL));
        }
    }
}

/// Install `handler` for `signal` with `flags` and an empty mask.
///
/// # Safety
/// `handler` is a function with the signature `flags` select (`SA_SIGINFO` or not) that
/// does only async-signal-safe work.
pub unsafe fn set_handler(
    signal: libc::c_int,
    handler: libc::sighandler_t,
    flags: libc::c_int,
) -> Result<(), String> {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler is the
    // caller's promise.
    let rc = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(format!("sigaction({signal}): {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
