//! A zone's compaction memory: where the scanners stopped last time, and how often to skip
//! compaction after it failed (`compact_cached_*_pfn`, `compact_considered`,
//! `compact_defer_shift`, `compact_order_failed`, `compact_blockskip_flush`).
//!
//! Deferral: each failure at an order doubles the number of attempts at that order or above
//! that are skipped before the next real one (up to 2^[`COMPACT_MAX_DEFER_SHIFT`] = 64); a
//! success resets it.

use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::types::PAGE_ALLOC_COSTLY_ORDER;
use crate::zone::Zone;

/// `COMPACT_MAX_DEFER_SHIFT`.
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;

/// A zone's compaction state, guarded by the zone lock.
///
/// Invariants: `defer_shift <= COMPACT_MAX_DEFER_SHIFT`; every cached pfn lies in the zone
/// once a run has used it (out-of-zone values are reset when read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneCompaction {
    /// `compact_cached_migrate_pfn[]`: where the migrate scanner resumes, for async and for
    /// sync runs.
    pub cached_migrate_pfn: [u64; 2],
    /// `compact_cached_free_pfn`: where the free scanner resumes.
    pub cached_free_pfn: u64,
    /// `compact_init_migrate_pfn`: a run starting at or below this scans the whole zone.
    /// 0 until the first skip-hint reset sets it (the kernel's zone starts zeroed).
    pub init_migrate_pfn: u64,
    /// `compact_init_free_pfn`: a free scanner starting at or above this searches the free
    /// lists deeper. 0 until the first skip-hint reset.
    pub init_free_pfn: u64,
    /// `compact_considered`: attempts skipped since the last failure.
    pub considered: u32,
    /// `compact_defer_shift`: skip 2^shift attempts before trying again.
    pub defer_shift: u32,
    /// `compact_order_failed`: the lowest order that failed; smaller orders are never
    /// deferred.
    pub order_failed: u32,
    /// `compact_blockskip_flush`: a direct run met the scanners; clear the skip hints when
    /// kswapd next sleeps.
    pub blockskip_flush: bool,
}

/// The first pfn of the last pageblock of a zone ending at `end_pfn`
/// (`pageblock_start_pfn(zone_end_pfn - 1)`): where the free scanner starts.
pub(crate) const fn last_pageblock_pfn(end_pfn: u64, pageblock_order: u32) -> u64 {
    (end_pfn - 1) & !((1 << pageblock_order) - 1)
}

impl ZoneCompaction {
    /// A zone of pfns `[start_pfn, end_pfn)` nobody compacted yet.
    pub fn new(start_pfn: u64, end_pfn: u64, pageblock_order: u32) -> ZoneCompaction {
        let last_block_pfn = last_pageblock_pfn(end_pfn, pageblock_order);
        ZoneCompaction {
            cached_migrate_pfn: [start_pfn; 2],
            cached_free_pfn: last_block_pfn,
            init_migrate_pfn: 0,
            init_free_pfn: 0,
            considered: 0,
            defer_shift: 0,
            order_failed: 0,
            blockskip_flush: false,
        }
    }

    /// `defer_compaction()`: a run at `order` failed.
    pub(crate) fn defer_compaction(&mut self, order: u32) {
        self.considered = 0;
        self.defer_shift = (self.defer_shift + 1).min(COMPACT_MAX_DEFER_SHIFT);
        self.order_failed = self.order_failed.min(order);
    }

    /// `compaction_deferred()`: should this attempt at `order` be skipped? Each call counts
    /// as one attempt considered.
    pub(crate) fn compaction_deferred(&mut self, order: u32) -> bool {
        if order < self.order_failed {
            return false;
        }
        self.considered += 1;
        let limit = 1 << self.defer_shift;
        if self.considered >= limit {
            self.considered = limit;
            return false;
        }
        true
    }

    /// `compaction_defer_reset()`: a run at `order` succeeded (and, with `alloc_success`, the
    /// allocation that wanted it too).
    pub(crate) fn compaction_defer_reset(&mut self, order: u32, alloc_success: bool) {
        if alloc_success {
            self.considered = 0;
            self.defer_shift = 0;
        }
        if order >= self.order_failed {
            self.order_failed = order + 1;
        }
    }

    /// `compaction_restarting()`: deferred as long as possible and due again — start from
    /// clean skip hints.
    pub fn compaction_restarting(&self, order: u32) -> bool {
        order >= self.order_failed
            && self.defer_shift == COMPACT_MAX_DEFER_SHIFT
            && self.considered >= 1 << COMPACT_MAX_DEFER_SHIFT
    }
}

impl Zone {
    /// `reset_cached_positions()`: both scanners start from their ends again.
    pub(crate) fn reset_cached_positions(&mut self) {
        let start = self.start_pfn();
        let last = self.last_pageblock_pfn();
        let c = &mut self.compact;
        c.cached_migrate_pfn = [start; 2];
        c.cached_free_pfn = last;
    }

    /// The first pfn of the zone's last pageblock (`pageblock_start_pfn(zone_end_pfn - 1)`).
    pub(crate) fn last_pageblock_pfn(&self) -> u64 {
        last_pageblock_pfn(self.end_pfn(), self.pageblock_order())
    }

    /// `__reset_isolation_suitable()`, once a direct run met the scanners
    /// (`compact_blockskip_flush`): walk the zone from both ends at once and clear the skip
    /// hint of each pageblock a sample (every 8th page) shows worth scanning again — an
    /// allocated movable page for the migrate half, a free page in a Movable block for the
    /// free half (both, once the half found its first). The scanners restart at the first
    /// such blocks (`compact_init_*_pfn` too); with none, they start met in the middle.
    /// Blocks under an allocation of a pageblock or more keep their hint.
    pub(crate) fn reset_isolation_suitable(&mut self) {
        if !self.compact.blockskip_flush {
            return;
        }
        self.compact.blockskip_flush = false;
        let pb = self.pageblock_nr_pages();
        let mut migrate_pfn = self.start_pfn();
        let mut free_pfn = self.end_pfn() - 1;
        let (mut reset_migrate, mut reset_free) = (free_pfn, migrate_pfn);
        let (mut source_set, mut free_set) = (false, false);
        while migrate_pfn < free_pfn {
            if self.reset_isolation_pfn(migrate_pfn, true, source_set) && migrate_pfn < reset_migrate {
                source_set = true;
                reset_migrate = migrate_pfn;
                self.compact.init_migrate_pfn = migrate_pfn;
                self.compact.cached_migrate_pfn = [migrate_pfn; 2];
            }
            if self.reset_isolation_pfn(free_pfn, free_set, true) && free_pfn > reset_free {
                free_set = true;
                reset_free = free_pfn;
                self.compact.init_free_pfn = free_pfn;
                self.compact.cached_free_pfn = free_pfn;
            }
            migrate_pfn += pb;
            let Some(next) = free_pfn.checked_sub(pb) else {
                break;
            };
            free_pfn = next;
        }
        if reset_migrate >= reset_free {
            self.compact.cached_migrate_pfn = [migrate_pfn; 2];
            self.compact.cached_free_pfn = free_pfn;
        }
    }

    /// `__reset_isolation_pfn()`: clear the skip hint of `pfn`'s pageblock if a sample shows
    /// it a migration source (`check_source`: an allocated movable page) or target
    /// (`check_target`: a free page). Returns whether the block may be a starting point.
    fn reset_isolation_pfn(&self, pfn: u64, check_source: bool, check_target: bool) -> bool {
        if !self.contains(pfn) {
            return false;
        }
        let pbo = self.pageblock_order();
        // `pageblock_skip_persistent()`.
        if self.block_at(pfn).is_some_and(|b| b.state == PageState::Allocated && b.order >= pbo) {
            return false;
        }
        let block = self.block_of(pfn);
        let pageblocks = &self.shared().pageblocks;
        if check_source && check_target && !pageblocks.skip(block) {
            return true;
        }
        if !check_source && check_target && self.pageblock_migratetype(pfn) != MigrateType::Movable {
            return false;
        }
        let first = (pfn & !((1 << pbo) - 1)).max(self.start_pfn());
        let last = ((pfn | ((1 << pbo) - 1)).min(self.end_pfn() - 1)).max(first);
        for p in (first..=last).step_by(1 << PAGE_ALLOC_COSTLY_ORDER) {
            let lru = || self.block_at(p).is_some_and(|b| b.state == PageState::Allocated && b.tag.movable);
            let buddy = || self.shared().memmap().info(self.idx(p)).state == PageState::Buddy;
            if (check_source && lru()) || (check_target && buddy()) {
                pageblocks.set_skip(block, false);
                return true;
            }
        }
        false
    }

    /// The block page `pfn` belongs to: the one it heads, or the one its tail lies in.
    fn block_at(&self, pfn: u64) -> Option<PageInfo> {
        let info = self.shared().memmap().info(self.idx(pfn));
        if info.state != PageState::Tail {
            return Some(info);
        }
        self.shared().memmap().tail_block_info(self.start_pfn(), pfn, self.max_order())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferral_doubles_and_resets() {
        let mut c = ZoneCompaction::new(0, 1024, 9);
        assert!(!c.compaction_deferred(9), "nothing failed yet");
        c.defer_compaction(9);
        // shift 1: skip 1 attempt, then try.
        assert!(c.compaction_deferred(9));
        assert!(!c.compaction_deferred(9));
        for _ in 0..10 {
            c.defer_compaction(9);
        }
        assert_eq!(c.defer_shift, COMPACT_MAX_DEFER_SHIFT);
        let skipped = (0..100).take_while(|_| c.compaction_deferred(9)).count();
        assert_eq!(skipped, 63, "2^6 - 1 attempts skipped, the 64th runs");
        assert!(c.compaction_restarting(9));
        c.compaction_defer_reset(9, true);
        assert_eq!((c.defer_shift, c.considered, c.order_failed), (0, 0, 10));
        assert!(!c.compaction_deferred(9));
        c.defer_compaction(9);
        assert!(!c.compaction_deferred(3), "orders below the failed one are never deferred");
        assert!(c.compaction_deferred(9));
    }
}
