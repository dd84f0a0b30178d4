//! Capture (`struct capture_control`, `compaction_capture`): while direct compaction runs for
//! a request, a block of the requested order that the same CPU frees into the zone goes
//! straight to the request instead of onto a free list, where another CPU could take it.

use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::zone::Zone;

/// A direct compaction's wish, published in the zone for the run's duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capture {
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
    /// `compaction_capture()`, called at every step of `__free_one_page`'s merge loop with
    /// the block being freed (`pfn`, `order`, on the `mt` list). True if the block was taken
    /// for the request: it is then allocated to it and not freed.
    #[inline]
    pub(crate) fn compaction_capture(&mut self, pfn: u64, order: u32, mt: MigrateType) -> bool {
        let Some(capc) = self.capture else {
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
        self.shared.memmap.set_info(self.idx(pfn), info);
        self.capture = Some(Capture { page: Some(pfn), ..capc });
        true
    }

    /// A block of `high` order captured for a request promoted from order `low`: the
    /// pageblocks become the request's type (`mt`), the request keeps the first 2^`low`
    /// pages and the rest is free on `mt`'s lists, as a whole-block claim would leave it.
    pub(crate) fn claim_captured_block(
        &mut self,
        pfn: u64,
        high: u32,
        low: u32,
        mt: MigrateType,
    ) -> crate::Pfn {
        let pb = self.pageblock_nr_pages();
        let mut block = pfn & !(pb - 1);
        while block < pfn + (1 << high) {
            self.set_pageblock_migratetype(block, mt);
            block += pb;
        }
        let added = self.expand(pfn, low, high, mt);
        self.account_freepages(added as i64, mt);
        let info = PageInfo { state: PageState::Allocated, order: low, tag: AllocTag::of(mt) };
        self.shared.memmap.set_info(self.idx(pfn), info);
        crate::Pfn(pfn)
    }
}
