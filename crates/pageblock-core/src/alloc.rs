//! The allocation entry point (`__alloc_pages`): the fast path (`get_page_from_freelist` →
//! `rmqueue_buddy`), the slow path as an explicit list of steps, and the bulk refill used by
//! per-CPU lists (`rmqueue_bulk`).
//!
//! Slow path, in the kernel's order (`__alloc_pages_slowpath`, 6.15–6.18 shape):
//!
//! 1. retry at the min watermark with the request's reserve rights (`gfp_to_alloc_flags`);
//! 2. `__GFP_MEMALLOC` callers retry ignoring watermarks;
//! 3. callers that cannot reclaim stop here;
//! 4. direct reclaim and direct compaction — **not modelled yet** (there is no reclaimable
//!    memory or migration model in the core); this step is skipped;
//! 5. before giving up, `should_reclaim_retry` releases a HighAtomic reserve block (forced)
//!    and retries once;
//! 6. under `defrag_mode`, drop ALLOC_NOFRAGMENT and retry: only now may a request fragment
//!    a foreign pageblock;
//! 7. fail (no OOM killer: the caller gets the error).

use std::fmt;

use crate::gfp::{self, AllocFlags, Gfp, NoFragmentRule};
use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::stats::VmEvent;
use crate::trace::TraceEvent;
use crate::types::Pfn;
use crate::zone::Zone;

/// Why an allocation returned no page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The order exceeds the zone's `MAX_PAGE_ORDER`.
    OrderTooLarge {
        /// Requested order.
        order: u32,
        /// The zone's max order.
        max_order: u32,
    },
    /// The GFP mask asks for two migratetypes at once.
    InvalidGfp(Gfp),
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
            AllocError::InvalidGfp(g) => {
                write!(f, "gfp {:#x} sets both __GFP_MOVABLE and __GFP_RECLAIMABLE", g.0)
            }
            AllocError::NoMemory { order } => write!(f, "no free block of order {order}"),
        }
    }
}

impl std::error::Error for AllocError {}

impl Zone {
    /// Allocate a block of 2^`order` pages for a request with GFP mask `gfp`.
    pub fn alloc_pages(&mut self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        if order > self.max_order() {
            return Err(AllocError::OrderTooLarge { order, max_order: self.max_order() });
        }
        let mt =
            gfp::gfp_migratetype(gfp, self.group_by_mobility).map_err(|e| AllocError::InvalidGfp(e.0))?;
        let fast = gfp::alloc_flags_fast(gfp, mt, self.nofragment_rule());
        let found = match self.get_page_from_freelist(order, mt, fast) {
            Some(pfn) => Some(pfn),
            None => self.alloc_slowpath(order, gfp, mt),
        };
        self.emit(|| TraceEvent::PageAlloc { pfn: found, order, migratetype: mt, gfp });
        match found {
            Some(pfn) => {
                self.prep_new_page(pfn, order, mt);
                Ok(Pfn(pfn))
            }
            None => {
                self.count(VmEvent::PgAllocFail, 1);
                Err(AllocError::NoMemory { order })
            }
        }
    }

    /// Which ALLOC_NOFRAGMENT rule applies in this zone.
    pub(crate) fn nofragment_rule(&self) -> NoFragmentRule {
        NoFragmentRule {
            configured: self.policy.nofragment,
            zone_is_normal: self.zone_type() == crate::config::ZoneType::Normal,
            defrag_mode: self.policy.defrag_mode,
        }
    }

    /// `prep_new_page()`: the block now belongs to its caller.
    fn prep_new_page(&self, pfn: u64, order: u32, mt: MigrateType) {
        let info = PageInfo { state: PageState::Allocated, order, tag: AllocTag::of(mt) };
        self.shared.memmap.set_info(self.idx(pfn), info);
    }

    /// `get_page_from_freelist()` for this zone: watermark check, then `rmqueue`. A request
    /// that failed with ALLOC_NOFRAGMENT is retried without it (fragmenting is preferred over
    /// failing), except under `defrag_mode`, which keeps the flag until the slow path's end.
    pub(crate) fn get_page_from_freelist(
        &mut self,
        order: u32,
        mt: MigrateType,
        mut flags: AllocFlags,
    ) -> Option<u64> {
        loop {
            if !self.shared.watermark_allows(order, flags) {
                self.count(VmEvent::WatermarkFail, 1);
            } else if let Some(pfn) = self.rmqueue_buddy(order, mt, flags) {
                if flags.contains(AllocFlags::HIGHATOMIC) {
                    self.reserve_highatomic_pageblock(pfn, order);
                }
                return Some(pfn);
            }
            if flags.contains(AllocFlags::NOFRAGMENT) && !self.policy.defrag_mode {
                flags = flags & !AllocFlags::NOFRAGMENT;
                self.count(VmEvent::NoFragmentRelaxed, 1);
                continue;
            }
            return None;
        }
    }

    /// `rmqueue_buddy()`: one block from the buddy lists under the zone lock. HighAtomic
    /// requests look in the reserve first; non-blocking requests may raid it last.
    fn rmqueue_buddy(&mut self, order: u32, mt: MigrateType, flags: AllocFlags) -> Option<u64> {
        let mut pfn = None;
        if flags.contains(AllocFlags::HIGHATOMIC) {
            pfn = self.rmqueue_highatomic(order);
        }
        if pfn.is_none() {
            let mut mode = crate::fallback::RmqueueMode::Normal;
            pfn = self.rmqueue(order, mt, flags, &mut mode);
            if pfn.is_none() && flags.intersects(AllocFlags::OOM | AllocFlags::NON_BLOCK) {
                pfn = self.rmqueue_highatomic(order);
            }
        }
        if pfn.is_some() {
            self.count(VmEvent::PgAlloc, 1 << order);
        }
        pfn
    }

    fn rmqueue_highatomic(&mut self, order: u32) -> Option<u64> {
        let pfn = self.rmqueue_smallest(order, MigrateType::HighAtomic)?;
        self.count(VmEvent::PgAllocHighAtomic, 1 << order);
        Some(pfn)
    }

    /// The slow path (see the module docs for the steps).
    #[cold]
    fn alloc_slowpath(&mut self, order: u32, gfp: Gfp, mt: MigrateType) -> Option<u64> {
        let mut flags = gfp::gfp_to_alloc_flags(gfp, order, mt, self.nofragment_rule());
        if let Some(pfn) = self.get_page_from_freelist(order, mt, flags) {
            return Some(pfn);
        }
        if gfp.contains(Gfp::MEMALLOC) && !gfp.contains(Gfp::NOMEMALLOC) {
            let reserve = AllocFlags::NO_WATERMARKS | (flags & (AllocFlags::CMA | AllocFlags::KSWAPD));
            if let Some(pfn) = self.get_page_from_freelist(order, mt, reserve) {
                return Some(pfn);
            }
        }
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            return None;
        }
        if self.unreserve_highatomic_pageblock(mt, true) {
            if let Some(pfn) = self.get_page_from_freelist(order, mt, flags) {
                return Some(pfn);
            }
        }
        if self.policy.defrag_mode && flags.contains(AllocFlags::NOFRAGMENT) {
            flags = flags & !AllocFlags::NOFRAGMENT;
            self.count(VmEvent::NoFragmentRelaxed, 1);
            return self.get_page_from_freelist(order, mt, flags);
        }
        None
    }

    /// `rmqueue_bulk()`: up to `count` blocks of `order` for a per-CPU list, under one zone
    /// lock hold, appended to `out` in the order found. The blocks are marked as per-CPU
    /// pages. With `Policy::rmqueue_mode_memory` (seed 003) the fallback stage that last
    /// succeeded is where the next block's search starts. Returns the number obtained; it
    /// stops at the first failure.
    pub fn rmqueue_bulk(
        &mut self,
        order: u32,
        count: usize,
        mt: MigrateType,
        flags: AllocFlags,
        out: &mut Vec<Pfn>,
    ) -> usize {
        let mut mode = crate::fallback::RmqueueMode::Normal;
        let mut got = 0;
        while got < count {
            if !self.policy.rmqueue_mode_memory {
                mode = crate::fallback::RmqueueMode::Normal;
            }
            let Some(pfn) = self.rmqueue(order, mt, flags, &mut mode) else {
                break;
            };
            self.shared.memmap.set_head(self.idx(pfn), PageState::Pcp, order);
            out.push(Pfn(pfn));
            got += 1;
        }
        got
    }
}
