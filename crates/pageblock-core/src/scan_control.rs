//! `struct scan_control`: one reclaim invocation's goal and progress, and what scanning
//! costs in simulated time. Data only: the driver's LRU hook ([`crate::locks::NodeLocks::shrink_node`])
//! takes it, and reclaim ([`crate::vmscan`]) drives it.

/// `DEF_PRIORITY`: a reclaim pass scans `size >> priority` pages of each list.
pub const DEF_PRIORITY: u32 = 12;

/// Simulated time one scanned page costs kswapd, in nanoseconds, measured on this project's
/// 6.18 VM: kswapd0's CPU time (`/proc/PID/stat` utime + stime) over `pgscan_kswapd` in six
/// kernel builds under memory pressure, 1.08 s for 1.81 M pages pooled (per run 460–1,090 ns;
/// the clock ticks 10 ms). So in the lab (14 µs an operation, 62 µs in a 2 GiB kbuild-thp) a
/// kswapd run scanning a few thousand pages spans tens of operations.
pub const KSWAPD_SCAN_NS_PER_PAGE: u64 = 600;

/// The simulated time, in whole microseconds (rounded up), kswapd takes to scan `pages`.
pub const fn scan_time_us(pages: u64) -> u64 {
    pages.saturating_mul(KSWAPD_SCAN_NS_PER_PAGE).div_ceil(1000)
}

/// What a reclaim pass did, by kind (the vmstat events it feeds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStat {
    /// `pgscan_anon`.
    pub pgscan_anon: u64,
    /// `pgscan_file`.
    pub pgscan_file: u64,
    /// `pgsteal_anon`.
    pub pgsteal_anon: u64,
    /// `pgsteal_file`.
    pub pgsteal_file: u64,
    /// `pswpout`: anonymous pages written to swap.
    pub pswpout: u64,
    /// `pgactivate`.
    pub pgactivate: u64,
    /// `pgdeactivate`.
    pub pgdeactivate: u64,
    /// `slabs_scanned`.
    pub slabs_scanned: u64,
}

/// `struct scan_control`: one reclaim invocation's goal and progress.
#[derive(Clone, Debug)]
pub struct ScanControl {
    /// Pages to reclaim before a direct reclaimer may stop.
    pub nr_to_reclaim: u64,
    /// Current scan priority (12 = lightest).
    pub priority: u32,
    /// The order reclaim works for (kswapd drops it to 0 once it reclaimed enough).
    pub order: u32,
    /// The highest zone (node zone index) whose pages count.
    pub reclaim_idx: usize,
    /// Anonymous memory may be swapped out (boosted kswapd runs do not swap).
    pub may_swap: bool,
    /// kswapd (scans every list in proportion) rather than a direct reclaimer.
    pub kswapd: bool,
    /// The request may compact (`gfp_compaction_allowed`: it may do I/O), so reclaim may
    /// work on until compaction has room (`should_continue_reclaim`).
    pub compaction_allowed: bool,
    /// Age the active lists whatever `prepare_scan_control` finds (the retry of a reclaim
    /// that skipped them and took nothing).
    pub force_deactivate: bool,
    /// A pass left an active list alone because it may not be deactivated.
    pub skipped_deactivate: bool,
    /// Pages scanned so far.
    pub nr_scanned: u64,
    /// Pages reclaimed so far.
    pub nr_reclaimed: u64,
    /// Per-kind detail.
    pub stat: ReclaimStat,
    /// The current `shrink_node` pass's isolation counts (`sc->nr`, reset per pass).
    pub nr: PassCounts,
    /// Time spent asleep, in microseconds: in `reclaim_throttle`, and for a free request
    /// slot on the swap device.
    pub throttled_us: u64,
}

/// What one `shrink_node` pass met (`sc->nr`): the pages it took off the inactive lists,
/// and those of them still under writeback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassCounts {
    /// `nr.taken`: pages isolated from the inactive lists.
    pub taken: u64,
    /// `nr.writeback`: under writeback, met for the first time with `PG_reclaim` unset or by
    /// a direct reclaimer.
    pub writeback: u64,
    /// `nr.immediate`: under writeback and met again by kswapd while the node is flagged
    /// `PGDAT_WRITEBACK` — pages cycle through the LRU faster than they are written.
    pub immediate: u64,
}

impl ScanControl {
    /// A fresh scan at [`DEF_PRIORITY`].
    pub fn new(nr_to_reclaim: u64, order: u32, reclaim_idx: usize, kswapd: bool) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            order,
            reclaim_idx,
            may_swap: true,
            kswapd,
            compaction_allowed: true,
            force_deactivate: false,
            skipped_deactivate: false,
            nr_scanned: 0,
            nr_reclaimed: 0,
            stat: ReclaimStat::default(),
            nr: PassCounts::default(),
            throttled_us: 0,
        }
    }

    /// The reclaimer's time in this invocation so far: [`KSWAPD_SCAN_NS_PER_PAGE`]
    /// per page scanned, plus its throttled sleeps. I/O it submits is queued at the
    /// invocation's start plus this.
    pub fn elapsed_us(&self) -> u64 {
        scan_time_us(self.nr_scanned) + self.throttled_us
    }
}
