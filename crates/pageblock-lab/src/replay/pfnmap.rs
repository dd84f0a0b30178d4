//! Which simulated block stands for which traced block.
//!
//! The simulator chooses its own pages, so a traced allocation of pfn `t` is remembered as
//! the simulated block `(s, order)` it got, and the trace's later free of `t` frees `s`. The
//! kernel also frees parts of allocations (`split_page`, folio splits: a THP freed as 512
//! order-0 pages): a free inside a remembered block finds it by its aligned head.

use pageblock_core::pfn_table::PfnTable;

/// Traced head pfn → simulated head pfn and order, packed as `sim << 8 | (order + 1)` (0: no
/// block; `RECLAIMED`: no block, the simulation's reclaim took the one that was here;
/// simulated pfns are far below 2^56, the machine must fit in this host's memory).
///
/// Keeping the reclaimed mark in the same slot as the block makes the mark cost nothing on
/// the allocation path: `insert` overwrites it in the one memory access it makes anyway.
#[derive(Debug, Default)]
pub struct PfnMap {
    blocks: PfnTable<u64>,
    len: usize,
    max_order: u32,
}

fn pack(sim: u64, order: u32) -> u64 {
    debug_assert!(sim < 1 << 56 && order < 255);
    sim << 8 | u64::from(order + 1)
}

/// A slot whose block the simulation's reclaim took (a low byte of 0 is never a packed
/// block's).
const RECLAIMED: u64 = 1 << 8;

fn unpack(v: u64) -> Option<(u64, u8)> {
    (v & 0xff != 0).then(|| (v >> 8, (v & 0xff) as u8 - 1))
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
        PfnMap { blocks: PfnTable::default(), len: 0, max_order }
    }

    /// Remember that traced block `traced` is simulated block `sim` of `order` (clearing a
    /// reclaimed mark there); returns the block it replaces if the trace reused a head it
    /// never freed (a lost free event).
    pub fn insert(&mut self, traced: u64, sim: u64, order: u32) -> Option<(u64, u8)> {
        let old = unpack(std::mem::replace(self.blocks.entry(traced), pack(sim, order)));
        self.len += usize::from(old.is_none());
        old
    }

    /// The remembered block containing traced pfn `pfn` (its head first, then the aligned
    /// heads of bigger blocks), taken out of the map.
    pub fn take_containing(&mut self, pfn: u64) -> Option<Mapped> {
        let (head, sim, order) = (0..=self.max_order).find_map(|order| {
            let head = pfn & !((1u64 << order) - 1);
            let (sim, o) = unpack(self.blocks.get(head))?;
            (u32::from(o) >= order).then_some((head, sim, u32::from(o)))
        })?;
        *self.blocks.entry(head) = 0;
        self.len -= 1;
        Some(Mapped { traced: head, sim, order })
    }

    /// Compaction split traced block `traced` (simulated at `sim`, of `order`) into base
    /// pages (`split_folio_to_list`): remember each page on its own, if the block is still
    /// remembered there. Returns whether it was.
    pub fn split(&mut self, traced: u64, sim: u64, order: u32) -> bool {
        if self.blocks.get(traced) != pack(sim, order) {
            return false;
        }
        *self.blocks.entry(traced) = pack(sim, 0);
        for i in 1..1u64 << order {
            self.insert(traced + i, sim + i, 0);
        }
        true
    }

    /// Traced block `traced` (a head) moved in the simulation from `from` to `to`: remember
    /// it there if it is still remembered at `from`; a block the trace allocated at the same
    /// head since (after a lost free) is left alone. Returns whether it moved.
    pub fn moved(&mut self, traced: u64, from: u64, to: u64) -> bool {
        match unpack(self.blocks.get(traced)) {
            Some((sim, order)) if sim == from => {
                *self.blocks.entry(traced) = pack(to, u32::from(order));
                true
            }
            _ => false,
        }
    }

    /// The simulation's reclaim took traced block `traced` (a head): forget it, marking the
    /// head reclaimed, if it is still simulated at `sim` (see [`PfnMap::moved`]). Returns
    /// whether it was.
    pub fn reclaimed_at(&mut self, traced: u64, sim: u64) -> bool {
        if !matches!(unpack(self.blocks.get(traced)), Some((s, _)) if s == sim) {
            return false;
        }
        *self.blocks.entry(traced) = RECLAIMED;
        self.len -= 1;
        true
    }

    /// Whether `traced` is a head whose block the simulation's reclaim took (and the trace
    /// has not allocated there since); clears the mark.
    pub fn take_reclaimed(&mut self, traced: u64) -> bool {
        if self.blocks.get(traced) != RECLAIMED {
            return false;
        }
        *self.blocks.entry(traced) = 0;
        true
    }

    /// Blocks remembered.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// A block compaction split is remembered page by page, each movable and freed alone.
    #[test]
    fn a_split_block_is_remembered_page_by_page() {
        let mut m = PfnMap::new(10);
        m.insert(0x1000, 0x5000, 2);
        assert!(!m.split(0x1000, 0x6000, 2), "not where the report says");
        assert!(m.split(0x1000, 0x5000, 2));
        assert!(!m.split(0x1000, 0x5000, 2), "split already");
        assert!(m.moved(0x1002, 0x5002, 0x9000));
        assert_eq!(m.take_containing(0x1002), Some(Mapped { traced: 0x1002, sim: 0x9000, order: 0 }));
        assert_eq!(m.take_containing(0x1003), Some(Mapped { traced: 0x1003, sim: 0x5003, order: 0 }));
        assert_eq!(m.len, 2);
    }

    /// Regression: the engine applied a reclaim or move report to whatever the traced head
    /// named when it read the report, so a report about a block the trace had since
    /// allocated again at the same head (its free lost) forgot or moved the newer block.
    #[test]
    fn a_stale_report_leaves_a_newer_block_alone() {
        let mut m = PfnMap::new(10);
        m.insert(0x1000, 0x5000, 0);
        m.insert(0x1000, 0x6000, 0); // allocated again: the free of 0x5000 was lost
        assert!(!m.moved(0x1000, 0x5000, 0x7000), "the old block moved, not this one");
        assert!(!m.reclaimed_at(0x1000, 0x5000), "the old block was reclaimed, not this one");
        assert_eq!(m.take_containing(0x1000).map(|b| b.sim), Some(0x6000));
        m.insert(0x2000, 0x8000, 2);
        assert!(m.moved(0x2000, 0x8000, 0x9000));
        assert!(m.moved(0x2000, 0x9000, 0xa000), "moved twice between two reads");
        assert!(m.reclaimed_at(0x2000, 0xa000));
        assert!(m.is_empty());
    }

    #[test]
    fn a_reclaimed_head_is_marked_until_freed_or_allocated_again() {
        let mut m = PfnMap::new(10);
        m.insert(0x1000, 0x5000, 0);
        m.insert(0x3000, 0x7000, 0);
        m.insert(0x4000, 0x8000, 3);
        assert!(m.reclaimed_at(0x1000, 0x5000));
        assert!(m.reclaimed_at(0x3000, 0x7000));
        assert!(m.reclaimed_at(0x4000, 0x8000));
        assert!(m.is_empty(), "a mark is no block");
        assert_eq!(m.take_containing(0x1000), None, "a mark is not freed as a block");
        assert!(!m.take_reclaimed(0x1001), "only the head is marked");
        assert!(m.take_reclaimed(0x1000));
        assert!(!m.take_reclaimed(0x1000), "the mark is taken once");
        assert_eq!(m.insert(0x3000, 0x9000, 0), None, "a mark is not a lost free");
        assert!(!m.take_reclaimed(0x3000), "allocating again clears the mark");
        assert_eq!(m.len(), 1);
        assert!(!m.take_reclaimed(0x4001), "a piece of a reclaimed block is not its head");
        assert!(m.take_reclaimed(0x4000));
    }
}
