//! Which per-CPU slot a thread uses.
//!
//! The kernel runs on a CPU; a user-space thread can move between CPUs at any time. Each
//! thread gets a ticket the first time it allocates, and uses slot `ticket % nr_cpus`: with
//! as many threads as slots every thread has its own lists, as CPUs do. Callers that need a
//! fixed mapping (deterministic simulations, a thread pinned to a core) name the slot
//! explicitly with [`crate::Allocator::on_cpu`].

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT_TICKET: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static TICKET: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's ticket (assigned on first use).
#[inline]
pub fn thread_ticket() -> usize {
    TICKET.with(|t| {
        let v = t.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
        t.set(v);
        v
    })
}

/// A CPU slot index the allocator does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSuchCpu {
    /// The index given.
    pub cpu: usize,
    /// The allocator's slot count (valid indices are below it).
    pub nr_cpus: usize,
}

impl std::fmt::Display for NoSuchCpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CPU slot {} does not exist: the allocator has {} (0..={})",
            self.cpu,
            self.nr_cpus,
            self.nr_cpus - 1
        )
    }
}

impl std::error::Error for NoSuchCpu {}
