//! kswapd and kcompactd as real threads (`kswapd()`, `kcompactd()`).
//!
//! The daemons' work is the shared code the simulator runs too
//! (`pageblock_core::vmscan::kswapd::kswapd_run`, `pageblock_core::compaction::kcompactd_pass`);
//! this module only gives it threads and wait queues:
//!
//! * **kswapd0** sleeps on `kswapd_wait` until an allocation below the low watermark wakes it
//!   (`wakeup_kswapd`, recorded in `NodeShared::daemons`), balances the node, and hands the
//!   wanted order to kcompactd; while the node stays unbalanced (and kswapd not hopeless)
//!   it runs again at once, and a balanced kswapd naps `KSWAPD_NAP_US` (100 ms) and runs
//!   again if the node is unbalanced when it wakes (the shared code decides both);
//! * **kcompactd0** sleeps on `kcompactd_wait` until woken (by kswapd, or by a request that
//!   finds the node balanced but a block missing) or until the timeout its last pass set
//!   (500 ms; 32 s after a proactive run that did not lower the fragmentation score; none
//!   without proactiveness); the shared pass does the requested work if any, else proactive
//!   compaction, so a kcompactd woken more often than every 500 ms never compacts
//!   proactively.
//!
//! Both run on the last CPU slot (their frees go to its per-CPU lists) and stop when the
//! allocator is dropped or [`crate::Allocator::stop_daemons`] is called.
//!
//! A wake-up cannot be lost: the waker sets the flag under the daemons' state lock and then
//! notifies under the wait queue's mutex; the sleeper reads the flag under that mutex
//! before it waits.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pageblock_core::compaction::{kcompactd_pass, kcompactd_work_requested, PROACTIVE_INTERVAL_US};
use pageblock_core::vmscan::kswapd::{kswapd_nap_over, kswapd_run, KswapdNext, KSWAPD_NAP_US};

use crate::pgdat::Pgdat;

/// A wait queue (`wait_queue_head_t`): a condition variable and its mutex.
#[derive(Default)]
pub(crate) struct WaitQueue {
    lock: Mutex<()>,
    cv: Condvar,
}

impl WaitQueue {
    /// `wake_up_interruptible()`.
    pub(crate) fn wake(&self) {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.cv.notify_all();
    }

    /// Sleep until `ready()` or `timeout` passed (`None`: no timeout).
    fn wait_until(&self, timeout: Option<Duration>, ready: impl Fn() -> bool) {
        let g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        match timeout {
            None => drop(self.cv.wait_while(g, |()| !ready()).unwrap_or_else(|p| p.into_inner())),
            Some(t) => {
                drop(self.cv.wait_timeout_while(g, t, |()| !ready()).unwrap_or_else(|p| p.into_inner()))
            }
        }
    }
}

/// The running daemon threads.
pub(crate) struct DaemonThreads {
    kswapd: JoinHandle<()>,
    kcompactd: JoinHandle<()>,
}

impl DaemonThreads {
    /// `kswapd_run()` and `kcompactd_run()` for the node: start both threads.
    pub(crate) fn start(pgdat: &Arc<Pgdat>) -> std::io::Result<DaemonThreads> {
        pgdat.daemons_stop.store(false, Ordering::Release);
        pgdat.daemons_running.store(true, Ordering::Release);
        let p = Arc::clone(pgdat);
        let kswapd = std::thread::Builder::new().name("kswapd0".into()).spawn(move || kswapd(&p))?;
        let p = Arc::clone(pgdat);
        let kcompactd =
            match std::thread::Builder::new().name("kcompactd0".into()).spawn(move || kcompactd(&p)) {
                Ok(t) => t,
                Err(e) => {
                    DaemonThreads::stop_threads(pgdat, [kswapd]);
                    return Err(e);
                }
            };
        Ok(DaemonThreads { kswapd, kcompactd })
    }

    /// Ask both threads to exit and wait for them.
    pub(crate) fn stop(self, pgdat: &Pgdat) {
        DaemonThreads::stop_threads(pgdat, [self.kswapd, self.kcompactd]);
    }

    fn stop_threads<const N: usize>(pgdat: &Pgdat, threads: [JoinHandle<()>; N]) {
        pgdat.daemons_stop.store(true, Ordering::Release);
        pgdat.kswapd_wait.wake();
        pgdat.kcompactd_wait.wake();
        for t in threads {
            // A daemon that panicked broke an invariant; the panic was already reported.
            let _ = t.join();
        }
        pgdat.daemons_running.store(false, Ordering::Release);
    }
}

fn stopping(pgdat: &Pgdat) -> bool {
    pgdat.daemons_stop.load(Ordering::Acquire)
}

/// The CPU slot the daemons run on.
fn daemon_cpu(pgdat: &Pgdat) -> usize {
    pgdat.shared.nr_cpus() - 1
}

/// kswapd0's loop: run while woken (the shared code keeps an unbalanced kswapd woken), nap
/// after a balanced run, then sleep until woken.
fn kswapd(pgdat: &Pgdat) {
    let cpu = daemon_cpu(pgdat);
    loop {
        pgdat.kswapd_wait.wait_until(None, || stopping(pgdat) || pgdat.shared.daemons().kswapd_woken);
        if stopping(pgdat) {
            return;
        }
        let run = kswapd_run(pgdat, cpu);
        // kswapd hands the order it balanced for to kcompactd.
        pgdat.kick_daemons();
        if let KswapdNext::Nap { order, idx } = run.next {
            let nap = Some(Duration::from_micros(KSWAPD_NAP_US));
            pgdat.kswapd_wait.wait_until(nap, || stopping(pgdat) || pgdat.shared.daemons().kswapd_woken);
            kswapd_nap_over(&pgdat.shared, order, idx);
        }
    }
}

/// kcompactd0's loop: wait until work is requested or the timeout passes, then one shared
/// pass, which sets the next timeout.
fn kcompactd(pgdat: &Pgdat) {
    let cpu = daemon_cpu(pgdat);
    let mut timeout = (pgdat.shared.policy().sysctls.compaction_proactiveness() > 0)
        .then_some(Duration::from_micros(PROACTIVE_INTERVAL_US));
    loop {
        pgdat
            .kcompactd_wait
            .wait_until(timeout, || stopping(pgdat) || kcompactd_work_requested(&pgdat.shared));
        if stopping(pgdat) {
            return;
        }
        timeout = kcompactd_pass(pgdat, cpu).timeout_us.map(Duration::from_micros);
    }
}
