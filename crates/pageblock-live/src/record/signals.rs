//! Signals during a recording. SIGINT, SIGTERM, SIGHUP and SIGQUIT no longer kill the
//! recorder: the handler only notes them, so tracefs is always restored and the trace file
//! always finished. A signal typed at the terminal (Ctrl-C) already reaches the command,
//! which is in the same foreground process group; one sent to the recorder alone with
//! `kill` is passed on to the command. The recorder then exits with 128 + the signal.
//!
//! Handlers are reset to the default in the command at `exec`.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signals caught.
const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The first signal caught (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);
/// A signal sent by a process (not by the terminal or kernel) and not yet passed on.
static TO_FORWARD: AtomicI32 = AtomicI32::new(0);
/// The pid that sent [`TO_FORWARD`].
static SENDER: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let _ = FIRST.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    if info.is_null() {
        return;
    }
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t for this signal; si_pid
    // is meaningful for the user-sent codes (si_code <= 0) it is read for.
    let (code, pid) = unsafe { ((*info).si_code, (*info).si_pid()) };
    if code <= 0 {
        SENDER.store(pid, Ordering::SeqCst);
        TO_FORWARD.store(signal, Ordering::SeqCst);
    }
}

/// The installed handlers (they stay until the process exits).
#[derive(Debug)]
pub struct Signals(());

impl Signals {
    /// Installs the handlers.
    pub fn install() -> Result<Self, String> {
        for signal in CAUGHT {
            let handler = on_signal as *const () as libc::sighandler_t;
            // SAFETY: the handler has the SA_SIGINFO signature and only touches atomics, which
            // is async-signal-safe.
            unsafe { set_handler(signal, handler, libc::SA_SIGINFO | libc::SA_RESTART)? };
        }
        Ok(Signals(()))
    }

    /// The first signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match FIRST.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Passes a signal sent to the recorder by another process on to `child`.
    pub fn forward_to(&self, child: u32) {
        let signal = TO_FORWARD.swap(0, Ordering::SeqCst);
        let Ok(child) = libc::pid_t::try_from(child) else { return };
        if signal != 0 && SENDER.load(Ordering::SeqCst) != child {
            // SAFETY: kill has no memory-safety preconditions; `child` is our unreaped
            // child, so its pid cannot have been reused.
            unsafe { libc::kill(child, signal) };
        }
    }
}

/// The name of a signal number, for messages.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGABRT => "SIGABRT".into(),
        other => format!("signal {other}"),
    }
}

/// Install `handler` for `signal` with `flags` and an empty mask.
///
/// # Safety
/// `handler` is a function with the signature `flags` select (`SA_SIGINFO` or not) that
/// does only async-signal-safe work.
unsafe fn set_handler(
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
