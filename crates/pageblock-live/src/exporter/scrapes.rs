//! One inspection shared by every scrape that asks for it: concurrent scrapes wait for the
//! inspection in flight instead of starting their own (single flight), and its result serves
//! later scrapes for `--cache-seconds`. Reading kpageflags is linear in memory (0.6 s at
//! 24 GiB), so without this ten concurrent scrapes cost ten full reads, one after another.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::inspect::{self, Inspection};

/// A scrape's body: the exposition text of one inspection, or why it failed.
pub type Scrape = Result<Arc<String>, String>;

/// What the scrapes share.
#[derive(Default)]
struct State {
    /// An inspection is running.
    in_flight: bool,
    /// Inspections finished since the start.
    inspections: u64,
    /// The last inspection's end and result.
    last: Option<(Instant, Scrape)>,
}

/// The exporter's inspections.
pub struct Scrapes {
    proc: PathBuf,
    cheap: bool,
    max_age: Duration,
    state: Mutex<State>,
    done: Condvar,
    warned: AtomicBool,
}

impl Scrapes {
    /// Inspections of `proc` (without kpageflags if `cheap`), each serving for `max_age`.
    pub fn new(proc: PathBuf, cheap: bool, max_age: Duration) -> Scrapes {
        Scrapes {
            proc,
            cheap,
            max_age,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
            warned: AtomicBool::new(false),
        }
    }

    /// The current scrape: the cached one if fresh, the one in flight if any, else a new one;
    /// and the number of inspections made so far.
    pub fn get(&self) -> (Scrape, u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = state.inspections;
        loop {
            match &state.last {
                // A result that finished after this scrape arrived is shared, however old; an
                // earlier one if it is fresh and not a failure.
                Some((at, scrape))
                    if state.inspections > seen || (scrape.is_ok() && at.elapsed() < self.max_age) =>
                {
                    return (scrape.clone(), state.inspections);
                }
                _ if state.in_flight => {
                    state = self.done.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                _ => break,
            }
        }
        state.in_flight = true;
        drop(state);
        let flight = Flight(self);
        let scrape = self.inspect();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.inspections += 1;
        state.last = Some((Instant::now(), scrape.clone()));
        let inspections = state.inspections;
        drop(state);
        drop(flight);
        (scrape, inspections)
    }

    fn inspect(&self) -> Scrape {
        let inspection =
            if self.cheap { inspect::inspect_cheap(&self.proc) } else { inspect::inspect(&self.proc) };
        let inspection = inspection.map_err(|e| e.to_string())?;
        self.warn_once(&inspection);
        Ok(Arc::new(inspection.prometheus()))
    }

    /// Say once, on stderr, which sources could not be read: their families are left out.
    fn warn_once(&self, inspection: &Inspection) {
        if inspection.unreadable.is_empty() || self.warned.swap(true, Ordering::SeqCst) {
            return;
        }
        // A closed stderr is no reason to stop serving.
        let mut err = std::io::stderr().lock();
        for (path, why) in &inspection.unreadable {
            let _ = writeln!(err, "pageblock exporter: not read: {path}: {why}");
        }
        let _ = writeln!(
            err,
            "pageblock exporter: the metric families from those sources are left out \
             (pageblock_source_up says which were read; kpageflags and pagetypeinfo need root)"
        );
    }
}

/// The inspection in flight: when it ends, even by a panic, the scrapes waiting for it wake.
struct Flight<'a>(&'a Scrapes);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner).in_flight = false;
        self.0.done.notify_all();
    }
}
