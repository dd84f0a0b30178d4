//! Taking a free block off the buddy lists for compaction's free scanner
//! (`__isolate_free_page`): the zone's side of isolation, under its lock.

use crate::gfp::AllocFlags;
use crate::memmap::PageState;
use crate::migratetype::MigrateType;
use crate::zone::watermark::WatermarkRequest;
use crate::zone::Zone;

impl Zone {
    /// `__isolate_free_page()`: take the free block at `pfn` off its list for compaction,
    /// unless that would drop the zone below its (un-boosted) min watermark. A block of
    /// nearly a pageblock or more turns its pageblocks Movable: they will hold migrated
    /// movable pages.
    pub(crate) fn isolate_free_page(&mut self, pfn: u64, order: u32) -> bool {
        let mt = self.pageblock_migratetype(pfn);
        if mt != MigrateType::Isolate {
            let c = self.counters();
            let mark = c.watermarks().min + (1 << order);
            let req = WatermarkRequest {
                order: 0,
                flags: AllocFlags::CMA,
                highest_zoneidx: crate::config::ZoneType::Dma,
            };
            if !self.shared().zone_watermark_ok(req, mark) {
                return false;
            }
        }
        self.del_page_from_free_list(pfn, order, mt);
        if order + 1 >= self.pageblock_order() {
            let pb = self.pageblock_nr_pages();
            let mut block = pfn & !(pb - 1);
            while block < pfn + (1 << order) {
                let bmt = self.pageblock_migratetype(block);
                if bmt.is_mergeable() && bmt != MigrateType::Movable {
                    self.move_freepages_block(block, bmt, MigrateType::Movable);
                }
                block += pb;
            }
        }
        self.shared.memmap.set_head(self.idx(pfn), PageState::Isolated, order);
        true
    }
}
