//! Swap I/O: the device anonymous pages are written to, and how reclaim waits for it
//! (`swap_writepage`, `folio_end_writeback`, `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`).
//!
//! Writing a page to a block device is asynchronous: reclaim submits the write (`pswpout`
//! counts there), keeps the page on the inactive list under writeback, and moves on. When
//! the write completes, the page is rotated to the inactive tail and the next scan frees it.
//! The device is a FIFO queue: a request of n pages completes `n * per_page_us +
//! per_request_us` after the device is free. The device holds at most [`NR_REQUESTS`]
//! requests: a writer finding it full sleeps until the oldest completes (`blk_mq_get_tag`),
//! so reclaim cannot put more in flight than the queue takes. A synchronous device (zram)
//! ends the write before reclaim looks again, so the page is freed at once.

use std::collections::VecDeque;

use super::SWAP_CLUSTER_MAX;

/// `HZ/10`: the longest `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` waits, in
/// microseconds.
pub const WRITEBACK_THROTTLE_TIMEOUT_US: u64 = 100_000;

/// The block device's request queue depth (`/sys/block/*/queue/nr_requests`): 256 on this
/// machine's virtio disk under mq-deadline, and the block layer's usual default.
pub const NR_REQUESTS: usize = 256;

/// A block device's write cost, in microseconds. The defaults were measured with `dd
/// oflag=direct` on the VM the project runs on: 1 MiB writes at 789 MB/s (~5 µs per 4 KiB
/// page) and single 4 KiB writes at ~97 µs each (the per-request cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapLatency {
    /// Transfer time of one base page.
    pub per_page_us: u64,
    /// Fixed cost of one write request (submission, completion interrupt, device latency).
    pub per_request_us: u64,
}

impl Default for SwapLatency {
    fn default() -> SwapLatency {
        SwapLatency { per_page_us: 5, per_request_us: 100 }
    }
}

/// The node's swap device and its writes in flight.
#[derive(Clone, Debug, Default)]
pub struct SwapDevice {
    /// `None`: synchronous (writes complete before reclaim looks again).
    latency: Option<SwapLatency>,
    /// (completion time, pfn, pages), in completion order.
    in_flight: VecDeque<(u64, u64, u64)>,
    /// The pages of `in_flight`, summed.
    pages_in_flight: u64,
    /// Completion times of the requests queued, in order (at most [`NR_REQUESTS`] pending).
    requests: VecDeque<u64>,
    /// When the device has finished every request queued so far.
    busy_until_us: u64,
    /// No swap area is on (`swapon` never ran): `get_nr_swap_pages()` is 0.
    no_area: bool,
}

impl SwapDevice {
    /// A device whose writes complete at once (zram, `SWP_SYNCHRONOUS_IO`).
    pub fn synchronous() -> SwapDevice {
        SwapDevice::default()
    }

    /// A block device with `latency`.
    pub fn block(latency: SwapLatency) -> SwapDevice {
        SwapDevice { latency: Some(latency), ..SwapDevice::default() }
    }

    /// No swap area, as on a machine that never ran `swapon`: reclaim cannot take
    /// anonymous pages, and neither scans nor ages them ([`SwapDevice::can_reclaim_anon`]).
    pub fn none() -> SwapDevice {
        SwapDevice { no_area: true, ..SwapDevice::default() }
    }

    /// `can_reclaim_anon_pages()` for global reclaim: a swap area has room
    /// (`get_nr_swap_pages() > 0`). The model's areas never fill up.
    pub fn can_reclaim_anon(&self) -> bool {
        !self.no_area
    }

    /// Writes take time: written pages stay under writeback.
    pub fn is_async(&self) -> bool {
        self.latency.is_some()
    }

    /// Queue one write request of `blocks` (pfn, order) at `now_us`, as reclaim plugs a
    /// batch. Returns how long the writer slept for a free request slot (0 unless
    /// [`NR_REQUESTS`] requests were pending). Their completion comes from
    /// [`SwapDevice::complete`].
    pub fn submit(&mut self, now_us: u64, blocks: &[(u64, u32)]) -> u64 {
        let Some(lat) = self.latency.filter(|_| !blocks.is_empty()) else {
            return 0;
        };
        self.retire_requests(now_us);
        let waited = match self.requests.len().checked_sub(NR_REQUESTS) {
            Some(over) => self.requests[over] - now_us,
            None => 0,
        };
        let start = now_us + waited;
        self.retire_requests(start);
        let pages: u64 = blocks.iter().map(|&(_, order)| 1u64 << order).sum();
        let done = self.busy_until_us.max(start) + pages * lat.per_page_us + lat.per_request_us;
        self.busy_until_us = done;
        self.requests.push_back(done);
        self.in_flight.extend(blocks.iter().map(|&(pfn, order)| (done, pfn, 1u64 << order)));
        self.pages_in_flight += pages;
        waited
    }

    /// Forget the requests completed by `now_us` (they complete in order).
    fn retire_requests(&mut self, now_us: u64) {
        while self.requests.front().is_some_and(|&done| done <= now_us) {
            self.requests.pop_front();
        }
    }

    /// Take the writes completed by `now_us`, oldest first (their pfns).
    pub fn complete(&mut self, now_us: u64) -> Vec<u64> {
        let n = self.in_flight.iter().take_while(|&&(done, _, _)| done <= now_us).count();
        let done: Vec<(u64, u64, u64)> = self.in_flight.drain(..n).collect();
        self.pages_in_flight -= done.iter().map(|&(_, _, pages)| pages).sum::<u64>();
        done.into_iter().map(|(_, pfn, _)| pfn).collect()
    }

    /// Pages written and not yet complete.
    pub fn pages_in_flight(&self) -> u64 {
        self.pages_in_flight
    }

    /// When the next `pages` pages in flight are written, one entry a page, in order
    /// (fewer if fewer are in flight).
    pub fn writes_end_us(&self, pages: u64) -> Vec<u64> {
        let mut ends = Vec::new();
        for &(done, _, n) in &self.in_flight {
            let left = pages.saturating_sub(ends.len() as u64);
            if left == 0 {
                break;
            }
            ends.extend(std::iter::repeat_n(done, n.min(left) as usize));
        }
        ends
    }
}

/// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` at `now_us`: how long the reclaimer
/// sleeps — until [`SWAP_CLUSTER_MAX`] more pages have been written (`ends`: when pages in
/// flight, to swap or page cache, complete, in any order), or
/// [`WRITEBACK_THROTTLE_TIMEOUT_US`] if that takes longer.
pub fn throttle_us(now_us: u64, mut ends: Vec<u64>) -> u64 {
    ends.sort_unstable();
    ends.get(SWAP_CLUSTER_MAX as usize - 1).map_or(WRITEBACK_THROTTLE_TIMEOUT_US, |&done| {
        done.saturating_sub(now_us).min(WRITEBACK_THROTTLE_TIMEOUT_US)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_queue_behind_each_other_and_throttling_waits_for_a_batch() {
        let mut dev = SwapDevice::block(SwapLatency::default());
        let batch: Vec<(u64, u32)> = (0..32).map(|pfn| (pfn, 0)).collect();
        dev.submit(1000, &batch);
        dev.submit(1000, &[(100, 0)]);
        // 32 * 5 + 100 µs, then the second request behind it: 5 + 100 µs more.
        assert_eq!(throttle_us(1000, dev.writes_end_us(SWAP_CLUSTER_MAX)), 260);
        assert!(dev.complete(1259).is_empty());
        assert_eq!(dev.complete(1260).len(), 32);
        assert_eq!(
            throttle_us(1260, dev.writes_end_us(SWAP_CLUSTER_MAX)),
            WRITEBACK_THROTTLE_TIMEOUT_US,
            "fewer than a batch in flight"
        );
        // Page cache written meanwhile counts toward the batch.
        let mut ends = dev.writes_end_us(SWAP_CLUSTER_MAX);
        ends.extend([1300; 31]);
        assert_eq!(
            throttle_us(1260, ends),
            105,
            "31 pages of page cache at 1,300 µs, the 32nd to swap at 1,365 µs"
        );
        assert_eq!(dev.complete(1365), vec![100]);
        let mut zram = SwapDevice::synchronous();
        zram.submit(0, &batch);
        assert!(!zram.is_async() && zram.complete(0).is_empty());
    }

    #[test]
    fn a_writer_finding_the_queue_full_sleeps_until_the_oldest_request_completes() {
        let lat = SwapLatency { per_page_us: 0, per_request_us: 10 };
        let mut dev = SwapDevice::block(lat);
        for i in 0..NR_REQUESTS as u64 {
            assert_eq!(dev.submit(0, &[(i, 0)]), 0, "request {i} finds a free slot");
        }
        assert_eq!(dev.pages_in_flight(), NR_REQUESTS as u64);
        // The first request completes at 10 µs: the next writer sleeps until then, and its
        // request queues behind the last one.
        assert_eq!(dev.submit(3, &[(1000, 0)]), 7);
        assert_eq!(dev.writes_end_us(u64::MAX).last(), Some(&(10 * (NR_REQUESTS as u64 + 1))));
        assert_eq!(dev.submit(20, &[(1001, 0)]), 0, "two completed meanwhile: a slot is free");
        assert_eq!(dev.complete(10).len(), 1);
        assert_eq!(dev.pages_in_flight(), NR_REQUESTS as u64 + 1, "the completed write left the count");
    }
}
