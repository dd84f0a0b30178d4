//! The zones sampled live during a run: `/proc/buddyinfo` every [`PERIOD`], stamped with
//! `CLOCK_MONOTONIC` (the trace's clock), kept as `buddyinfo.samples`. A replay sets the
//! simulation's zones beside these at the same moments: the before and after snapshots only
//! show the ends of a run, where pressure is gone.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::buddyinfo_samples::{BuddyInfoSample, BuddyInfoSamples};

/// Time between two readings. Reading buddyinfo takes microseconds; the sampler costs the
/// run nothing measurable.
pub const PERIOD: Duration = Duration::from_millis(100);

/// `CLOCK_MONOTONIC`, seconds.
fn monotonic_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A sampler thread, reading until [`Sampler::stop`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<BuddyInfoSamples>,
}

impl Sampler {
    /// Starts reading `path` (`/proc/buddyinfo`) every `period`. A reading that fails or
    /// does not parse is skipped (the file is the kernel's; it does not go bad mid-run).
    pub fn start(path: PathBuf, period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut samples = BuddyInfoSamples::default();
            while !flag.load(Ordering::Relaxed) {
                let time_s = monotonic_s();
                if let Some(buddyinfo) =
                    std::fs::read_to_string(&path).ok().and_then(|t| BuddyInfo::parse(&t).ok())
                {
                    samples.samples.push(BuddyInfoSample { time_s, buddyinfo });
                }
                std::thread::sleep(period);
            }
            samples
        });
        Sampler { stop, thread }
    }

    /// Stops the thread and returns what it read (nothing if it panicked).
    pub fn stop(self) -> BuddyInfoSamples {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_reads_until_stopped_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("buddyinfo");
        std::fs::write(&path, "Node 0, zone      DMA      1      2 \n").unwrap();
        let s = Sampler::start(path.clone(), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(&path, "not buddyinfo\n").unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let got = s.stop();
        assert!(got.samples.len() >= 3, "{} samples", got.samples.len());
        assert!(got.samples.windows(2).all(|w| w[0].time_s <= w[1].time_s));
        assert!(got.samples.iter().all(|s| s.buddyinfo.zones[0].free_pages() == 5), "bad readings skipped");
        let text = got.render();
        let back = BuddyInfoSamples::parse(&text).unwrap();
        assert_eq!((back.samples.len(), back.render()), (got.samples.len(), text), "times kept to the ms");
    }
}
