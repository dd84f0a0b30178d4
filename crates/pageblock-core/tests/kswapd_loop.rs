//! R5 (audit 6.18-pressure): kswapd's loop. Woken once, kswapd re-enters `balance_pgdat`
//! while the node stays unbalanced, each run taking simulated time, until the node is
//! balanced or `MAX_RECLAIM_RETRIES` runs in a row reclaimed nothing; a balanced kswapd naps
//! `HZ/10` and runs again if the node is unbalanced when the nap ends.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use pageblock_core::vmscan::kswapd::{kswapd_run_time_us, KSWAPD_NAP_US};
use pageblock_core::vmscan::{LruKind, Unmap, KSWAPD_WAKE_DELAY_US, MAX_RECLAIM_RETRIES};
use pageblock_core::zone::watermark::WatermarkLevel;
use pageblock_core::{Gfp, Node, NodeConfig, Policy, Sysctl, VmEvent, ZoneConfig, ZoneType};

/// The page cache's owner: every page goes unless the cache is pinned.
#[derive(Clone, Default)]
struct Cache {
    pinned: Rc<Cell<bool>>,
    pages: Rc<RefCell<BTreeSet<u64>>>,
}

impl Unmap for Cache {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        !self.pinned.get() && self.pages.borrow_mut().remove(&pfn)
    }
}

/// A 32 MiB zone filled with page cache down to its low watermark (kswapd not yet woken).
fn node_at_low(cache: &Cache) -> Node {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(32 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    node.set_unmap(Box::new(cache.clone()));
    let z = node.shared().zone(0);
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        assert!(node.lru_add(pfn, 0, LruKind::File));
        cache.pages.borrow_mut().insert(pfn.0);
    }
    assert!(!node.shared().daemons().kswapd_woken);
    node
}

/// [`node_at_low`] with the page cache `pinned` or not, and kswapd woken once at order 0.
fn woken_at_low(pinned: bool) -> (Cache, Node) {
    let cache = Cache::default();
    let node = node_at_low(&cache);
    cache.pinned.set(pinned);
    pageblock_core::vmscan::kswapd::wakeup_kswapd(&node, Gfp::NONE, 0, ZoneType::Normal);
    (cache, node)
}

/// Move the clock to kswapd's first run, and on through its priority passes (each taking
/// the simulated time of what it scanned) until the run is over. Returns the clock then.
fn run_once(node: &mut Node) -> u64 {
    node.advance_to(1);
    let now = 1 + KSWAPD_WAKE_DELAY_US;
    node.advance_to(now);
    assert_eq!(runs(node), 1);
    let now = common::finish_kswapd_run(node, now);
    assert_eq!(runs(node), 1, "one run");
    now
}

fn runs(node: &Node) -> u64 {
    node.shared().event(VmEvent::Pageoutrun)
}

/// Move the clock from `from` to `to` in steps of `step` µs, as allocators would.
fn tick(node: &mut Node, from: u64, to: u64, step: u64) {
    let mut now = from;
    while now < to {
        now += step;
        node.advance_to(now);
    }
}

/// One wake-up whose target the first run cannot reach (the page cache is pinned during
/// it): kswapd runs again by itself — after the first run's last pass, not at once — and
/// stops once the node is balanced.
#[test]
fn kswapd_keeps_reclaiming_without_a_new_wake_up_until_the_node_is_balanced() {
    let (cache, mut node) = woken_at_low(true);
    let ended = run_once(&mut node);
    assert_eq!(node.shared().event(VmEvent::PgstealKswapd), 0, "pinned: the first run reclaims nothing");
    assert!(node.shared().daemons().kswapd_woken, "unbalanced: kswapd stays awake");
    cache.pinned.set(false);
    assert_eq!(runs(&node), 1, "the first run's last pass takes simulated time");
    tick(&mut node, ended, 3 * KSWAPD_NAP_US, 10);
    let z = node.shared().zone(0);
    assert_eq!(runs(&node), 2, "a second run, without a wake-up, balances the node");
    assert!(node.shared().event(VmEvent::PgstealKswapd) > 0);
    assert!(z.nr_free_pages() >= z.wmark_pages(WatermarkLevel::High));
    assert!(!node.shared().daemons().kswapd_woken, "balanced: kswapd sleeps");
    node.verify().unwrap();
}

/// kswapd checks the node's balance before each priority pass while the workload goes on:
/// memory the workload frees during a run ends the run at its next pass. (Before, a run took
/// all its passes at one instant and reclaimed to the high watermark whatever the workload
/// freed meanwhile; on B5 such a run went down to priority 1 among young huge pages a burst
/// was about to unmap, and swapped them.)
#[test]
fn frees_made_while_kswapd_runs_end_its_run_at_the_next_pass() {
    let (cache, mut node) = woken_at_low(false);
    node.advance_to(1);
    let now = 1 + KSWAPD_WAKE_DELAY_US;
    node.advance_to(now);
    assert!(node.shared().daemons().kswapd_balancing.is_some(), "the first pass left the run going");
    let stolen = node.shared().event(VmEvent::PgstealKswapd);
    // The workload drops page cache of its own, up past the high watermark.
    let high = node.shared().zone(0).wmark_pages(WatermarkLevel::High);
    while node.shared().zone(0).nr_free_pages() < high + 64 {
        let pfn = cache.pages.borrow_mut().pop_first().expect("page cache left");
        assert!(node.lru_del(pageblock_core::Pfn(pfn)));
        node.free_pages(0, pageblock_core::Pfn(pfn), 0).unwrap();
        node.drain_all_pages();
    }
    common::finish_kswapd_run(&mut node, now);
    assert_eq!(node.shared().event(VmEvent::PgstealKswapd), stolen, "no pass after the frees");
    assert_eq!(runs(&node), 1);
    assert!(!node.shared().daemons().kswapd_woken, "balanced: kswapd naps");
    node.verify().unwrap();
}

/// `balance_pgdat` holds `ZONE_RECLAIM_ACTIVE` for as long as it runs. Each simulated
/// pass reclaims at its start; the zone keeps the flag (its CPU lists cache at most four
/// batches meanwhile) through every pass until the last pass's simulated time has passed,
/// then loses it.
#[test]
fn the_zone_stays_under_reclaim_for_the_length_of_a_kswapd_run() {
    let (_cache, mut node) = woken_at_low(false);
    assert!(!node.shared().zone(0).flags().reclaim_active());
    node.advance_to(1);
    let mut now = 1 + KSWAPD_WAKE_DELAY_US;
    node.advance_to(now);
    let mut passes = 0;
    let mut scanned = node.shared().event(VmEvent::PgscanKswapd);
    while node.shared().daemons().kswapd_balancing.is_some() {
        assert!(node.shared().zone(0).flags().reclaim_active(), "pass {passes}: the run is not over");
        now += 1;
        node.advance_to(now);
        let s = node.shared().event(VmEvent::PgscanKswapd);
        if s != scanned {
            passes += 1;
            scanned = s;
        }
    }
    assert!(passes > 0, "the run took more than one pass");
    // Page cache of base pages: as many folios as pages.
    let pages = node.shared().event(VmEvent::PgscanKswapd) - scanned;
    let last = kswapd_run_time_us(pages, pages, 0);
    assert!(node.shared().event(VmEvent::PgstealKswapd) > 0 && last > 1);
    assert!(node.shared().zone(0).flags().reclaim_active(), "the last pass has just begun");
    node.advance_to(now + last - 1);
    assert!(node.shared().zone(0).flags().reclaim_active(), "the run is not over");
    node.advance_to(now + last);
    assert!(!node.shared().zone(0).flags().reclaim_active(), "the run is over");
    assert_eq!(runs(&node), 1);
    node.verify().unwrap();
}

/// A target kswapd can never reach: it runs `MAX_RECLAIM_RETRIES` times, then it is
/// hopeless and a wake-up is refused until a direct reclaim frees something.
#[test]
fn kswapd_gives_up_after_max_reclaim_retries_runs_that_reclaimed_nothing() {
    let (_cache, mut node) = woken_at_low(true);
    tick(&mut node, 0, 10 * KSWAPD_NAP_US, 50);
    assert_eq!(runs(&node), u64::from(MAX_RECLAIM_RETRIES));
    assert_eq!(node.shared().daemons().kswapd_failures, MAX_RECLAIM_RETRIES);
    assert!(!node.shared().daemons().kswapd_woken, "hopeless: kswapd sleeps");
    pageblock_core::vmscan::kswapd::wakeup_kswapd(&node, Gfp::NONE, 0, ZoneType::Normal);
    assert!(!node.shared().daemons().kswapd_woken, "and is not woken again");
    tick(&mut node, 10 * KSWAPD_NAP_US, 20 * KSWAPD_NAP_US, 50);
    assert_eq!(runs(&node), u64::from(MAX_RECLAIM_RETRIES));
    node.verify().unwrap();
}

/// The premature-sleep check: the node falls below high (not low: nobody wakes kswapd)
/// during kswapd's nap, so kswapd does not go to sleep but runs again when the nap ends.
#[test]
fn kswapd_runs_again_when_the_node_is_unbalanced_at_the_end_of_its_nap() {
    let (cache, mut node) = woken_at_low(false);
    let ended = run_once(&mut node);
    assert!(!node.shared().daemons().kswapd_woken, "balanced: kswapd naps");
    let free = |node: &Node| node.shared().zone(0).nr_free_pages();
    let (low, high) = {
        let z = node.shared().zone(0);
        (z.wmark_pages(WatermarkLevel::Low), z.wmark_pages(WatermarkLevel::High))
    };
    while free(&node) >= high {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above high");
        assert!(node.lru_add(pfn, 0, LruKind::File));
        cache.pages.borrow_mut().insert(pfn.0);
    }
    assert!(free(&node) > low);
    assert!(!node.shared().daemons().kswapd_woken, "above low: no wake-up");
    tick(&mut node, ended, 3 * KSWAPD_NAP_US, 100);
    assert_eq!(runs(&node), 2, "the sleep was premature: kswapd ran again");
    assert!(free(&node) >= high);
    node.verify().unwrap();
}

/// A driver that knows the daemons' timing sets it: each wake-up runs kswapd after the
/// latency it draws, not [`KSWAPD_WAKE_DELAY_US`].
#[test]
fn a_drawn_wake_up_latency_delays_kswapd_by_that_much() {
    let (_cache, mut node) = woken_at_low(false);
    let drawn = Rc::new(Cell::new(0));
    let counter = Rc::clone(&drawn);
    let phases = pageblock_core::DaemonPhases { vmstat_us: 1, kcompactd_us: 1 };
    node.set_daemon_timing(
        Box::new(move || {
            counter.set(counter.get() + 1);
            40
        }),
        phases,
    );
    node.advance_to(1);
    node.advance_to(40);
    assert_eq!(runs(&node), 0, "due 40 µs after the step that saw the wake-up");
    node.advance_to(41);
    assert_eq!(runs(&node), 1);
    assert_eq!(drawn.get(), 1, "one draw for one wake-up");
    const { assert!(41 < KSWAPD_WAKE_DELAY_US, "earlier than the default would have run it") };
}

/// The pages kswapd reclaims go to the lists of the CPU it runs on: the last CPU unless the
/// driver says where the kernel's kswapd ran (`Node::set_daemon_cpus`).
#[test]
fn kswapd_frees_to_the_lists_of_the_cpu_it_runs_on() {
    for kswapd in [None, Some(0)] {
        let (_cache, mut node) = woken_at_low(false);
        if let Some(cpu) = kswapd {
            node.set_daemon_cpus(pageblock_core::DaemonCpus { kswapd: cpu, kcompactd: 1 });
        }
        node.drain_all_pages();
        run_once(&mut node);
        assert!(node.shared().event(VmEvent::PgstealKswapd) > 0);
        let cached: Vec<u64> = (0..2).map(|cpu| node.shared().zone(0).counters().cpu(cpu).count()).collect();
        let on = kswapd.unwrap_or(1);
        assert!(cached[on] > 0 && cached[1 - on] == 0, "kswapd on CPU {on}: cached {cached:?}");
        node.verify().unwrap();
    }
}

/// The memory of [`cache_trim_fails`]: page cache mapped and in use (pinned), anonymous
/// memory free to go.
#[derive(Clone, Default)]
struct MappedCache {
    anon: Rc<RefCell<BTreeSet<u64>>>,
}

impl Unmap for MappedCache {
    fn try_to_unmap(&self, pfn: u64, _order: u32, kind: LruKind, _workingset: bool) -> bool {
        kind == LruKind::Anon && self.anon.borrow_mut().remove(&pfn)
    }
}

/// A 256 MiB zone at its low watermark: 40,000 pages of mapped page cache the owner will not
/// let go (each young from its fault: a first look keeps it on the inactive list, so the list
/// stays large and cache-trim mode stays on), the rest anonymous pages reclaim may swap.
fn cache_trim_fails() -> (MappedCache, Node) {
    let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(256 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap();
    let mut node = Node::new(NodeConfig::single(zone), policy).unwrap();
    let owner = MappedCache::default();
    node.set_unmap(Box::new(owner.clone()));
    node.set_swap_device(pageblock_core::vmscan::SwapDevice::synchronous());
    let z = node.shared().zone(0);
    let mut file = 0;
    while z.nr_free_pages() > z.wmark_pages(WatermarkLevel::Low) {
        let pfn = node.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).expect("above low");
        if file < 40_000 {
            assert!(node.lru_add_mapped(pfn, 0, LruKind::File));
            file += 1;
        } else {
            assert!(node.lru_add(pfn, 0, LruKind::Anon));
            owner.anon.borrow_mut().insert(pfn.0);
        }
    }
    pageblock_core::vmscan::kswapd::wakeup_kswapd(&node, Gfp::NONE, 0, ZoneType::Normal);
    (owner, node)
}

/// 6.18's `no_cache_trim_mode` restart: kswapd's first run trims page cache at every
/// priority and takes nothing (every page cache page it looks at is young: kept); it then
/// starts over without cache-trim mode, in the same run, and swaps anonymous memory out —
/// rather than counting a failure and leaving the node unbalanced until its next run.
#[test]
fn a_run_whose_cache_trim_failed_starts_over_without_it() {
    let (owner, mut node) = cache_trim_fails();
    let anon = owner.anon.borrow().len();
    run_once(&mut node);
    let d = node.shared().daemons();
    assert_eq!(d.kswapd_failures, 0, "the run reclaimed: no failure counted");
    drop(d);
    let stolen = node.shared().event(VmEvent::PgstealAnon);
    assert!(stolen > 0, "anonymous memory went after the restart");
    assert_eq!(owner.anon.borrow().len() as u64, anon as u64 - stolen);
    assert_eq!(node.shared().event(VmEvent::PgstealFile), 0, "the page cache was in use");
    assert!(node.shared().event(VmEvent::NrRefKeepFile) > 0, "looked at and kept");
    node.verify().unwrap();
}
