//! `struct scan_control`: one reclaim invocation's goal and progress, and what scanning
//! costs in simulated time. Data only: the driver's LRU hook ([`crate::locks::NodeLocks::shrink_node`])
//! takes it, and reclaim ([`crate::vmscan`]) drives it.

use crate::config::{ZoneType, MAX_NR_ZONES};

/// `DEF_PRIORITY`: a reclaim pass scans `size >> priority` pages of each list.
pub const DEF_PRIORITY: u32 = 12;

/// Simulated time reclaim spends on each folio it scans, and on each of the folio's pages,
/// in nanoseconds: a base page costs both, 300 ns, a huge page 51 µs. Measured on this
/// project's 6.18 VM as kswapd0's CPU time (`/proc/PID/stat` utime + stime, in 10 ms ticks)
/// over `pgscan_kswapd` in the `lab real` recordings of issue 23: where reclaim drops clean
/// page cache (A6, C12: twelve runs, 15–28 M pages each) 244–341 ns a page; where it meets
/// young huge pages and keeps them (B5: four runs of 2.2–6.3 M pages, 96% of them kept on
/// their first look, most in huge pages) 94–123 ns a page. Six earlier kernel builds gave
/// 460–1,090 ns a page (600 pooled), the figure used before a folio's pages were told apart.
pub const SCAN_NS_PER_FOLIO: u64 = 200;
/// See [`SCAN_NS_PER_FOLIO`].
pub const SCAN_NS_PER_PAGE: u64 = 100;

/// The simulated time, in whole microseconds (rounded up), reclaim takes to scan `pages`
/// pages in `folios` folios.
pub const fn scan_time_us(pages: u64, folios: u64) -> u64 {
    pages
        .saturating_mul(SCAN_NS_PER_PAGE)
        .saturating_add(folios.saturating_mul(SCAN_NS_PER_FOLIO))
        .div_ceil(1000)
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
    /// `nr_ref_keep` by list kind (anon, file): kept young at the first look.
    pub nr_ref_keep: [u64; 2],
    /// `nr_activate_anon`, `nr_activate_file`: activated by the inactive lists' looks.
    pub nr_activate: [u64; 2],
    /// Inactive-list pages scanned times the priority they were scanned at.
    pub priority_pages: u64,
}

/// `struct scan_control`: one reclaim invocation's goal and progress.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Cache-trim mode is not to be entered (`no_cache_trim_mode`: kswapd's run starts over
    /// without it after every pass failed in it).
    pub no_cache_trim_mode: bool,
    /// A pass in cache-trim mode reclaimed nothing (`cache_trim_mode_failed`).
    pub cache_trim_mode_failed: bool,
    /// Pages scanned so far.
    pub nr_scanned: u64,
    /// Folios scanned so far (a huge page is one folio of many pages).
    pub nr_folios_scanned: u64,
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
            no_cache_trim_mode: false,
            cache_trim_mode_failed: false,
            skipped_deactivate: false,
            nr_scanned: 0,
            nr_folios_scanned: 0,
            nr_reclaimed: 0,
            stat: ReclaimStat::default(),
            nr: PassCounts::default(),
            throttled_us: 0,
        }
    }

    /// The reclaimer's time in this invocation so far: [`scan_time_us`] of what it scanned,
    /// plus its throttled sleeps. I/O it submits is queued at the invocation's start plus
    /// this.
    pub fn elapsed_us(&self) -> u64 {
        scan_time_us(self.nr_scanned, self.nr_folios_scanned) + self.throttled_us
    }
}

/// A `balance_pgdat` run in progress: kswapd's reclaim for `order` up to zone `idx`, taken
/// one priority pass at a time by `vmscan::kswapd`, so that the workload runs on between
/// passes as it does beside the real kswapd — which checks the node's balance afresh before
/// every pass and stops as soon as frees made meanwhile balanced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceRun {
    /// The order kswapd was woken for (`sc.order` drops to 0 once enough is reclaimed).
    pub(crate) order: u32,
    /// The zone types the run balances.
    pub(crate) idx: ZoneType,
    /// The zones in scope (up to `idx`, with managed pages).
    pub(crate) in_scope: Vec<usize>,
    /// Each zone's watermark boost when the run began (paid back at its end).
    pub(crate) zone_boosts: [u64; MAX_NR_ZONES],
    /// Boost still to reclaim (0: a real shortage, or no boost).
    pub(crate) nr_boost: u64,
    /// `sc.nr_reclaimed` when the priority was last reset: a run that reclaims nothing
    /// since is a failure.
    pub(crate) start: u64,
    /// The run's scan control: its priority, order, and what it scanned and reclaimed.
    pub(crate) sc: ScanControl,
}

impl BalanceRun {
    /// The run began boosted: some zone in scope had a watermark boost to pay back.
    pub(crate) fn boosted(&self) -> bool {
        self.zone_boosts.iter().any(|&b| b > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A base page costs its folio's and its own share; a huge page's 512 pages cost one
    /// folio's and 512 pages': 300 ns against 51 µs, where one cost a page made it 307 µs.
    #[test]
    fn a_huge_folio_costs_its_pages_and_one_folio() {
        assert_eq!(scan_time_us(10, 10), 3);
        assert_eq!(scan_time_us(512, 1), 52);
        assert_eq!(scan_time_us(0, 0), 0);
    }
}
