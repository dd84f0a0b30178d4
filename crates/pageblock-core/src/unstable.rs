//! The `unstable-internals` feature: the simulator's zone operations outside the allocation
//! path, for the lab's trace replay (adopting allocations made before a trace began,
//! splitting and laying out zones) and its seed experiments (one `rmqueue_bulk` under one
//! zone lock), and for tests. **No stability, and they can corrupt a node**: each trusts its
//! caller to hold the zone lock and to name blocks the allocator handed out. Without the
//! feature, a zone reached through [`crate::NodeLocks::lock_zone`] cannot be changed from
//! outside this crate.

use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::types::Pfn;
use crate::zone::zone_state::{LayoutError, ZoneLayout};
use crate::zone::Zone;

/// A zone's internal operations (see the module documentation).
pub trait ZoneInternals {
    /// `rmqueue_bulk()`: up to `count` blocks of `order` for a per-CPU list, into `out`.
    fn rmqueue_bulk(
        &mut self,
        order: u32,
        count: usize,
        mt: MigrateType,
        flags: AllocFlags,
        out: &mut Vec<Pfn>,
    ) -> usize;
    /// A per-CPU block back to the buddy lists.
    fn free_pcp_page(&mut self, pfn: Pfn, order: u32);
    /// `free_pcppages_bulk()` for blocks already taken off their per-CPU lists.
    fn free_pcppages_bulk(&mut self, blocks: &[(Pfn, u32)]);
    /// `split_page()`: an allocated block becomes blocks of `new_order`.
    fn split_page(&mut self, pfn: u64, order: u32, new_order: u32) -> bool;
    /// The allocated blocks tiling `2^order` pages at `pfn` become one block.
    fn adopt_allocated(&mut self, pfn: u64, order: u32) -> bool;
    /// Lay the zone out as a snapshot describes it.
    fn set_layout(&mut self, layout: &ZoneLayout) -> Result<(), LayoutError>;
}

impl ZoneInternals for Zone {
    fn rmqueue_bulk(
        &mut self,
        order: u32,
        count: usize,
        mt: MigrateType,
        flags: AllocFlags,
        out: &mut Vec<Pfn>,
    ) -> usize {
        Zone::rmqueue_bulk(self, order, count, mt, flags, out)
    }

    fn free_pcp_page(&mut self, pfn: Pfn, order: u32) {
        Zone::free_pcp_page(self, pfn, order);
    }

    fn free_pcppages_bulk(&mut self, blocks: &[(Pfn, u32)]) {
        Zone::free_pcppages_bulk(self, blocks);
    }

    fn split_page(&mut self, pfn: u64, order: u32, new_order: u32) -> bool {
        Zone::split_page(self, pfn, order, new_order)
    }

    fn adopt_allocated(&mut self, pfn: u64, order: u32) -> bool {
        Zone::adopt_allocated(self, pfn, order)
    }

    fn set_layout(&mut self, layout: &ZoneLayout) -> Result<(), LayoutError> {
        Zone::set_layout(self, layout)
    }
}
