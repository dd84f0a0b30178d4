//! `replay --balloon SIZE`: memory taken away from the recorded machine before the replay,
//! so that a trace recorded with room to spare is replayed on a squeezed machine.
//!
//! The balloon takes whole free blocks, the largest first (a smaller machine, not a
//! fragmented one), movable and without reclaim (`__GFP_NORETRY|__GFP_NOWARN`, no
//! `__GFP_RECLAIM`: inflating must not reclaim the recorded machine's memory), until it
//! holds SIZE or the zones reach their watermarks. Its pages belong to nobody the replay
//! knows, so the simulation's compaction treats them as pinned: the kernel's balloon
//! compaction, which can move balloon pages, is not modelled. Inflated after the replay's
//! starting state is read: no traced free can reach a balloon page.

use pageblock_core::{Gfp, Node};

/// Takes up to `pages` base pages of free memory out of `node`; returns how many it took.
pub fn inflate(node: &Node, pages: u64) -> u64 {
    let gfp = (Gfp::HIGHUSER_MOVABLE & !Gfp::RECLAIM) | Gfp::NOWARN | Gfp::NORETRY;
    let mut order = node.shared().max_order();
    let mut taken = 0;
    while taken < pages {
        while order > 0 && 1u64 << order > pages - taken {
            order -= 1;
        }
        match node.alloc_pages(0, order, gfp) {
            Ok(_) => taken += 1 << order,
            Err(_) if order > 0 => order -= 1,
            Err(_) => break,
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::policy::Policy;
    use pageblock_core::ZoneConfig;

    #[test]
    fn a_balloon_takes_what_it_is_asked_then_stops_at_the_watermarks() {
        let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
        let node = Node::single_zone(zone, Policy::default()).unwrap();
        let free = |n: &Node| n.shared().zones().iter().map(|z| z.nr_free_pages()).sum::<u64>();
        let before = free(&node);
        assert_eq!(inflate(&node, 1024 + 3), 1024 + 3);
        let rest = inflate(&node, u64::MAX);
        assert!(rest > before / 2, "most of the rest: {rest} of {before}");
        assert!(free(&node) < before / 8, "down to the watermarks: {} left", free(&node));
        assert_eq!(inflate(&node, 1), 0, "nothing more");
        node.verify().unwrap();
    }
}
