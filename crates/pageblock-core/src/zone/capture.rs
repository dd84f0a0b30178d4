//! Capture (`struct capture_control`, `compaction_capture`): while direct compaction runs for
//! a request, a block of the requested order that the same CPU frees into the zone goes
//! straight to the request instead of onto a free list, where another CPU could take it.
//!
//! The kernel keeps the wish in the compacting task (`current->capture_control`); here it is
//! published in the zone, one at a time: with real threads two direct compactions can run
//! in one zone, and only the first publishes a wish. Each wish carries an id so that a run
//! reads and takes only its own.

use crate::memmap::pagemap::PageMap;
use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::zone::Zone;

/// A direct compaction's wish, published in the zone for the run's duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capture {
    /// Which run published it (see [`Zone::publish_capture`]).
    pub id: u64,
    /// The compacting CPU (`current`): only its frees are captured.
    pub cpu: u32,
    /// The request's order.
    pub order: u32,
    /// The request's migratetype.
    pub migratetype: MigrateType,
    /// The captured block, handed to the request.
    pub page: Option<u64>,
}

impl Zone {
    /// Publish a run's wish for a block of `order` freed on `cpu`; returns its id, or `None`
    /// if another run's wish is published (this run then captures nothing).
    pub(crate) fn publish_capture(
        &mut self,
        cpu: usize,
        order: u32,
        migratetype: MigrateType,
    ) -> Option<u64> {
        if self.capture.is_some() {
            return None;
        }
        self.capture_seq += 1;
        let id = self.capture_seq;
        self.capture = Some(Capture { id, cpu: cpu as u32, order, migratetype, page: None });
        Some(id)
    }

    /// The block captured for run `id`, if it has one.
    pub(crate) fn captured_for(&self, id: Option<u64>) -> Option<u64> {
        self.capture.filter(|c| Some(c.id) == id).and_then(|c| c.page)
    }

    /// Withdraw run `id`'s wish; returns the block it captured, if any.
    pub(crate) fn take_capture(&mut self, id: Option<u64>) -> Option<u64> {
        let ours = self.capture.is_some_and(|c| Some(c.id) == id);
        if ours {
            self.capture.take().and_then(|c| c.page)
        } else {
            None
        }
    }

    /// Run `f` with the zone's capture wish copied out, and store what `f` left in it back:
    /// the merge loop reads the zone without borrowing it mutably (so that it can hold a
    /// [`crate::memmap::pagemap::PageMap`] view of the memmap for a whole batch), and a block
    /// captured during `f` is recorded in the wish.
    #[inline(always)]
    pub(crate) fn with_capture<R>(&mut self, f: impl FnOnce(&Zone, &mut Option<Capture>) -> R) -> R {
        let mut capture = self.capture;
        let r = f(self, &mut capture);
        self.capture = capture;
        r
    }

    /// `compaction_capture()`, called at every step of `__free_one_page`'s merge loop with
    /// the block being freed (`pfn`, `order`, on the `mt` list) and the zone's wish
    /// (`capture`, copied out by the merge loop's caller, which stores it back). True if the
    /// block was taken for the request: it is then allocated to it and not freed.
    #[inline]
    pub(crate) fn compaction_capture<M: PageMap>(
        &self,
        mm: M,
        capture: &mut Option<Capture>,
        pfn: u64,
        order: u32,
        mt: MigrateType,
    ) -> bool {
        let Some(capc) = *capture else {
            return false;
        };
        if capc.page.is_some() || capc.cpu != self.cpu() || order != capc.order {
            return false;
        }
        if matches!(mt, MigrateType::Cma | MigrateType::Isolate) {
            return false;
        }
        // Do not hand a non-movable request a movable block smaller than a pageblock: it
        // would pollute the block (6.15+).
        if order < self.pageblock_order()
            && mt == MigrateType::Movable
            && capc.migratetype != MigrateType::Movable
        {
            return false;
        }
        if mt != capc.migratetype {
            self.trace_extfrag(pfn, order, order, capc.migratetype, mt);
        }
        let info = PageInfo { state: PageState::Allocated, order, tag: AllocTag::of(capc.migratetype) };
        mm.set_info(self.idx(pfn), info);
        *capture = Some(Capture { page: Some(pfn), ..capc });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{MigrateFail, MigrateMode, Mover};
    use crate::{Gfp, Node, NodeLocks, Pfn, Policy, Sysctl, ZoneConfig, ZoneType};

    /// Regression: with one wish slot per zone, a second direct compaction in the same zone
    /// (another thread) overwrote the first's wish, and the first then took the second's
    /// captured block — of the wrong order.
    #[test]
    fn a_second_run_publishes_nothing_and_takes_only_its_own_capture() {
        let node =
            Node::single_zone(ZoneConfig::new(ZoneType::Normal, 0, 1 << 14), Policy::default()).unwrap();
        let mut z = node.lock_zone(0);
        let first = z.publish_capture(0, 3, MigrateType::Movable);
        assert!(first.is_some());
        assert_eq!(z.publish_capture(1, 5, MigrateType::Unmovable), None, "one wish at a time");
        z.capture.as_mut().unwrap().page = Some(64);
        assert_eq!(z.captured_for(None), None, "a run without a wish sees no capture");
        assert_eq!(z.take_capture(None), None);
        assert_eq!(z.captured_for(first), Some(64), "and does not withdraw another's");
        assert_eq!(z.take_capture(first), Some(64));
        assert!(z.capture.is_none());
    }

    /// Moves anything (nothing here needs to know where the pages went).
    struct Anywhere;

    impl Mover for Anywhere {
        fn migrate(&self, _from: Pfn, _to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
            Ok(())
        }
    }

    /// Regression (found by the atomic-safety property test). Under `defrag_mode` with the
    /// pageblock-compaction fix, a reclaimable request compacts for a whole pageblock. The
    /// first pageblock compaction empties is a HighAtomic reserve holding only movable
    /// pages. Claiming a captured whole block used to retype it, leaving
    /// `nr_reserved_highatomic` counting a reserve that no longer existed (verify failed).
    /// Capture now takes a block of the request's own order and retypes nothing.
    #[test]
    fn a_block_captured_from_the_highatomic_reserve_stays_reserved() {
        let zone =
            ZoneConfig { max_order: 6, pageblock_order: 4, nr_cpus: 1, ..ZoneConfig::normal(2048 * 4096) };
        let defrag_mode_2026 = crate::named_policy::policy_named("defrag_mode_2026").unwrap().policy;
        let policy = defrag_mode_2026.with_sysctl(Sysctl::MinFreeKbytes, 64).unwrap();
        let mut node = Node::single_zone(zone, policy).unwrap();
        node.set_mover(Box::new(Anywhere));
        // Movable pages everywhere.
        let nowait_movable = Gfp(Gfp::HIGHUSER_MOVABLE.0 & !Gfp::DIRECT_RECLAIM.0);
        let mut pages = node.fill(nowait_movable);
        // The lowest pageblock, where compaction's migrate scanner starts, becomes the
        // HighAtomic reserve, still full of movable pages.
        let first = node.zone(0).start_pfn();
        node.lock_zone(0).reserve_highatomic_pageblock(first, 0);
        assert_eq!(node.zone(0).pageblock_migratetype(first), MigrateType::HighAtomic);
        // Free memory for compaction to move pages into, scattered over the upper half so
        // that no pageblock is wholly free.
        pages.sort();
        let upper = pages.split_off(pages.len() / 2);
        for pfn in upper.iter().step_by(2) {
            node.free_pages(0, *pfn, 0).unwrap();
        }
        node.drain_all_pages();
        // Whole free pageblocks the fill left are taken.
        let whole_free = |n: &Node| n.zone(0).counters().zone_stat(crate::ZoneStat::NrFreePagesBlocks);
        while whole_free(&node) > 0 {
            node.alloc_pages(0, 4, nowait_movable).expect("a whole free pageblock");
        }
        node.verify().unwrap();
        let reclaimable = Gfp::KERNEL | Gfp::RECLAIMABLE;
        node.alloc_pages(0, 0, reclaimable).expect("compaction makes a pageblock");
        assert!(node.shared().event(crate::VmEvent::CompactSuccess) > 0, "served through compaction");
        node.verify().unwrap();
        let z = node.zone(0);
        assert_eq!(z.pageblock_migratetype(first), MigrateType::HighAtomic, "still reserved");
        assert_eq!(z.counters().nr_reserved_highatomic(), 16);
    }
}
