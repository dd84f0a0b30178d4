//! A zone's part of allocation, done under its lock: one block for a request
//! (`rmqueue_buddy`), a batch for a per-CPU list (`rmqueue_bulk`), and `prep_new_page`.
//!
//! The request's journey before it gets here — GFP decoding, the zonelist walk, watermarks,
//! per-CPU lists, the slow path — is [`crate::page_alloc`] and [`crate::slowpath`].

use std::fmt;

use crate::gfp::{AllocFlags, Gfp};
use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::types::Pfn;
use crate::zone::fallback::RmqueueMode;
use crate::zone::Zone;

/// Why an allocation returned no page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The order exceeds the machine's `MAX_PAGE_ORDER`.
    OrderTooLarge {
        /// Requested order.
        order: u32,
        /// The machine's max order.
        max_order: u32,
    },
    /// The GFP mask asks for two migratetypes, or two zones, at once.
    InvalidGfp(Gfp),
    /// A movable allocation (a handle compaction may move) asked with a mask that is not
    /// movable: it lacks `__GFP_MOVABLE`.
    NotMovable(Gfp),
    /// No block of this order could be found (an operating condition, not a bug).
    NoMemory {
        /// Requested order.
        order: u32,
    },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::OrderTooLarge { order, max_order } => {
                write!(f, "order {order} exceeds MAX_PAGE_ORDER {max_order}")
            }
            AllocError::InvalidGfp(g) if g.contains(Gfp::MOVABLE) && g.contains(Gfp::RECLAIMABLE) => {
                write!(f, "gfp {g} ({:#x}) sets both __GFP_MOVABLE and __GFP_RECLAIMABLE", g.0)
            }
            AllocError::InvalidGfp(g) => {
                write!(f, "gfp {g} ({:#x}) sets more than one of __GFP_DMA, __GFP_HIGHMEM, __GFP_DMA32", g.0)
            }
            AllocError::NotMovable(g) => write!(
                f,
                "gfp {g} ({:#x}) is not movable: a movable allocation needs __GFP_MOVABLE \
                 (e.g. GFP_HIGHUSER_MOVABLE)",
                g.0
            ),
            AllocError::NoMemory { order } => write!(f, "no free block of order {order}"),
        }
    }
}

impl std::error::Error for AllocError {}

impl Zone {
    /// `prep_new_page()`: the block now belongs to its caller.
    fn prep_new_page(&self, pfn: u64, order: u32, mt: MigrateType) {
        let info = PageInfo { state: PageState::Allocated, order, tag: AllocTag::of(mt) };
        self.shared.memmap.set_info(self.idx(pfn), info);
    }

    /// `rmqueue_buddy()`: one block for a `mt` request straight from the buddy lists, handed
    /// to the caller. HighAtomic requests look in the reserve first; non-blocking requests
    /// may raid it last.
    pub(crate) fn rmqueue_buddy(&mut self, order: u32, mt: MigrateType, flags: AllocFlags) -> Option<Pfn> {
        let mut pfn = None;
        if flags.contains(AllocFlags::HIGHATOMIC) {
            pfn = self.rmqueue_highatomic(order);
        }
        if pfn.is_none() {
            let mut mode = RmqueueMode::Normal;
            pfn = self.__rmqueue(order, mt, flags, &mut mode);
            if pfn.is_none() && flags.intersects(AllocFlags::OOM | AllocFlags::NON_BLOCK) {
                pfn = self.rmqueue_highatomic(order);
            }
        }
        let pfn = pfn?;
        self.count(VmEvent::PgAlloc, 1 << order);
        self.count(VmEvent::NumaHit, 1);
        self.prep_new_page(pfn, order, mt);
        Some(Pfn(pfn))
    }

    /// `split_page()` (and folio splitting): the allocated block of `order` at `pfn` becomes
    /// `2^(order - new_order)` allocated blocks of `new_order`, owned like the original, so
    /// that they can be freed one by one. Returns false, changing nothing, unless `pfn`
    /// heads an allocated block of exactly `order` and `new_order <= order`.
    pub(crate) fn split_page(&mut self, pfn: u64, order: u32, new_order: u32) -> bool {
        if new_order > order || !self.contains(pfn) {
            return false;
        }
        let mm = &self.shared.memmap;
        let head = mm.info(self.idx(pfn));
        if head.state != PageState::Allocated || head.order != order {
            return false;
        }
        let step = 1u64 << new_order;
        for piece in (pfn..pfn + (1 << order)).step_by(step as usize) {
            mm.set_info(self.idx(piece), PageInfo { order: new_order, ..head });
        }
        true
    }

    fn rmqueue_highatomic(&mut self, order: u32) -> Option<u64> {
        let pfn = self.__rmqueue_smallest(order, MigrateType::HighAtomic)?;
        self.count(VmEvent::PgAllocHighAtomic, 1 << order);
        Some(pfn)
    }

    /// `rmqueue_bulk()`: up to `count` blocks of `order` for a per-CPU list, under one zone
    /// lock hold, appended to `out` in the order found. The blocks are marked as per-CPU
    /// pages. With `SeedPatches::rmqueue_mode_memory` (seed 003) the fallback stage that last
    /// succeeded is where the next block's search starts. Returns the number obtained; it
    /// stops at the first failure.
    pub(crate) fn rmqueue_bulk(
        &mut self,
        order: u32,
        count: usize,
        mt: MigrateType,
        flags: AllocFlags,
        out: &mut Vec<Pfn>,
    ) -> usize {
        let mut mode = RmqueueMode::Normal;
        let mut got = 0;
        while got < count {
            if !self.policy.seed_patches.rmqueue_mode_memory {
                mode = RmqueueMode::Normal;
            }
            let Some(pfn) = self.__rmqueue(order, mt, flags, &mut mode) else {
                break;
            };
            self.shared.memmap.set_head(self.idx(pfn), PageState::Pcp, order);
            out.push(Pfn(pfn));
            got += 1;
        }
        got
    }
}
