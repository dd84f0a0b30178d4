//! C16 (audit 6.18-pressure): kcompactd's loop in simulated time. kcompactd waits 500 ms
//! for a wake-up; when the wait ends with work requested (`kcompactd_max_order > 0`) it does
//! that work, and only a wait that timed out with nothing requested compacts proactively; a
//! proactive run that did not lower the fragmentation score puts the next timeout 64 times
//! further (32 s).

mod common;

use common::Owner;
use pageblock_core::compaction::{
    fragmentation_score_node, wakeup_kcompactd, MigrateFail, MigrateMode, Mover, COMPACT_MAX_DEFER_SHIFT,
    PROACTIVE_INTERVAL_US,
};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Pfn, Policy, Sysctl, VmEvent, ZoneConfig, ZoneType};

/// A mover whose pages are all pinned: compaction cannot lower the score.
struct Pinned;

impl Mover for Pinned {
    fn migrate(&self, _from: Pfn, _to: Pfn, _order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        Err(MigrateFail::Again)
    }
}

/// A 64 MiB zone filled with movable pages down to its low watermark, then every odd pfn
/// freed (and, with `free_block`, the whole pageblock of the first page): free memory is
/// scattered, the fragmentation score above proactive compaction's threshold (90).
fn fragmented(owner: &Owner, free_block: bool) -> Node {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(64 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let z = node.shared().zone(0);
    let mut pfns = Vec::new();
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        pfns.push(node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low").0);
    }
    let block = pfns[0] >> node.shared().pageblock_order();
    for pfn in pfns {
        if pfn % 2 == 1 || (free_block && pfn >> node.shared().pageblock_order() == block) {
            node.free_pages(0, Pfn(pfn), 0).unwrap();
        } else {
            owner.0.borrow_mut().insert(pfn, 0);
        }
    }
    node.drain_all_pages();
    assert!(!node.shared().daemons().kswapd_woken);
    assert!(fragmentation_score_node(node.shared()) > 90, "{}", fragmentation_score_node(node.shared()));
    node
}

fn daemon_scanned(node: &Node) -> u64 {
    node.shared().event(VmEvent::CompactDaemonMigrateScanned)
        + node.shared().event(VmEvent::CompactDaemonFreeScanned)
}

/// A request kcompactd is not woken for (the node already has the block) is still work
/// requested: at each timeout kcompactd does it (`kcompactd_do_work`, one
/// `compact_daemon_wake`) instead of compacting proactively. Requests every 400 ms keep a
/// fragmented node from proactive compaction for good.
#[test]
fn requested_work_takes_the_timeout_from_proactive_compaction() {
    let owner = Owner::default();
    let mut node = fragmented(&owner, true);
    node.set_mover(Box::new(owner.clone()));
    let step = 10_000;
    for now in (step..=3_000_000).step_by(step as usize) {
        if now % 400_000 == 0 {
            wakeup_kcompactd(node.shared(), &mut node.shared().daemons(), 9, ZoneType::Normal);
            let d = node.shared().daemons();
            assert!(!d.kcompactd_woken && d.kcompactd_max_order == 9, "not woken: the block exists");
        }
        node.advance_to(now);
    }
    let wakes = node.shared().event(VmEvent::CompactDaemonWake);
    assert!(wakes >= 5, "each timeout with a request runs kcompactd_do_work: {wakes} runs in 3 s");
    assert_eq!(daemon_scanned(&node), 0, "no proactive compaction while work is requested");
    assert!(fragmentation_score_node(node.shared()) > 90);
    node.verify().unwrap();
}

/// Without requests, the timeout compacts proactively; a run that cannot lower the score
/// (every page pinned) defers the next one by 32 s instead of repeating every 500 ms.
#[test]
fn proactive_compaction_backs_off_when_the_score_does_not_drop() {
    let owner = Owner::default();
    let mut node = fragmented(&owner, false);
    node.set_mover(Box::new(Pinned));
    let step = 10_000;
    let mut passes = Vec::new();
    let mut scanned = 0;
    for now in (step..=40_000_000).step_by(step as usize) {
        node.advance_to(now);
        if daemon_scanned(&node) > scanned {
            scanned = daemon_scanned(&node);
            passes.push(now);
        }
    }
    let backoff = PROACTIVE_INTERVAL_US << COMPACT_MAX_DEFER_SHIFT;
    assert_eq!(backoff, 32_000_000);
    assert_eq!(passes.first(), Some(&PROACTIVE_INTERVAL_US), "the first timeout compacts");
    assert_eq!(passes.len(), 2, "one more after the 32 s back-off, not every 500 ms: {passes:?}");
    let gap = passes[1] - passes[0];
    assert!((backoff..backoff + 100_000).contains(&gap), "{gap} µs between proactive runs");
    assert_eq!(node.shared().event(VmEvent::CompactDaemonWake), 0, "proactive runs are no wake-ups");
    node.verify().unwrap();
}

/// On a node whose pages can move, the first timeout's proactive run lowers the score.
#[test]
fn proactive_compaction_lowers_a_movable_nodes_score() {
    let owner = Owner::default();
    let mut node = fragmented(&owner, false);
    node.set_mover(Box::new(owner.clone()));
    let before = fragmentation_score_node(node.shared());
    node.advance_to(PROACTIVE_INTERVAL_US);
    assert!(daemon_scanned(&node) > 0, "the first timeout compacts");
    let after = fragmentation_score_node(node.shared());
    assert!(after < before, "compaction lowered the score: {before} -> {after}");
    node.verify().unwrap();
}
