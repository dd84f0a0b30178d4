//! The HighAtomic reserve (`reserve_highatomic_pageblock`,
//! `unreserve_highatomic_pageblock`).
//!
//! High-order atomic requests cannot reclaim or compact, so after one succeeds the kernel
//! sets its pageblock aside (about 1% of the zone at most) for later ones. Others may not use
//! those free pages except as a last resort; when memory runs short the reserve is given back.

use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::zone::Zone;

impl Zone {
    /// `reserve_highatomic_pageblock()`: after an ALLOC_HIGHATOMIC allocation at `pfn`, turn
    /// its pageblock (or the blocks it spans) into the HighAtomic reserve, up to ~1% of the
    /// zone in whole pageblocks.
    pub(crate) fn reserve_highatomic_pageblock(&mut self, pfn: u64, order: u32) {
        let pb = self.pageblock_nr_pages();
        let managed = self.managed_pages();
        if managed / 100 < pb {
            return;
        }
        let max_managed = (managed / 100).div_ceil(pb) * pb;
        let c = &self.shared.counters;
        if c.nr_reserved_highatomic.get() >= max_managed {
            return;
        }
        let mt = self.pageblock_migratetype(pfn);
        if !mt.is_mergeable() {
            return;
        }
        if order < self.pageblock_order() {
            if self.move_freepages_block(pfn, mt, MigrateType::HighAtomic).is_none() {
                return;
            }
            self.shared.counters.nr_reserved_highatomic.add(pb);
        } else {
            self.set_pageblock_range(pfn, order, MigrateType::HighAtomic);
            self.shared.counters.nr_reserved_highatomic.add(1 << order);
        }
        self.count(VmEvent::HighAtomicReserve, 1);
    }

    /// `unreserve_highatomic_pageblock()`: give one reserved pageblock back to `mt`. Unless
    /// `force`, one pageblock stays reserved. Returns whether a block was released.
    pub(crate) fn unreserve_highatomic_pageblock(&mut self, mt: MigrateType, force: bool) -> bool {
        let pb = self.pageblock_nr_pages();
        let reserved = self.shared.counters.nr_reserved_highatomic.get();
        if !force && reserved <= pb {
            return false;
        }
        for order in 0..=self.max_order() {
            let Some(pfn) = self.free_list_first(order, MigrateType::HighAtomic) else {
                continue;
            };
            if order < self.pageblock_order() {
                // Reserved blocks never straddle the zone edge: reserving checked it.
                if self.move_freepages_block(pfn, MigrateType::HighAtomic, mt).is_none() {
                    continue;
                }
            } else {
                self.move_to_free_list(pfn, order, MigrateType::HighAtomic, mt);
                self.set_pageblock_range(pfn, order, mt);
            }
            let size = pb.max(1 << order);
            self.shared.counters.nr_reserved_highatomic.sub(size.min(reserved));
            self.count(VmEvent::HighAtomicUnreserve, 1);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::{Gfp, MigrateType, Node, NodeLocks, Policy, Sysctl, ZoneConfig};

    /// Regression (found by the property test): releasing a reserved whole free pageblock
    /// retypes it without re-merging, exactly as the kernel does, so it stays split from its
    /// free buddy; `verify` must accept that state.
    #[test]
    fn releasing_a_whole_free_reserved_block_leaves_it_unmerged() {
        let cfg = ZoneConfig { max_order: 4, pageblock_order: 2, ..ZoneConfig::normal(512 * 4096) };
        let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 64).unwrap();
        let n = Node::single_zone(cfg, policy).unwrap();
        let p = n.alloc_pages(0, 2, Gfp::HIGHUSER_MOVABLE).unwrap();
        n.drain_all_pages();
        n.lock_zone(0).reserve_highatomic_pageblock(p.0, 2);
        assert_eq!(n.zone(0).pageblock_migratetype(p.0), MigrateType::HighAtomic);
        n.free_pages(0, p, 2).unwrap();
        n.drain_all_pages();
        let z = n.zone(0);
        assert!(
            z.is_free_buddy(p.0, 2) && z.is_free_buddy(p.0 ^ 4, 2),
            "HighAtomic does not merge with Movable"
        );
        drop(z);
        n.verify().unwrap();
        assert!(n.lock_zone(0).unreserve_highatomic_pageblock(MigrateType::Movable, true));
        let z = n.zone(0);
        assert_eq!(z.pageblock_migratetype(p.0), MigrateType::Movable);
        assert!(z.is_free_buddy(p.0, 2) && z.is_free_buddy(p.0 ^ 4, 2), "retyped, not re-merged");
        assert_eq!(z.counters().nr_reserved_highatomic(), 0);
        drop(z);
        n.verify().unwrap();
    }
}
