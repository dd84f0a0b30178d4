//! Pageblocks by content: from the flags of every page of a zone, what each pageblock holds —
//! and so which blocks are whole and free, backed by one huge page, or *mixed* (movable and
//! unmovable pages in one block: compaction cannot empty it), the figure `/proc/pagetypeinfo`
//! cannot give.

use serde::Serialize;

use pageblock_view::{BlockKind, PageTally};

use super::kpageflags::{classify, is_thp, PageClass};

/// Count one page of `tally` by its kpageflags word.
#[inline]
fn add_page(tally: &mut PageTally, flags: u64) {
    let slot = match classify(flags) {
        PageClass::Free => &mut tally.free,
        PageClass::Movable => &mut tally.movable,
        PageClass::Slab => &mut tally.slab,
        PageClass::PageTable => &mut tally.page_table,
        PageClass::Reserved => &mut tally.reserved,
        PageClass::Hugetlb => &mut tally.hugetlb,
        PageClass::Kernel => &mut tally.kernel,
        PageClass::NotManaged => &mut tally.not_managed,
        PageClass::Hole => &mut tally.hole,
    };
    *slot += 1;
    tally.thp += u64::from(is_thp(flags));
}

/// One zone's pageblocks, from the flags of its pfns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZoneBlocks {
    /// Pageblocks (those that overlap the zone's span).
    pub pageblocks: u64,
    /// Blocks with every page free.
    pub free_pageblocks: u64,
    /// Blocks covered by one transparent huge page.
    pub thp_pageblocks: u64,
    /// Blocks holding movable and unmovable pages.
    pub mixed_pageblocks: u64,
    /// Mixed blocks whose unmovable pages include slab or page tables (a lower bound: a
    /// flagless kernel page may also be a free page cached on a CPU's list).
    pub mixed_slab_pageblocks: u64,
    /// Blocks with only movable (and free) pages.
    pub movable_pageblocks: u64,
    /// Blocks with only unmovable (and free) pages.
    pub unmovable_pageblocks: u64,
    /// Blocks with hugetlbfs pages.
    pub hugetlb_pageblocks: u64,
    /// Blocks without memory.
    pub hole_pageblocks: u64,
    /// Blocks of memory the kernel does not manage.
    pub not_managed_pageblocks: u64,
    /// Pages by class.
    pub pages: PageTally,
    /// Each block's state, lowest pfn first.
    #[serde(skip)]
    pub kinds: Vec<BlockKind>,
    /// Per block, its pages in the zone if every one is flagless (else 0), until
    /// [`ZoneBlocks::mark_not_managed`] has used them.
    #[serde(skip)]
    flagless: Vec<u64>,
}

impl ZoneBlocks {
    /// Add the tallies of a further stretch of the zone (its blocks follow this one's).
    pub fn merge(&mut self, part: ZoneBlocks) {
        self.pageblocks += part.pageblocks;
        self.free_pageblocks += part.free_pageblocks;
        self.thp_pageblocks += part.thp_pageblocks;
        self.mixed_pageblocks += part.mixed_pageblocks;
        self.mixed_slab_pageblocks += part.mixed_slab_pageblocks;
        self.movable_pageblocks += part.movable_pageblocks;
        self.unmovable_pageblocks += part.unmovable_pageblocks;
        self.hugetlb_pageblocks += part.hugetlb_pageblocks;
        self.hole_pageblocks += part.hole_pageblocks;
        self.not_managed_pageblocks += part.not_managed_pageblocks;
        self.pages.merge(&part.pages);
        self.kinds.extend(part.kinds);
        self.flagless.extend(part.flagless);
    }

    /// Take up to `pages` flagless pages out of the zone's unmovable memory as not managed:
    /// struct pages the kernel has not initialised read flagless, like a kernel allocation
    /// without a type. The kernel initialises a zone upward (deferred and lazy init alike), so
    /// the wholly flagless blocks at the zone's top (holes and offline blocks skipped) are the
    /// uninitialised ones;
    /// the walk down stops at the first block that holds anything else. `pages` is what the
    /// zone has beyond its managed pages and what this tally already explains (reserved and
    /// offline pages).
    pub fn mark_not_managed(&mut self, mut pages: u64) {
        let flagless = std::mem::take(&mut self.flagless);
        for (kind, &n) in self.kinds.iter_mut().zip(&flagless).rev() {
            if matches!(*kind, BlockKind::Hole | BlockKind::NotManaged) {
                continue;
            }
            if n == 0 || n > pages {
                break;
            }
            *kind = BlockKind::NotManaged;
            self.unmovable_pageblocks -= 1;
            self.not_managed_pageblocks += 1;
            self.pages.kernel -= n;
            self.pages.not_managed += n;
            pages -= n;
        }
    }

    /// Tally `flags`, the words of pfns `start..start + flags.len()`, by pageblocks of
    /// 2^`pageblock_order` pages (aligned blocks; the zone's first and last may be partial,
    /// their missing pages count as holes).
    pub fn tally(start: u64, flags: &[u64], pageblock_order: u32) -> ZoneBlocks {
        let pb = 1u64 << pageblock_order;
        let end = start + flags.len() as u64;
        let mut z = ZoneBlocks::default();
        let mut block = start & !(pb - 1);
        while block < end {
            let lo = block.max(start);
            let hi = (block + pb).min(end);
            let mut t = PageTally { hole: pb - (hi - lo), ..PageTally::default() };
            for &f in &flags[(lo - start) as usize..(hi - start) as usize] {
                add_page(&mut t, f);
            }
            let kind = t.kind(pb);
            let counter = match kind {
                BlockKind::Free => &mut z.free_pageblocks,
                BlockKind::Thp => &mut z.thp_pageblocks,
                BlockKind::Mixed => &mut z.mixed_pageblocks,
                BlockKind::Movable => &mut z.movable_pageblocks,
                BlockKind::Unmovable => &mut z.unmovable_pageblocks,
                BlockKind::Hugetlb => &mut z.hugetlb_pageblocks,
                BlockKind::NotManaged => &mut z.not_managed_pageblocks,
                BlockKind::Hole => &mut z.hole_pageblocks,
            };
            *counter += 1;
            if kind == BlockKind::Mixed && t.slab + t.page_table > 0 {
                z.mixed_slab_pageblocks += 1;
            }
            z.pageblocks += 1;
            z.flagless.push(if t.kernel == hi - lo { t.kernel } else { 0 });
            t.hole -= pb - (hi - lo);
            z.pages.merge(&t);
            z.kinds.push(kind);
            block += pb;
        }
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FREE: u64 = 1 << 10;
    const LRU: u64 = 1 << 5;
    const SLAB: u64 = 1 << 7;
    const THP: u64 = (1 << 22) | LRU;

    #[test]
    fn blocks_are_classified_by_what_they_hold() {
        // Order-2 "pageblocks" of 4 pages, the zone starting mid-block at pfn 2.
        let flags = [
            FREE, FREE, // block 0 (pfns 0-1 outside the zone): never a whole free block
            FREE, FREE, FREE, FREE, // block 1: free
            LRU, FREE, LRU, LRU, // block 2: movable
            SLAB, LRU, FREE, FREE, // block 3: mixed
            THP, THP, THP, THP, // block 4: THP
            SLAB, 0, FREE, FREE, // block 5: unmovable
        ];
        let z = ZoneBlocks::tally(2, &flags, 2);
        use BlockKind::*;
        assert_eq!(z.kinds, [Hole, Free, Movable, Mixed, Thp, Unmovable]);
        assert_eq!(z.pageblocks, 6);
        assert_eq!((z.free_pageblocks, z.mixed_pageblocks, z.thp_pageblocks), (1, 1, 1));
        assert_eq!(z.pages.free, 11);
        assert_eq!(z.pages.hole, 0, "pfns outside the zone are not the zone's holes");
        assert_eq!(z.pages.unmovable(), 3);
    }

    #[test]
    fn the_flagless_top_beyond_managed_is_not_managed() {
        const NOPAGE: u64 = 1 << 20;
        const OFFLINE: u64 = 1 << 23;
        // Order-2 blocks: kernel, free, flagless, offline, flagless, flagless, hole.
        let flags = [
            0, 0, 0, 0, FREE, FREE, FREE, FREE, 0, 0, 0, 0, OFFLINE, OFFLINE, OFFLINE, OFFLINE, 0, 0, 0, 0,
            0, 0, 0, 0, NOPAGE, NOPAGE, NOPAGE, NOPAGE,
        ];
        use BlockKind::*;
        let tally = ZoneBlocks::tally(0, &flags, 2);
        assert_eq!(tally.kinds, [Unmovable, Free, Unmovable, NotManaged, Unmovable, Unmovable, Hole]);
        let mut z = tally.clone();
        z.mark_not_managed(8);
        assert_eq!(z.kinds, [Unmovable, Free, Unmovable, NotManaged, NotManaged, NotManaged, Hole]);
        assert_eq!((z.unmovable_pageblocks, z.not_managed_pageblocks), (2, 3));
        assert_eq!((z.pages.kernel, z.pages.not_managed), (8, 12));
        // The walk passes the offline block and stops at the free one; a budget smaller than
        // a block takes nothing.
        let mut z = tally.clone();
        z.mark_not_managed(100);
        assert_eq!(z.kinds, [Unmovable, Free, NotManaged, NotManaged, NotManaged, NotManaged, Hole]);
        let mut z = tally;
        z.mark_not_managed(3);
        assert_eq!(z.not_managed_pageblocks, 1);
    }
}
