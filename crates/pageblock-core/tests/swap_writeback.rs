//! Swap writeback: kswapd writes anonymous pages to a block device and frees them only once
//! the writes complete; meeting them again under writeback throttles it; a page being
//! written cannot migrate, a written one in the swap cache can.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::vmscan::kswapd::{kswapd_run, KswapdRun};
use pageblock_core::vmscan::{LruKind, SwapDevice, SwapLatency, Unmap};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Policy, Sysctl, VmEvent, ZoneConfig, ZoneType};

/// Every anonymous page the process still maps.
#[derive(Clone, Default)]
struct Process(Rc<RefCell<BTreeSet<u64>>>);

impl Unmap for Process {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        self.0.borrow_mut().remove(&pfn)
    }
}

impl Mover for Process {
    fn migrate(
        &self,
        from: pageblock_core::Pfn,
        to: pageblock_core::Pfn,
        _order: u32,
        _mode: MigrateMode,
    ) -> Result<(), MigrateFail> {
        let mut pages = self.0.borrow_mut();
        if pages.remove(&from.0) && pages.insert(to.0) {
            Ok(())
        } else {
            Err(MigrateFail::Busy)
        }
    }
}

/// A 32 MiB node swapping to `disk`, filled with anonymous memory to its low watermark,
/// kswapd woken.
fn anon_at_low(disk: SwapLatency) -> (Process, Node) {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(32 << 20) };
    let mut node = Node::new(
        NodeConfig::single(zone),
        Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap(),
    )
    .unwrap();
    let process = Process::default();
    node.set_unmap(Box::new(process.clone()));
    node.set_mover(Box::new(process.clone()));
    node.set_swap_device(SwapDevice::block(disk));
    let low = node.shared().zone(0).wmark_pages(WatermarkLevel::Low);
    while node.shared().zone(0).nr_free_pages() > low {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        process.0.borrow_mut().insert(pfn.0);
        assert!(node.lru_add(pfn, 0, LruKind::Anon));
    }
    pageblock_core::vmscan::kswapd::wakeup_kswapd(&node, Gfp::HIGHUSER_MOVABLE, 0, ZoneType::Normal);
    (process, node)
}

/// One whole `balance_pgdat` run, pass by pass with the clock standing still: what it
/// scanned and slept throttled.
fn whole_run(node: &Node) -> KswapdRun {
    let mut run = kswapd_run(node, 1);
    while node.shared().daemons().kswapd_balancing.is_some() {
        let pass = kswapd_run(node, 1);
        run = KswapdRun {
            scanned: run.scanned + pass.scanned,
            throttled_us: run.throttled_us + pass.throttled_us,
            ..pass
        };
    }
    run
}

#[test]
fn kswapd_frees_swapped_pages_only_once_written() {
    let (_process, node) = anon_at_low(SwapLatency::default());
    let run = whole_run(&node);
    let written = node.shared().event(VmEvent::Pswpout);
    let freed = node.shared().event(VmEvent::PgstealAnon);
    assert!(written > 0, "kswapd swapped");
    assert!(freed < written, "{freed} freed of {written} written: some writes still in flight");
    assert!(freed > 0, "written pages rotated to the tail and were freed in the same run");
    assert_eq!(run.throttled_us, 0, "the disk kept up: {run:?}");
}

/// A slow disk: 10 ms a page, 100 ms a request; nothing is written within a run's scan.
const SLOW: SwapLatency = SwapLatency { per_page_us: 10_000, per_request_us: 100_000 };

#[test]
fn kswapd_cycling_through_pages_still_being_written_sleeps_until_a_batch_is_written() {
    let (_process, node) = anon_at_low(SLOW);
    let runs: Vec<_> = (0..4).map(|_| whole_run(&node)).collect();
    assert!(
        runs.iter().any(|r| r.throttled_us >= 100_000),
        "a throttled kswapd waits HZ/10 for a batch: {runs:?}"
    );
    assert!(node.shared().daemons().pgdat_writeback, "passes took only pages under writeback");
}

#[test]
fn a_page_under_writeback_cannot_migrate_a_written_one_in_the_swap_cache_can() {
    let (process, mut node) = anon_at_low(SLOW);
    whole_run(&node);
    let start = node.shared().zone(0).config().start_pfn;
    let pfn_of = |node: &Node, writeback: bool| {
        (start..start + (32 << 8)).find(|&p| {
            node.lru_page(pageblock_core::Pfn(p)).is_some_and(|e| e.swapcache && e.writeback == writeback)
        })
    };
    let busy = pfn_of(&node, true).expect("a page still being written");
    assert!(!process.0.borrow().contains(&busy), "the process let go of it");
    let to = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let sync_light = MigrateMode::SyncLight;
    assert_eq!(
        node.migrate(pageblock_core::Pfn(busy), to, 0, sync_light),
        Err(MigrateFail::Busy),
        "under writeback"
    );
    node.advance_to(1 << 40);
    let written = pfn_of(&node, false).expect("a written page left on the LRU");
    assert_eq!(
        node.migrate(pageblock_core::Pfn(written), to, 0, sync_light),
        Ok(()),
        "the swap cache is the node's to move"
    );
    assert!(node.lru_page(to).is_some_and(|e| e.swapcache));
}
