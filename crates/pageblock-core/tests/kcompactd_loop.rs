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

/// `kcompactd_do_work` asks whether each zone is worth compacting against the zone's own
/// index (`compaction_suit_allocation_order(zone, order, zoneid, ...)`), so a lower zone's
/// lowmem reserve against the requests that woke it does not count there: a DMA32 whose
/// whole free blocks already clear its high watermark has nothing to do, though they would
/// not clear it plus its reserve against ZONE_NORMAL (`kcompactd_node_suitable`, which woke
/// kcompactd, counts the reserve). Regression: kcompactd compacted such a DMA32 under
/// `defrag_mode`, deferring the zone's direct compaction; on a machine whose memory hog
/// fills ZONE_NORMAL (every `lab real` recording) that is where nearly all allocations go.
#[test]
fn kcompactd_work_checks_each_zone_without_its_reserve() {
    // DMA32 of 64 MiB under a 1 GiB Normal: DMA32 keeps 1,024 pages back from Normal's
    // requests (`lowmem_reserve_ratio` 256).
    let zones = vec![
        ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Dma32, 0x1000, 16 << 10) },
        ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Normal, 0x100000, 256 << 10) },
    ];
    let policy = Policy::default().with_sysctl(Sysctl::DefragMode, 1).unwrap();
    let mut node = Node::new(NodeConfig { zones }, policy).unwrap();
    let owner = Owner::default();
    let shared = std::sync::Arc::clone(node.shared());
    let dma32 = shared.zone(0);
    let reserve = dma32.lowmem_reserve(ZoneType::Normal);
    assert_eq!(reserve, 1024);
    // Fill DMA32 with kernel pages, then free two whole pageblocks (whole free blocks: 1,024
    // pages) and every other page of eight more (scattered: 2,048).
    let mut pfns = Vec::new();
    while let Ok(p) = node.alloc_pages(0, 0, Gfp::KERNEL | Gfp::DMA32) {
        pfns.push(p.0);
        if dma32.nr_free_pages() <= dma32.wmark_pages(WatermarkLevel::Min) {
            break;
        }
    }
    let pbo = node.shared().pageblock_order();
    let blocks: std::collections::BTreeSet<u64> = pfns.iter().map(|p| p >> pbo).collect();
    let whole: Vec<u64> = blocks.iter().copied().take(2).collect();
    let scattered: Vec<u64> = blocks.iter().copied().skip(2).take(8).collect();
    for &p in &pfns {
        let block = p >> pbo;
        if whole.contains(&block) || (scattered.contains(&block) && p % 2 == 1) {
            node.free_pages(0, Pfn(p), 0).unwrap();
        } else {
            owner.0.borrow_mut().insert(p, 0);
        }
    }
    node.drain_all_pages();
    node.set_mover(Box::new(owner.clone()));
    let high = dma32.wmark_pages(WatermarkLevel::High);
    let in_blocks = dma32.counters().zone_stat(pageblock_core::ZoneStat::NrFreePagesBlocks);
    assert!(in_blocks - 511 > high && in_blocks - 511 <= high + reserve, "{in_blocks} against {high}");
    wakeup_kcompactd(node.shared(), &mut node.shared().daemons(), 9, ZoneType::Normal);
    assert!(node.shared().daemons().kcompactd_woken, "woken: counted with the reserve, DMA32 is worth it");
    node.advance_to(1_000_000);
    assert!(node.shared().event(VmEvent::CompactDaemonWake) >= 1);
    assert_eq!(daemon_scanned(&node), 0, "DMA32's own check: its whole free blocks clear high");
    node.verify().unwrap();
}

/// kcompactd drains the CPU lists of the zone it compacted when the run ends without
/// success (`drain_all_pages(zone)` before `defer_compaction`), not every zone's.
/// Regression: the simulation drained every zone's lists, so each failed kcompactd run on a
/// small DMA32 also emptied ZONE_NORMAL's caches, which the next allocations refilled from
/// the buddy lists.
#[test]
fn kcompactd_drains_only_the_zone_it_compacted() {
    let zones = vec![
        ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Dma32, 0x1000, 16 << 10) },
        ZoneConfig { nr_cpus: 1, ..ZoneConfig::new(ZoneType::Normal, 0x100000, 256 << 10) },
    ];
    let mut node = Node::new(NodeConfig { zones }, Policy::default()).unwrap();
    let shared = std::sync::Arc::clone(node.shared());
    let (dma32, normal) = (shared.zone(0), shared.zone(1));
    // DMA32 filled with kernel pages down to its low watermark, every other one freed:
    // fragmented, and with every page pinned no run can succeed.
    let mut pfns = Vec::new();
    while dma32.nr_free_pages() > dma32.wmark_pages(WatermarkLevel::Low) {
        pfns.push(node.alloc_pages(0, 0, Gfp::KERNEL | Gfp::DMA32).expect("above low").0);
    }
    for &p in pfns.iter().filter(|&&p| p % 2 == 1) {
        node.free_pages(0, Pfn(p), 0).unwrap();
    }
    node.drain_all_pages();
    // Both zones' lists hold pages: a refill's worth, less what was kept, plus what was freed.
    let kept: Vec<Pfn> = (0..8).map(|_| node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap()).collect();
    node.free_pages(0, kept[0], 0).unwrap();
    let d = node.alloc_pages(0, 0, Gfp::KERNEL | Gfp::DMA32).unwrap();
    node.free_pages(0, d, 0).unwrap();
    let cached = |z: &pageblock_core::ZoneShared| z.counters().cpu(0).count();
    let normal_cached = cached(normal);
    assert!(normal_cached > 0 && cached(dma32) > 0);
    node.set_mover(Box::new(Pinned));
    // Order 10: the fill left a free block of order 9, none of order 10.
    assert_eq!(common::buddyinfo(&node, 0)[10], 0);
    wakeup_kcompactd(node.shared(), &mut node.shared().daemons(), 10, ZoneType::Dma32);
    assert!(node.shared().daemons().kcompactd_woken, "a fragmented DMA32 is worth compacting");
    node.advance_to(100_000);
    assert_eq!(node.shared().event(VmEvent::CompactDaemonWake), 1);
    assert!(daemon_scanned(&node) > 0, "kcompactd compacted DMA32");
    assert_eq!(cached(dma32), 0, "the run failed: DMA32's lists are drained");
    assert_eq!(cached(normal), normal_cached, "ZONE_NORMAL's lists are not kcompactd's business");
    node.verify().unwrap();
}
