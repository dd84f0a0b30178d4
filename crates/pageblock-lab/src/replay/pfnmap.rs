//! Which simulated block stands for which traced block.
//!
//! The simulator chooses its own pages, so a traced allocation of pfn `t` is remembered as
//! the simulated block `(s, order)` it got, and the trace's later free of `t` frees `s`. The
//! kernel also frees parts of allocations (`split_page`, folio splits: a THP freed as 512
//! order-0 pages): a free inside a remembered block finds it by its aligned head.

use rustc_hash::FxHashMap;

/// Traced head pfn → (simulated head pfn, order).
#[derive(Debug, Default)]
pub struct PfnMap {
    blocks: FxHashMap<u64, (u64, u8)>,
    max_order: u32,
}

/// A remembered block that contains a traced pfn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// The traced head pfn.
    pub traced: u64,
    /// The simulated head pfn.
    pub sim: u64,
    /// The block's order.
    pub order: u32,
}

impl PfnMap {
    /// An empty map for blocks up to `max_order`.
    pub fn new(max_order: u32) -> PfnMap {
        PfnMap { blocks: FxHashMap::default(), max_order }
    }

    /// Remember that traced block `traced` is simulated block `sim` of `order`; returns the
    /// block it replaces if the trace reused a head it never freed (a lost free event).
    pub fn insert(&mut self, traced: u64, sim: u64, order: u32) -> Option<(u64, u8)> {
        self.blocks.insert(traced, (sim, order as u8))
    }

    /// The remembered block containing traced pfn `pfn` (its head first, then the aligned
    /// heads of bigger blocks), taken out of the map.
    pub fn take_containing(&mut self, pfn: u64) -> Option<Mapped> {
        if let Some((sim, order)) = self.blocks.remove(&pfn) {
            return Some(Mapped { traced: pfn, sim, order: u32::from(order) });
        }
        for order in 1..=self.max_order {
            let head = pfn & !((1u64 << order) - 1);
            if let Some(&(sim, o)) = self.blocks.get(&head) {
                if u32::from(o) >= order {
                    self.blocks.remove(&head);
                    return Some(Mapped { traced: head, sim, order: u32::from(o) });
                }
            }
        }
        None
    }

    /// Blocks remembered.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True if nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_inside_a_block_finds_its_head() {
        let mut m = PfnMap::new(10);
        m.insert(0x1000, 0x5000, 9);
        m.insert(0x2000, 0x6000, 0);
        assert_eq!(m.take_containing(0x1003), Some(Mapped { traced: 0x1000, sim: 0x5000, order: 9 }));
        assert_eq!(m.take_containing(0x1003), None, "taken");
        assert_eq!(m.take_containing(0x2001), None, "an order-0 block contains only itself");
        assert_eq!(m.take_containing(0x2000).map(|b| b.sim), Some(0x6000));
        assert!(m.is_empty());
    }
}
