//! The zones sampled live during a run: `/proc/buddyinfo` every [`BUDDYINFO_PERIOD`] and
//! `/proc/pagetypeinfo` every [`PAGETYPEINFO_PERIOD`], stamped with `CLOCK_MONOTONIC` (the
//! trace's clock), kept as `buddyinfo.samples` and `pagetypeinfo.samples`. A replay sets the
//! simulation's zones beside these at the same moments: the before and after snapshots only
//! show the ends of a run, where pressure is gone.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pageblock_formats::samples::{Sample, SampledFile, Samples};

/// Time between two readings of buddyinfo. Reading it takes microseconds; the sampler costs
/// the run nothing measurable.
pub const BUDDYINFO_PERIOD: Duration = Duration::from_millis(100);

/// Time between two readings of pagetypeinfo. The kernel counts each free list by walking
/// it (up to 100,000 entries) under the zone lock, one order at a time: a reading can hold a
/// zone's lock for a millisecond, so it is taken ten times less often than buddyinfo.
pub const PAGETYPEINFO_PERIOD: Duration = Duration::from_secs(1);

/// `CLOCK_MONOTONIC`, seconds.
fn monotonic_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Sleeps `period`, waking early once `stop` is set (a second-long period must not hold up
/// the end of a run).
fn sleep_unless_stopped(stop: &AtomicBool, period: Duration) {
    const STEP: Duration = Duration::from_millis(20);
    let mut left = period;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let step = left.min(STEP);
        std::thread::sleep(step);
        left -= step;
    }
}

/// A sampler thread, reading a file of type `T` until [`Sampler::stop`].
pub struct Sampler<T> {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Samples<T>>,
}

impl<T: SampledFile + Send + 'static> Sampler<T> {
    /// Starts reading `path` every `period`. A reading that fails or does not parse is
    /// skipped (the file is the kernel's; it does not go bad mid-run).
    pub fn start(path: PathBuf, period: Duration) -> Sampler<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut samples = Samples::default();
            while !flag.load(Ordering::Relaxed) {
                let time_s = monotonic_s();
                if let Some(file) = std::fs::read_to_string(&path).ok().and_then(|t| T::parse(&t).ok()) {
                    samples.samples.push(Sample { time_s, file });
                }
                sleep_unless_stopped(&flag, period);
            }
            samples
        });
        Sampler { stop, thread }
    }

    /// Stops the thread and returns what it read (nothing if it panicked).
    pub fn stop(self) -> Samples<T> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_formats::buddyinfo::BuddyInfo;

    #[test]
    fn the_sampler_reads_until_stopped_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("buddyinfo");
        std::fs::write(&path, "Node 0, zone      DMA      1      2 \n").unwrap();
        let s = Sampler::<BuddyInfo>::start(path.clone(), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(&path, "not buddyinfo\n").unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let got = s.stop();
        assert!(got.samples.len() >= 3, "{} samples", got.samples.len());
        assert!(got.samples.windows(2).all(|w| w[0].time_s <= w[1].time_s));
        assert!(got.samples.iter().all(|s| s.file.zones[0].free_pages() == 5), "bad readings skipped");
        let text = got.render();
        let back = Samples::<BuddyInfo>::parse(&text).unwrap();
        assert_eq!((back.samples.len(), back.render()), (got.samples.len(), text), "times kept to the ms");
    }

    /// A pagetypeinfo sampler reads a second apart, but stopping it does not wait the second.
    #[test]
    fn a_slow_sampler_stops_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pagetypeinfo");
        std::fs::write(&path, include_str!("../../../pageblock-formats/tests/data/pagetypeinfo.txt"))
            .unwrap();
        let s =
            Sampler::<pageblock_formats::pagetypeinfo::PageTypeInfo>::start(path, Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
        let t = std::time::Instant::now();
        let got = s.stop();
        assert!(t.elapsed() < Duration::from_secs(5), "stopped after {:?}", t.elapsed());
        assert_eq!(got.samples.len(), 1);
        assert_eq!(got.samples[0].file.nodes[0].pageblock_order, 9);
    }
}
