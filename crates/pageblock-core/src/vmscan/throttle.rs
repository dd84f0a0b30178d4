//! Throttling a direct reclaimer that makes no progress (`consider_reclaim_throttle`,
//! `reclaim_throttle(VMSCAN_THROTTLE_NOPROGRESS)`, `skip_throttle_noprogress`).
//!
//! A direct reclaimer that has reached priority 1 without reclaiming a page sleeps for one
//! jiffy before its last, whole-list pass, so that the writes holding the lists back can end.
//! It does not sleep when the sleep cannot help: when kswapd has given up on the node (the
//! machine is near OOM), or when no more than half of the reclaimable pages are waiting to
//! be written (dirty or under writeback) — those are throttled on writeback instead when
//! they reach the inactive tail.
//!
//! The kernel also wakes the sleepers early when any reclaimer makes progress; the
//! simulator's reclaimers do not run at once, so the sleep lasts its whole jiffy.

use super::{ScanControl, MAX_RECLAIM_RETRIES};
use crate::locks::NodeLocks;

/// One jiffy at `CONFIG_HZ=250` (this machine's 6.18 kernel, and Debian's and Ubuntu's
/// default), in microseconds: the `VMSCAN_THROTTLE_NOPROGRESS` timeout.
pub const NOPROGRESS_THROTTLE_US: u64 = 4_000;

/// `skip_throttle_noprogress()`: sleeping would not help — kswapd gave up on the node, or
/// at most half of the reclaimable pages wait to be written (`NR_ZONE_WRITE_PENDING`).
fn skip_throttle_noprogress<L: NodeLocks + ?Sized>(l: &L) -> bool {
    let node = l.node();
    if node.daemons().kswapd_failures >= MAX_RECLAIM_RETRIES {
        return true;
    }
    let reclaimable: u64 = (0..node.zones().len()).map(|z| l.zone_reclaimable_pages(z)).sum();
    2 * l.write_pending_pages() <= reclaimable
}

/// `consider_reclaim_throttle()` after a direct reclaimer's pass over the node: at priority
/// 1 with nothing reclaimed yet, sleep one jiffy unless [`skip_throttle_noprogress`]. The
/// sleep is added to `sc.throttled_us`, so the next pass sees the writes that ended
/// meanwhile.
pub(crate) fn consider_reclaim_throttle<L: NodeLocks + ?Sized>(l: &L, sc: &mut ScanControl) {
    if sc.kswapd || sc.priority != 1 || sc.nr_reclaimed > 0 || skip_throttle_noprogress(l) {
        return;
    }
    sc.throttled_us += NOPROGRESS_THROTTLE_US;
}
