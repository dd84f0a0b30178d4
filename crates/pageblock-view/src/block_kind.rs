//! What a pageblock holds: its state ([`BlockKind`]) from a tally of its pages by class
//! ([`PageTally`]). The live inspector counts pages from `/proc/kpageflags`, the simulator
//! from its memmap; both maps draw the same states.

use serde::Serialize;

/// What a pageblock holds, as one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// Every page free.
    Free,
    /// One transparent huge page covers it.
    Thp,
    /// Movable and free pages only: compaction could empty it.
    Movable,
    /// Unmovable and free pages only.
    Unmovable,
    /// Movable and unmovable pages together.
    Mixed,
    /// hugetlbfs pages.
    Hugetlb,
    /// Memory the kernel does not manage: logically offline (`KPF_OFFLINE`) or not yet
    /// initialised (the flagless top of a zone beyond its managed pages).
    NotManaged,
    /// No memory in use and not wholly free: holes, or the part of a block outside the zone.
    Hole,
}

/// Page counts by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PageTally {
    /// Pages in free buddy blocks.
    pub free: u64,
    /// Movable pages.
    pub movable: u64,
    /// Slab pages.
    pub slab: u64,
    /// Page tables.
    pub page_table: u64,
    /// Reserved pages.
    pub reserved: u64,
    /// hugetlbfs pages.
    pub hugetlb: u64,
    /// Other kernel pages (no flag).
    pub kernel: u64,
    /// Holes.
    pub hole: u64,
    /// Pages the kernel does not manage (offline, or not initialised yet).
    pub not_managed: u64,
    /// Pages of transparent huge pages (also counted as movable).
    pub thp: u64,
}

impl PageTally {
    /// Pages compaction cannot move.
    pub fn unmovable(&self) -> u64 {
        self.slab + self.page_table + self.reserved + self.kernel
    }

    /// Add another tally.
    pub fn merge(&mut self, o: &PageTally) {
        self.free += o.free;
        self.movable += o.movable;
        self.slab += o.slab;
        self.page_table += o.page_table;
        self.reserved += o.reserved;
        self.hugetlb += o.hugetlb;
        self.kernel += o.kernel;
        self.hole += o.hole;
        self.not_managed += o.not_managed;
        self.thp += o.thp;
    }

    /// The block state of a pageblock of `pages` pages with this tally.
    pub fn kind(&self, pages: u64) -> BlockKind {
        let unmovable = self.unmovable();
        if self.hole == pages {
            BlockKind::Hole
        } else if self.hole + self.not_managed == pages {
            BlockKind::NotManaged
        } else if self.free == pages {
            BlockKind::Free
        } else if self.thp == pages {
            BlockKind::Thp
        } else if self.hugetlb > 0 {
            BlockKind::Hugetlb
        } else if self.movable > 0 && unmovable > 0 {
            BlockKind::Mixed
        } else if unmovable > 0 {
            BlockKind::Unmovable
        } else if self.movable > 0 {
            BlockKind::Movable
        } else {
            // Free pages and holes: memory, but never a whole free pageblock.
            BlockKind::Hole
        }
    }
}
