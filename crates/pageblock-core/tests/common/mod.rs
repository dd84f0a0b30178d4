//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use std::cell::{RefCell, RefMut};
use std::collections::BTreeMap;
use std::rc::Rc;

use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::memmap::PageInfo;
use pageblock_core::pcp::PerCpuPages;
use pageblock_core::scan_control::ScanControl;
use pageblock_core::vmscan::{LruKind, Unmap};
use pageblock_core::{Gfp, MigrateType, Node, NodeLocks, NodeShared, Pfn, VmEvent, Zone, ZoneStat};

/// The memory's owner: every live allocation (pfn → order). Reclaim and compaction tell it
/// what they take and move.
#[derive(Clone, Default)]
pub struct Owner(pub Rc<RefCell<BTreeMap<u64, u32>>>);

impl Unmap for Owner {
    fn try_to_unmap(&self, pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
        self.0.borrow_mut().remove(&pfn).is_some()
    }
}

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut live = self.0.borrow_mut();
        match live.remove(&from.0) {
            Some(o) => {
                assert_eq!(o, order, "compaction moved {:#x} at the wrong order", from.0);
                live.insert(to.0, o);
                Ok(())
            }
            None => Err(MigrateFail::Busy),
        }
    }
}

/// Everything observable about a node, for "nothing changed" assertions: counters (node,
/// zone and per-CPU), the order of every free list, pageblock types and every page's state
/// word.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    counters: Vec<u64>,
    lists: Vec<Vec<u64>>,
    blocks: Vec<MigrateType>,
    pages: Vec<PageInfo>,
}

pub fn fingerprint(node: &Node) -> Fingerprint {
    let shared = node.shared();
    let mut f =
        Fingerprint { counters: Vec::new(), lists: Vec::new(), blocks: Vec::new(), pages: Vec::new() };
    f.counters.extend(VmEvent::ALL.iter().map(|&e| shared.counters().event(e)));
    for z in 0..shared.zones().len() {
        zone_fingerprint(&node.zone(z), shared.nr_cpus(), &mut f);
    }
    f
}

fn zone_fingerprint(zone: &Zone, nr_cpus: usize, f: &mut Fingerprint) {
    let c = zone.counters();
    f.counters.extend(VmEvent::ALL.iter().map(|&e| c.event(e)));
    f.counters.extend(ZoneStat::ALL.iter().map(|&s| c.zone_stat(s)));
    f.counters.push(c.nr_free_highatomic());
    f.counters.push(c.nr_reserved_highatomic());
    f.counters.push(c.watermark_boost());
    for cpu in 0..nr_cpus {
        f.counters.push(c.cpu(cpu).count());
        f.counters.push(c.cpu(cpu).high());
    }
    for order in 0..=zone.max_order() {
        let fa = zone.shared().free_areas();
        f.counters.push(fa.nr_free(order));
        for mt in MigrateType::ALL {
            f.counters.push(fa.mt_nr_free(order, mt).unwrap_or(u64::MAX));
            f.lists.push(zone.free_list(order, mt).map(|p| p.0).collect());
        }
    }
    let pb = zone.shared().pageblocks();
    f.blocks.extend((0..pb.len()).map(|b| pb.migratetype(b)));
    let mm = zone.shared().memmap();
    f.pages.extend((0..mm.len() as u32).map(|i| mm.info(i)));
}

/// Free pages per order, all types (a buddyinfo row) of zone `z`.
pub fn buddyinfo(node: &Node, z: usize) -> Vec<u64> {
    let zone = node.zone(z);
    (0..=zone.max_order()).map(|o| zone.shared().free_areas().nr_free(o)).collect()
}

/// Order-0 requests of `gfp` until refused, taking back what the CPUs cache, until a round
/// gets nothing. Returns the pages.
pub fn fill(node: &Node, gfp: Gfp) -> Vec<Pfn> {
    let mut pages = Vec::new();
    loop {
        let start = pages.len();
        while let Ok(pfn) = node.alloc_pages(0, 0, gfp) {
            pages.push(pfn);
        }
        node.drain_all_pages();
        if pages.len() == start {
            return pages;
        }
    }
}

/// A driver over `node` whose reclaim passes record the order they work for and report
/// `progress` pages reclaimed without reclaiming anything.
pub struct ReclaimRecorder<'a> {
    pub node: &'a Node,
    pub orders: RefCell<Vec<u32>>,
    pub progress: u64,
}

impl<'a> ReclaimRecorder<'a> {
    pub fn new(node: &'a Node, progress: u64) -> Self {
        ReclaimRecorder { node, orders: RefCell::new(Vec::new()), progress }
    }
}

impl NodeLocks for ReclaimRecorder<'_> {
    type ZoneGuard<'a>
        = RefMut<'a, Zone>
    where
        Self: 'a;
    type PcpGuard<'a>
        = RefMut<'a, PerCpuPages>
    where
        Self: 'a;

    fn node(&self) -> &NodeShared {
        self.node.node()
    }

    fn lock_zone(&self, zone: usize) -> RefMut<'_, Zone> {
        self.node.lock_zone(zone)
    }

    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<RefMut<'_, PerCpuPages>> {
        self.node.trylock_pcp(cpu, zone)
    }

    fn lock_pcp(&self, cpu: usize, zone: usize) -> RefMut<'_, PerCpuPages> {
        self.node.lock_pcp(cpu, zone)
    }

    fn shrink_node(&self, _cpu: usize, sc: &mut ScanControl) {
        self.orders.borrow_mut().push(sc.order);
        sc.nr_reclaimed = sc.nr_reclaimed.max(self.progress);
    }
}

/// Moves `node`'s clock on from `now`, a microsecond at a time, until kswapd's
/// `balance_pgdat` run in progress (if any) has taken its last priority pass; returns the
/// clock then. kswapd's later runs, if it stays woken, are not waited for.
pub fn finish_kswapd_run(node: &mut Node, mut now: u64) -> u64 {
    while node.shared().daemons().kswapd_balancing.is_some() {
        now += 1;
        node.advance_to(now);
    }
    now
}
