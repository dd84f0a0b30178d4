//! Per-pageblock flag bits (`include/linux/pageblock-flags.h`, 6.17+ layout).
//!
//! Every pageblock (2^`pageblock_order` pages, 2 MiB by default) carries its migratetype and
//! two single-bit flags:
//!
//! | bits | kernel name | meaning |
//! |---|---|---|
//! | 0..=2 | `PB_migrate_0..2` | the block's migratetype (never Isolate) |
//! | 3 | `PB_compact_skip` | compaction skip hint |
//! | 4 | `PB_migrate_isolate` | block isolated; bits 0..=2 keep the underlying type |
//!
//! Reads are lock-free (the kernel reads these bits without the zone lock, e.g. to pick the
//! per-CPU list of a freed page); writes happen under the zone lock. One byte per block.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use crate::migratetype::MigrateType;

const MIGRATETYPE_MASK: u8 = 0x7;
const PB_COMPACT_SKIP: u8 = 1 << 3;
const PB_MIGRATE_ISOLATE: u8 = 1 << 4;

/// The flag bytes of all pageblocks of a zone, indexed by zone-relative block number
/// (`(pfn - zone_start_pfn) >> pageblock_order`).
#[derive(Debug)]
pub struct Pageblocks {
    flags: Box<[AtomicU8]>,
}

impl Pageblocks {
    /// `nr_blocks` blocks, all of type `mt`.
    pub fn new(nr_blocks: usize, mt: MigrateType) -> Pageblocks {
        assert!(mt != MigrateType::Isolate, "isolation is a flag, not a type");
        let flags = (0..nr_blocks).map(|_| AtomicU8::new(mt as u8)).collect();
        Pageblocks { flags }
    }

    /// Number of blocks.
    #[inline]
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    /// True if there are no blocks.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// `get_pfnblock_migratetype()`: Isolate if the isolate bit is set, else the stored type.
    #[inline]
    pub fn migratetype(&self, block: usize) -> MigrateType {
        let v = self.flags[block].load(Relaxed);
        if v & PB_MIGRATE_ISOLATE != 0 {
            return MigrateType::Isolate;
        }
        Self::stored_type(v)
    }

    /// The type kept in bits 0..=2, ignoring isolation (what the block returns to when
    /// it is un-isolated).
    #[inline]
    pub fn underlying_migratetype(&self, block: usize) -> MigrateType {
        Self::stored_type(self.flags[block].load(Relaxed))
    }

    fn stored_type(v: u8) -> MigrateType {
        match MigrateType::from_index((v & MIGRATETYPE_MASK) as usize) {
            Some(mt) => mt,
            None => unreachable!("pageblock type bits {v:#x} out of range"),
        }
    }

    /// `set_pageblock_migratetype()`: write the type and clear the isolate bit. Isolation is
    /// set with [`Pageblocks::set_isolate`], never through here.
    #[inline]
    pub fn set_migratetype(&self, block: usize, mt: MigrateType) {
        assert!(mt != MigrateType::Isolate, "block {block}: use set_isolate to isolate");
        let old = self.flags[block].load(Relaxed);
        let new = (old & !(MIGRATETYPE_MASK | PB_MIGRATE_ISOLATE)) | mt as u8;
        self.flags[block].store(new, Relaxed);
    }

    /// Set or clear the isolate bit, keeping the underlying type.
    pub fn set_isolate(&self, block: usize, isolate: bool) {
        self.update(block, PB_MIGRATE_ISOLATE, isolate);
    }

    /// The compaction skip hint (`PB_compact_skip`).
    pub fn skip(&self, block: usize) -> bool {
        self.flags[block].load(Relaxed) & PB_COMPACT_SKIP != 0
    }

    /// Set or clear the compaction skip hint.
    pub fn set_skip(&self, block: usize, skip: bool) {
        self.update(block, PB_COMPACT_SKIP, skip);
    }

    fn update(&self, block: usize, bit: u8, on: bool) {
        let old = self.flags[block].load(Relaxed);
        let new = if on { old | bit } else { old & !bit };
        self.flags[block].store(new, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_preserves_the_underlying_type() {
        let pb = Pageblocks::new(4, MigrateType::Movable);
        pb.set_migratetype(1, MigrateType::Unmovable);
        pb.set_isolate(1, true);
        pb.set_skip(1, true);
        assert_eq!(pb.migratetype(1), MigrateType::Isolate);
        assert_eq!(pb.underlying_migratetype(1), MigrateType::Unmovable);
        assert!(pb.skip(1));
        pb.set_isolate(1, false);
        assert_eq!(pb.migratetype(1), MigrateType::Unmovable);
        assert!(pb.skip(1), "skip bit survives");
        pb.set_isolate(2, true);
        pb.set_migratetype(2, MigrateType::Reclaimable);
        assert_eq!(pb.migratetype(2), MigrateType::Reclaimable, "setting a type un-isolates");
        assert_eq!(pb.migratetype(0), MigrateType::Movable);
    }
}
