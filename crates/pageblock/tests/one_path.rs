//! One allocation path, two drivers: the same seeded operation sequence through the
//! simulator (`pageblock_core::Node`) and through the thread-safe `Allocator` on one thread
//! must leave byte-identical kernel reports.

use pageblock::{Allocator, Gfp, NodeConfig, Pfn, Policy};
use pageblock_core::{show, Node, NodeLocks};

/// splitmix64: a seeded stream for the operation sequence.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

const GFPS: [Gfp; 6] = [
    Gfp::HIGHUSER_MOVABLE,
    Gfp::KERNEL,
    Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0),
    Gfp::ATOMIC,
    Gfp::TRANSHUGE,
    Gfp(Gfp::KERNEL.0 | Gfp::DMA32.0),
];

/// Drive `alloc` / `free` (each given the CPU) with `ops` seeded operations that fill the
/// node past its watermarks and churn.
fn drive(
    seed: u64,
    ops: usize,
    nr_cpus: u64,
    alloc: &dyn Fn(usize, u32, Gfp) -> Option<Pfn>,
    free: &dyn Fn(usize, Pfn, u32),
) {
    let mut rng = Rng(seed);
    let mut live: Vec<(Pfn, u32)> = Vec::new();
    for i in 0..ops {
        let r = rng.next();
        let cpu = (r % nr_cpus) as usize;
        // Fill for the first half, then churn around the watermarks.
        let grow = if i < ops / 2 { 90 } else { 50 };
        if (r >> 8) % 100 < grow || live.is_empty() {
            let order = [0, 0, 0, 0, 1, 2, 3, 9][(r >> 16) as usize % 8];
            if let Some(p) = alloc(cpu, order, GFPS[(r >> 24) as usize % GFPS.len()]) {
                live.push((p, order));
            }
        } else {
            let (p, o) = live.swap_remove((r >> 32) as usize % live.len());
            free(cpu, p, o);
        }
    }
}

fn reports(l: &impl NodeLocks) -> [String; 4] {
    let node = l.node();
    [
        show::pagetypeinfo(l, show::PagetypeinfoMode::Counts).render(),
        show::buddyinfo(node).render(),
        show::zoneinfo(node).render(),
        show::vmstat(node).render(),
    ]
}

#[test]
fn simulator_and_allocator_leave_byte_identical_reports() {
    let config = NodeConfig::x86_64(3584 << 20, 4);
    let policy = Policy { defrag_mode: false, ..Policy::default() };
    let ops = 400_000;
    let sim = Node::new(config.clone(), policy.clone()).unwrap();
    drive(7, ops, 4, &|cpu, o, g| sim.alloc_pages(cpu, o, g).ok(), &|cpu, p, o| {
        sim.free_pages(cpu, p, o).unwrap()
    });
    let lib = Allocator::new(config, policy).unwrap();
    drive(7, ops, 4, &|cpu, o, g| lib.on_cpu(cpu).alloc_pages(o, g).ok(), &|cpu, p, o| {
        lib.on_cpu(cpu).free_pages(p, o).unwrap()
    });
    let (a, b) = (reports(&sim), reports(lib.pgdat()));
    for (name, (x, y)) in ["pagetypeinfo", "buddyinfo", "zoneinfo", "vmstat"].iter().zip(a.iter().zip(&b)) {
        assert_eq!(x, y, "{name} differs between the simulator and the library");
    }
    // The run did reach the slow path and the lower zones.
    assert!(sim.shared().event(pageblock_core::VmEvent::WatermarkFail) > 0);
    assert!(sim.shared().zone(1).counters().event(pageblock_core::VmEvent::PgAlloc) > 0, "DMA32 was used");
    sim.verify().unwrap();
    lib.verify().unwrap();
}
