//! One allocation path, two drivers: the same seeded operation sequence through the
//! simulator (`pageblock_core::Node`) and through the thread-safe `Allocator`, from one
//! thread, must hand out the same pages and leave byte-identical kernel reports.
//!
//! The sequence runs the whole slow path: raw allocations of mixed orders and GFP kinds,
//! movable handles that compaction moves, LRU pages that direct reclaim takes, explicit
//! compaction (`compact_memory`), frees, and enough pressure that reclaim and compaction
//! both act. Both drivers are wrapped in the same [`harness::Harness`]; with contention on,
//! their trylocks fail on the same seeded schedule. Handles are allocated and freed through
//! each driver itself (the library offers no other way), so their slow path meets neither
//! the harness's LRU lists nor its failed trylocks — on both drivers alike.

#[path = "../common/mod.rs"]
mod common;
mod handles;
mod harness;

use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;

use pageblock::{Allocator, Gfp, NodeConfig, Pfn, Policy};
use pageblock_core::compaction::compact_node;
use pageblock_core::vmscan::LruKind;
use pageblock_core::{page_alloc, show, Node, NodeLocks, VmEvent};

use common::Rng;
use handles::{Handles, LibHandles, SimHandles, Table, TableMover};
use harness::Harness;

const GFPS: [Gfp; 6] = [
    Gfp::HIGHUSER_MOVABLE,
    Gfp::KERNEL,
    Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0),
    Gfp::ATOMIC,
    Gfp::TRANSHUGE,
    Gfp(Gfp::KERNEL.0 | Gfp::DMA32.0),
];
const ORDERS: [u32; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 4, 9];
/// Every this many operations, one is `compact_memory`.
const COMPACT_EVERY: usize = 5_000;
const NR_CPUS: usize = 4;

/// A block the sequence holds.
enum Block {
    Raw { pfn: Pfn, order: u32 },
    Handle { key: usize },
}

/// The blocks held, with raw blocks findable by pfn (reclaim takes LRU pages from under
/// their owner).
#[derive(Default)]
struct Live {
    blocks: Vec<Block>,
    raw_at: HashMap<u64, usize>,
}

impl Live {
    fn push(&mut self, b: Block) {
        if let Block::Raw { pfn, .. } = b {
            self.raw_at.insert(pfn.0, self.blocks.len());
        }
        self.blocks.push(b);
    }

    fn swap_remove(&mut self, i: usize) -> Block {
        let b = self.blocks.swap_remove(i);
        if let Block::Raw { pfn, .. } = b {
            self.raw_at.remove(&pfn.0);
        }
        if let Some(Block::Raw { pfn, .. }) = self.blocks.get(i) {
            self.raw_at.insert(pfn.0, i);
        }
        b
    }

    /// Reclaim took the raw block at `pfn`.
    fn evicted(&mut self, pfn: u64) {
        let i = self.raw_at[&pfn];
        self.swap_remove(i);
    }
}

/// Run `ops` operations of the stream `seed` on `h` and `handles`; the log of what each
/// returned (pfns, failures, compaction results) and where the handles ended up.
fn run<L: NodeLocks>(h: &Harness<'_, L>, handles: &dyn Handles, seed: u64, ops: usize) -> String {
    let mut rng = Rng(seed);
    let mut log = String::new();
    let mut live = Live::default();
    // One handle lives throughout: the library offers compaction a mover only while a
    // handle is live, the simulator whenever it has one.
    let (_, anchor) = handles.alloc(0, 0).expect("an empty node");
    let mut keys = 1;
    writeln!(log, "anchor {anchor:?}").unwrap();
    for i in 0..ops {
        let r = rng.next();
        let cpu = (r % NR_CPUS as u64) as usize;
        let grow = if i < ops / 2 { 80 } else { 50 };
        if i % COMPACT_EVERY == COMPACT_EVERY - 1 {
            writeln!(log, "compact {:?}", compact_node(h, cpu, false)).unwrap();
        } else if (r >> 8) % 100 < grow || live.blocks.is_empty() {
            let order = ORDERS[(r >> 16) as usize % ORDERS.len()];
            if (r >> 24) % 4 == 0 {
                let got = handles.alloc(cpu, order);
                writeln!(log, "handle {order} {got:?}").unwrap();
                if let Some((key, _)) = got {
                    live.push(Block::Handle { key });
                    keys = key + 1;
                }
            } else {
                let gfp = GFPS[(r >> 32) as usize % GFPS.len()];
                let got = page_alloc::alloc_pages(h, cpu, order, gfp);
                for pfn in h.take_evicted() {
                    live.evicted(pfn);
                }
                writeln!(log, "alloc {order} {gfp:?} {got:?}").unwrap();
                if let Ok(pfn) = got {
                    live.push(Block::Raw { pfn, order });
                    if order == 0 && gfp == GFPS[0] {
                        h.lru_add(pfn, 0, if (r >> 40) & 1 == 0 { LruKind::File } else { LruKind::Anon });
                    } else if order == 0 && gfp == GFPS[2] {
                        h.lru_add(pfn, 0, LruKind::Slab);
                    }
                }
            }
        } else {
            match live.swap_remove((r >> 32) as usize % live.blocks.len()) {
                Block::Raw { pfn, order } => {
                    h.lru_del(pfn);
                    page_alloc::free_pages(h, cpu, pfn, order).unwrap();
                }
                Block::Handle { key } => handles.free(cpu, key),
            }
        }
    }
    for key in 0..keys {
        if let Some(pfn) = handles.pfn(key) {
            writeln!(log, "handle {key} at {pfn:?}").unwrap();
        }
    }
    log
}

/// What a run leaves: its log, the kernel's reports, the memmap's census, the trylocks it
/// failed.
#[derive(Debug, PartialEq)]
struct Outcome {
    log: String,
    reports: [String; 4],
    census: String,
    failed_trylocks: u64,
}

impl Outcome {
    fn of<L: NodeLocks>(log: String, h: &Harness<'_, L>, census: String) -> Outcome {
        let node = h.node();
        Outcome {
            log,
            reports: [
                show::pagetypeinfo(h, show::PagetypeinfoMode::Counts).render(),
                show::buddyinfo(node).render(),
                show::zoneinfo(node).render(),
                show::vmstat(node).render(),
            ],
            census,
            failed_trylocks: h.failed.get(),
        }
    }

    /// Assert `self` (the simulator's) and `lib` are the same, naming the first difference.
    fn assert_same(&self, lib: &Outcome) {
        if let Some((i, (s, l))) =
            self.log.lines().zip(lib.log.lines()).enumerate().find(|(_, (s, l))| s != l)
        {
            panic!("operation {i} differs: simulator `{s}`, library `{l}`");
        }
        assert_eq!(self.log.lines().count(), lib.log.lines().count());
        let names = ["pagetypeinfo", "buddyinfo", "zoneinfo", "vmstat"];
        for (name, (s, l)) in names.iter().zip(self.reports.iter().zip(&lib.reports)) {
            assert_eq!(s, l, "{name} differs between the simulator and the library");
        }
        assert_eq!(self.census, lib.census);
        assert_eq!(self.failed_trylocks, lib.failed_trylocks);
    }
}

fn config() -> (NodeConfig, Policy) {
    (NodeConfig::x86_64(512 << 20, NR_CPUS as u32), Policy::default())
}

/// The seeded sequence on the simulator; `contention`: the trylock schedule (seed, failures
/// per 256).
fn on_simulator(ops: usize, contention: Option<(u64, u64)>) -> (Outcome, Node) {
    let (config, policy) = config();
    let table = Rc::new(Table::default());
    let mut node = Node::new(config, policy).unwrap();
    node.set_mover(Box::new(TableMover(Rc::clone(&table))));
    let h = Harness::new(&node, contention);
    let log = run(&h, &SimHandles { node: &node, table }, 7, ops);
    let census = format!("{:?}", node.verify().unwrap());
    let outcome = Outcome::of(log, &h, census);
    drop(h);
    (outcome, node)
}

/// The same on the library.
fn on_library(ops: usize, contention: Option<(u64, u64)>) -> Outcome {
    let (config, policy) = config();
    let lib = Allocator::new(config, policy).unwrap();
    let h = Harness::new(lib.pgdat(), contention);
    let log = run(&h, &LibHandles { lib: &lib, slots: Default::default() }, 7, ops);
    let census = format!("{:?}", lib.verify().unwrap());
    Outcome::of(log, &h, census)
}

const OPS: usize = 200_000;

#[test]
fn simulator_and_allocator_hand_out_the_same_pages_through_reclaim_and_compaction() {
    let (sim, node) = on_simulator(OPS, None);
    sim.assert_same(&on_library(OPS, None));
    // The run reached every part of the slow path, and the lower zones.
    let n = node.shared();
    for ev in [
        VmEvent::WatermarkFail,
        VmEvent::PgscanDirect,
        VmEvent::PgstealDirect,
        VmEvent::SlabsScanned,
        VmEvent::CompactStall,
        VmEvent::CompactMigrateScanned,
        VmEvent::PgMigrateSuccess,
    ] {
        assert!(n.event(ev) > 0, "{ev:?} never happened");
    }
    assert!(n.zone(1).counters().event(VmEvent::PgAlloc) > 0, "DMA32 was used");
}

#[test]
fn simulator_and_allocator_agree_when_trylocks_fail_on_a_seeded_schedule() {
    let contention = Some((0x5eed, 64));
    let (sim, _) = on_simulator(OPS, contention);
    sim.assert_same(&on_library(OPS, contention));
    assert!(sim.failed_trylocks > 0);
    // A failed trylock sends the request to the buddy lists, the free straight to the zone:
    // other pages are handed out than without contention.
    let (quiet, _) = on_simulator(OPS, None);
    assert_ne!(sim.log, quiet.log);
}
