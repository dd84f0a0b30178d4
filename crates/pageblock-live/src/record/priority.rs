//! The reader's CPU priority while it streams.
//!
//! `trace_pipe` is read by one thread, which formats nothing itself but makes the kernel
//! format every event as text on its behalf, then compresses it. A workload that keeps
//! every CPU busy (a `make -jN` beside THP bursts and page-cache churn) leaves that thread a
//! fair share of a CPU, less than it needs at 100k+ events a second, and the ring buffer
//! overflows: workload A lost up to 4.9M of 35M events a run at nice 0. So while it streams
//! the reader runs at [`READER_NICE`]. It takes no more CPU than before (it only reads what
//! the kernel wrote), it takes it when the buffer fills rather than after. The command was
//! started before the change and keeps its own priority; the thread's old priority comes
//! back when the guard drops, before anything else is started from it.

/// The reader thread's nice value while it streams.
pub const READER_NICE: i32 = -10;

/// The calling thread at another nice value until dropped.
pub struct ThreadNice {
    tid: libc::id_t,
    before: i32,
}

impl ThreadNice {
    /// Sets the calling thread's nice value to `nice`; `Err` (and nothing changed) when the
    /// kernel refuses (raising priority needs root or `RLIMIT_NICE`).
    pub fn set(nice: i32) -> Result<ThreadNice, std::io::Error> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as libc::id_t;
        let before = get(tid)?;
        // SAFETY: plain syscall on this thread's id.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ThreadNice { tid, before })
    }
}

impl Drop for ThreadNice {
    fn drop(&mut self) {
        // Lowering priority (a higher nice value) is always allowed.
        // SAFETY: plain syscall on the id saved in `set`, this thread's.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, self.tid, self.before) };
    }
}

/// The nice value of thread `tid` (`getpriority` returns -1 both for nice -1 and for an
/// error, so errno tells them apart).
fn get(tid: libc::id_t) -> Result<i32, std::io::Error> {
    // SAFETY: errno is this thread's; getpriority is a plain syscall.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        if nice == -1 && *libc::__errno_location() != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(nice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard sets the thread's nice value and puts the old one back on drop; raising
    /// (here, lowering priority to 5 more than now, which any user may) is enough to see
    /// both steps. Run in a thread of its own so the test thread keeps its priority.
    #[test]
    fn the_guard_sets_the_thread_and_restores_it() {
        std::thread::spawn(|| {
            let tid = unsafe { libc::gettid() } as libc::id_t;
            let before = get(tid).unwrap();
            let target = (before + 5).min(19);
            {
                let _g = ThreadNice::set(target).unwrap();
                assert_eq!(get(tid).unwrap(), target);
            }
            // Back to `before` needs privilege when it is a raise; as root (CI) it is.
            if unsafe { libc::geteuid() } == 0 {
                assert_eq!(get(tid).unwrap(), before);
            }
        })
        .join()
        .unwrap();
    }

    /// A thread's nice value is its own: the guard leaves the others alone.
    #[test]
    fn other_threads_keep_their_priority() {
        let main_tid = unsafe { libc::gettid() } as libc::id_t;
        let main_before = get(main_tid).unwrap();
        std::thread::spawn(move || {
            let _g = ThreadNice::set((main_before + 3).min(19)).unwrap();
            assert_eq!(get(main_tid).unwrap(), main_before);
        })
        .join()
        .unwrap();
    }
}
