//! The pageblock map of a simulated node, in the same states as a live machine's
//! ([`BlockKind`]): what each pageblock holds according to the simulator's memmap.

use pageblock_core::memmap::PageState;
use pageblock_core::{Node, ZoneShared};

use pageblock_view::{BlockKind, PageTally};

/// Each populated zone's name and block states, lowest pfn first.
pub fn node_block_kinds(node: &Node) -> Vec<(String, Vec<BlockKind>)> {
    node.shared().zones().iter().map(|z| (z.config().zone_type.name().to_owned(), zone_kinds(z))).collect()
}

fn zone_kinds(z: &ZoneShared) -> Vec<BlockKind> {
    let cfg = z.config();
    let pb = 1u64 << cfg.pageblock_order;
    let first = cfg.start_pfn & !(pb - 1);
    let nr_blocks = (cfg.end_pfn() - first).div_ceil(pb) as usize;
    let mut tallies = vec![PageTally::default(); nr_blocks];
    // Pfns of the first and last blocks outside the zone are holes.
    tallies[0].hole += cfg.start_pfn - first;
    tallies[nr_blocks - 1].hole += first + nr_blocks as u64 * pb - cfg.end_pfn();
    // One walk over the zone's blocks; a block larger than a pageblock is spread over the
    // pageblocks it covers.
    for e in z.memmap().extents(0, cfg.nr_pages() as u32) {
        let mut pfn = cfg.start_pfn + u64::from(e.idx);
        let end = (pfn + e.pages).min(cfg.end_pfn());
        while pfn < end {
            let b = ((pfn - first) / pb) as usize;
            let n = (first + (b as u64 + 1) * pb).min(end) - pfn;
            let t = &mut tallies[b];
            match e.info.state {
                PageState::Buddy | PageState::Pcp | PageState::Isolated => t.free += n,
                PageState::Allocated if e.info.tag.movable => {
                    t.movable += n;
                    if e.info.order >= cfg.pageblock_order {
                        t.thp += n;
                    }
                }
                PageState::Allocated => t.kernel += n,
                PageState::Reserved => t.reserved += n,
                PageState::Offline => t.not_managed += n,
                PageState::Tail => t.hole += n,
            }
            pfn += n;
        }
    }
    tallies.iter().map(|t| t.kind(pb)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::{Gfp, NodeConfig, Policy, ZoneConfig};

    #[test]
    fn a_fresh_node_is_free_and_allocations_show() {
        let node = Node::new(NodeConfig::single(ZoneConfig::normal(64 << 20)), Policy::default()).unwrap();
        let kinds = node_block_kinds(&node);
        assert_eq!(kinds[0].1.len(), 32);
        assert!(kinds[0].1.iter().all(|&k| k == BlockKind::Free), "{:?}", kinds[0].1);
        node.alloc_pages(0, 9, Gfp::TRANSHUGE).unwrap();
        node.alloc_pages(0, 0, Gfp::KERNEL).unwrap();
        let kinds = node_block_kinds(&node);
        assert!(kinds[0].1.contains(&BlockKind::Thp));
        assert!(kinds[0].1.contains(&BlockKind::Unmovable), "{:?}", kinds[0].1);
    }
}
