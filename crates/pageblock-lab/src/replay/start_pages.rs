//! The pages allocated before the trace began, and where the simulation's compaction moved
//! them.
//!
//! The starting state leaves every page the kernel had allocated allocated, each an order-0
//! block nobody in the replay knows. A traced free of such a page (the workload's, or in
//! closed loop the kernel's reclaim or migration) frees it. The kernel's compaction moves
//! such pages when they are movable — page cache, anonymous memory, and mlocked memory too
//! (`vm.compact_unevictable_allowed` is 1 by default): a memory hog of the recording is
//! material for compaction, not a wall. So in closed loop the simulation's compaction may
//! move the starting pages tagged Movable (those in Movable pageblocks at the start), and
//! this remembers where each went, so that a later free of its traced pfn frees the page
//! where it is now. Pages tagged otherwise (kernel memory, slab) stay pinned.

use pageblock_core::memmap::PageState;
use pageblock_core::{MigrateType, Node};
use rustc_hash::FxHashMap;

use super::start::BusyPages;

/// The starting state's allocated pages still allocated, by where they are now.
#[derive(Debug, Default)]
pub struct StartPages {
    /// Per zone, `[start, end)` pfns.
    zones: Vec<(u64, u64)>,
    /// Per zone: starting pages not freed yet, at their current pfn.
    held: Vec<BusyPages>,
    /// Per zone: of those, the ones compaction may move.
    movable: Vec<BusyPages>,
    /// Traced pfn → current pfn of a page compaction moved.
    now: FxHashMap<u64, u64>,
    /// Current pfn → traced pfn of a page compaction moved.
    traced_at: FxHashMap<u64, u64>,
}

impl StartPages {
    /// The pages `node` has allocated now (at the start of a replay).
    pub fn of(node: &Node) -> StartPages {
        let zones = node.shared().zones();
        let mut s = StartPages {
            zones: zones.iter().map(|z| (z.config().start_pfn, z.config().end_pfn())).collect(),
            held: zones.iter().map(|z| BusyPages::new(z.config())).collect(),
            movable: zones.iter().map(|z| BusyPages::new(z.config())).collect(),
            now: FxHashMap::default(),
            traced_at: FxHashMap::default(),
        };
        for (i, z) in zones.iter().enumerate() {
            let cfg = z.config();
            for e in z.memmap().extents(0, cfg.nr_pages() as u32) {
                if e.info.state == PageState::Allocated {
                    let pfn = cfg.start_pfn + u64::from(e.idx);
                    s.held[i].mark(pfn, e.pages);
                    if e.info.tag.migratetype == MigrateType::Movable {
                        s.movable[i].mark(pfn, e.pages);
                    }
                }
            }
        }
        s
    }

    fn zone(&self, pfn: u64) -> Option<usize> {
        self.zones.iter().position(|&(start, end)| (start..end).contains(&pfn))
    }

    /// Whether the simulated block at `pfn` of `order` is a starting page compaction may move.
    pub fn may_move(&self, pfn: u64, order: u32) -> bool {
        order == 0 && self.zone(pfn).is_some_and(|z| self.movable[z].is_busy(pfn))
    }

    /// Compaction moved the block at `from` to `to`: if it is a starting page, remember where
    /// it went. Returns whether it was one.
    pub fn moved(&mut self, from: u64, to: u64) -> bool {
        let (Some(zf), Some(zt)) = (self.zone(from), self.zone(to)) else { return false };
        if !self.held[zf].is_busy(from) {
            return false;
        }
        let movable = self.movable[zf].is_busy(from);
        self.held[zf].clear(from, 1);
        self.movable[zf].clear(from, 1);
        self.held[zt].mark(to, 1);
        if movable {
            self.movable[zt].mark(to, 1);
        }
        let traced = self.traced_at.remove(&from).unwrap_or(from);
        self.traced_at.insert(to, traced);
        self.now.insert(traced, to);
        true
    }

    /// Where the starting page of traced pfn `traced` is now, if it is still held.
    fn place(&self, traced: u64) -> Option<u64> {
        let now = match self.now.get(&traced) {
            Some(&now) => now,
            // Another page was moved here: this one is not (it was freed or moved away).
            None if self.traced_at.contains_key(&traced) => return None,
            None => traced,
        };
        let z = self.zone(now)?;
        self.held[z].is_busy(now).then_some(now)
    }

    /// Where the starting pages of traced pfns `traced .. traced + n` are now, if every one
    /// of them is still held.
    pub fn places(&self, traced: u64, n: u64) -> Option<Vec<u64>> {
        (traced..traced.checked_add(n)?).map(|p| self.place(p)).collect()
    }

    /// The starting page of traced pfn `traced`, now at `now`, was freed.
    pub fn freed(&mut self, traced: u64, now: u64) {
        if let Some(z) = self.zone(now) {
            self.held[z].clear(now, 1);
            self.movable[z].clear(now, 1);
        }
        self.now.remove(&traced);
        self.traced_at.remove(&now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::policy::Policy;
    use pageblock_core::{Gfp, ZoneConfig};

    fn node_with_pages() -> (Node, Vec<u64>) {
        let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(16 << 20) };
        let node = Node::single_zone(zone, Policy::default()).unwrap();
        let movable = (0..3).map(|_| node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap().0).collect();
        (node, movable)
    }

    #[test]
    fn a_moved_starting_page_is_found_where_it_went_and_a_page_moved_onto_a_pfn_hides_it() {
        let (node, pages) = node_with_pages();
        let kernel = node.alloc_pages(0, 0, Gfp::KERNEL).unwrap().0;
        let mut s = StartPages::of(&node);
        let [a, b, c] = pages[..] else { panic!() };
        assert!(s.may_move(a, 0) && !s.may_move(a, 1), "movable, as an order-0 block");
        assert!(!s.may_move(kernel, 0), "kernel memory stays pinned");
        let free = 0x800u64 + node.shared().zones()[0].config().start_pfn;
        assert!(s.moved(a, free));
        assert!(s.moved(free, free + 1), "moved twice");
        assert_eq!(s.places(a, 1), Some(vec![free + 1]));
        assert!(!s.moved(free, free + 2), "nothing starts at the old place any more");
        assert!(s.moved(b, a), "b moved onto a's old pfn");
        assert_eq!(s.places(a, 1), Some(vec![free + 1]), "a is still where it went");
        assert_eq!(s.places(b, 1), Some(vec![a]));
        assert_eq!(s.places(c, 1), Some(vec![c]), "never moved");
        s.freed(b, a);
        assert_eq!(s.places(b, 1), None, "freed");
        assert_eq!(s.places(a, 1), Some(vec![free + 1]));
    }
}
