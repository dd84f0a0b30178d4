//! Property test: random geometries and random operation sequences, with `verify()` after
//! every operation. The cases below add up to over one million operations.
//!
//! `scripts/test` fixes `PROPTEST_RNG_SEED` so CI is reproducible; run with another seed to
//! explore. A failure prints the shrunk geometry and operations and is saved to
//! `random_ops.proptest-regressions`, which is replayed first on every later run.

mod common;

use common::fingerprint;
use pageblock_core::unstable::ZoneInternals;
use pageblock_core::{
    AllocFlags, Boot, BulkFree, FreeAreaLayout, Gfp, MemmapLayout, MigrateType, Node, NodeConfig, NodeLocks,
    PcpBatch, Pfn, Policy, SeedPatches, SpeedOnly, Sysctl, ZoneConfig, ZoneType,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Allocate `order` with one of a few GFP masks on CPU `cpu`.
    Alloc { cpu: usize, order: u32, gfp: usize },
    /// Free the n-th live allocation (modulo the count) on CPU `cpu`.
    Free { cpu: usize, nth: usize },
    /// Refill a pretend per-CPU list of zone `zone` with `count` blocks under one zone lock
    /// hold, then drain them back (`rmqueue_bulk` and `free_pcppages_bulk` alone).
    Bulk { zone: usize, order: u32, count: usize, mt: usize },
    /// A misuse: free a live block with the wrong order, or free one twice.
    Misuse { nth: usize, double: bool },
    /// Drain every CPU's lists.
    DrainAll,
    /// Let simulated time pass (the vmstat worker decays per-CPU high marks).
    Tick { ms: u64 },
}

const GFPS: [Gfp; 8] = [
    Gfp::HIGHUSER_MOVABLE,
    Gfp::KERNEL,
    Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0),
    Gfp::ATOMIC,
    Gfp::TRANSHUGE,
    Gfp(Gfp::KERNEL.0 | Gfp::HIGH.0),
    Gfp(Gfp::KERNEL.0 | Gfp::DMA32.0),
    Gfp(Gfp::KERNEL.0 | Gfp::RETRY_MAYFAIL.0 | Gfp::COMP.0),
];

fn op(max_order: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..2usize, 0..=max_order, 0..GFPS.len()).prop_map(|(cpu, order, gfp)| Op::Alloc { cpu, order, gfp }),
        9 => (0..2usize, any::<usize>()).prop_map(|(cpu, nth)| Op::Free { cpu, nth }),
        1 => (0..2usize, 0..=3u32, 1..40usize, 0..3usize)
            .prop_map(|(zone, order, count, mt)| Op::Bulk { zone, order, count, mt }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(nth, double)| Op::Misuse { nth, double }),
        1 => Just(Op::DrainAll),
        1 => (0..3000u64).prop_map(|ms| Op::Tick { ms }),
    ]
}

#[derive(Clone, Debug)]
struct Geometry {
    start_pfn: u64,
    pages: u64,
    /// A ZONE_DMA32 of this many pages below the main zone (0: a single ZONE_NORMAL).
    dma32_pages: u64,
    max_order: u32,
    pageblock_order: u32,
    cma_blocks: u64,
    memmap_layout: MemmapLayout,
    policy: Policy,
}

fn geometry() -> impl Strategy<Value = Geometry> {
    let layouts = [FreeAreaLayout::Plain, FreeAreaLayout::Counts, FreeAreaLayout::PerList];
    (
        (3..=10u32, 0..=7u32, 0..4096u64, 256..2048u64, 0..3u64, prop_oneof![Just(0u64), 64..1024u64]),
        (any::<[bool; 6]>(), 0..3usize, 1..8u32, 0..3usize, 0..3usize),
    )
        .prop_map(
            move |((max_order, pb, start, pages, cma, dma32_pages), (flags, layout, batch, mm, bulk))| {
                let [defrag, memory, nofrag, grouping, prefetch, fixed_high] = flags;
                // Small pageblocks are common so that HighAtomic reserves (at most 1% of the zone,
                // in whole pageblocks) and CMA areas fit in small zones.
                let pageblock_order = pb.min(max_order).clamp(2, 5);
                let cma_blocks = if pages >> pageblock_order >= 8 { cma } else { 0 };
                Geometry {
                    memmap_layout: [
                        MemmapLayout::Split,
                        MemmapLayout::Records(12),
                        MemmapLayout::Records(64),
                    ][mm],
                    start_pfn: 0x10000 + start,
                    pages,
                    dma32_pages,
                    max_order,
                    pageblock_order,
                    cma_blocks,
                    policy: Policy {
                        boot: Boot {
                            config_zone_dma32: nofrag,
                            group_by_mobility: grouping,
                            pcp_batch: Some(PcpBatch::new(batch).unwrap()),
                            ..Boot::default()
                        },
                        seed_patches: SeedPatches {
                            rmqueue_mode_memory: memory,
                            free_area_layout: layouts[layout],
                            ..SeedPatches::default()
                        },
                        speed_only: SpeedOnly {
                            buddy_prefetch: prefetch,
                            bulk_free: [BulkFree::Pipelined, BulkFree::SinglePass, BulkFree::TwoPass][bulk],
                        },
                        ..Policy::default()
                    }
                    .with_sysctl(Sysctl::DefragMode, u64::from(defrag))
                    .and_then(|p| {
                        p.with_sysctl(Sysctl::PercpuPagelistHighFraction, if fixed_high { 8 } else { 0 })
                    })
                    .and_then(|p| p.with_sysctl(Sysctl::MinFreeKbytes, 64))
                    .unwrap(),
                }
            },
        )
}

fn build(g: &Geometry) -> Node {
    let zone = |t, start, pages| ZoneConfig {
        max_order: g.max_order,
        pageblock_order: g.pageblock_order,
        config_cma: true,
        memmap_layout: g.memmap_layout,
        ..ZoneConfig::new(t, start, pages)
    };
    let mut zones = Vec::new();
    if g.dma32_pages > 0 {
        zones.push(zone(ZoneType::Dma32, g.start_pfn - 8192, g.dma32_pages));
    }
    zones.push(ZoneConfig {
        cma_pages: g.cma_blocks << g.pageblock_order,
        ..zone(ZoneType::Normal, g.start_pfn, g.pages)
    });
    Node::new(NodeConfig { zones }, g.policy.clone()).expect("valid geometry")
}

/// The node and the blocks the "callers" hold.
struct Machine {
    node: Node,
    live: Vec<(Pfn, u32)>,
    now_us: u64,
}

impl Machine {
    fn check(&self, after: &Op) -> Result<(), TestCaseError> {
        let census = self.node.verify().map_err(|e| TestCaseError::fail(format!("after {after:?}: {e}")))?;
        let held: u64 = self.live.iter().map(|&(_, o)| 1u64 << o).sum();
        prop_assert_eq!(census.allocated, held, "allocated pages after {:?}", after);
        Ok(())
    }

    fn bulk(&mut self, zone: usize, order: u32, count: usize, mt: usize) -> Result<(), TestCaseError> {
        let zone = zone % self.node.shared().zones().len();
        // With grouping by mobility off every request is Unmovable (`gfp_migratetype`).
        let mt = if self.node.shared().group_by_mobility() { mt } else { 0 };
        let mt = [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable][mt];
        let mut got = Vec::new();
        let flags = AllocFlags::WMARK_LOW | AllocFlags::NOFRAGMENT;
        let n = self.node.lock_zone(zone).rmqueue_bulk(order, count, mt, flags, &mut got);
        prop_assert_eq!(n, got.len());
        self.node.zone(zone).verify().map_err(|e| TestCaseError::fail(format!("after bulk refill: {e}")))?;
        self.node.lock_zone(zone).free_pcppages_bulk(&got.iter().map(|&p| (p, order)).collect::<Vec<_>>());
        Ok(())
    }

    fn misuse(&mut self, g: &Geometry, nth: usize, double: bool) -> Result<(), TestCaseError> {
        let (p, o) = self.live[nth % self.live.len()];
        if double {
            self.node.free_pages(0, p, o).unwrap();
            self.live.swap_remove(nth % self.live.len());
            let after_free = fingerprint(&self.node);
            prop_assert!(self.node.free_pages(1, p, o).is_err());
            prop_assert_eq!(after_free, fingerprint(&self.node));
        } else {
            let before = fingerprint(&self.node);
            prop_assert!(self.node.free_pages(0, p, (o + 1) % (g.max_order + 1)).is_err());
            prop_assert_eq!(before, fingerprint(&self.node));
        }
        Ok(())
    }
}

fn run(g: &Geometry, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut m = Machine { node: build(g), live: Vec::new(), now_us: 0 };
    for op in ops {
        match *op {
            Op::Alloc { cpu, order, gfp } => {
                let order = order.min(g.max_order);
                if let Ok(p) = m.node.alloc_pages(cpu, order, GFPS[gfp]) {
                    prop_assert!(p.is_aligned(order));
                    m.live.push((p, order));
                }
            }
            Op::Free { cpu, nth } if !m.live.is_empty() => {
                let (p, o) = m.live.swap_remove(nth % m.live.len());
                prop_assert_eq!(m.node.free_pages(cpu, p, o), Ok(()));
            }
            Op::Free { .. } => {}
            Op::Bulk { zone, order, count, mt } => m.bulk(zone, order.min(g.max_order), count, mt)?,
            Op::Misuse { nth, double } if !m.live.is_empty() => m.misuse(g, nth, double)?,
            Op::Misuse { .. } => {}
            Op::DrainAll => m.node.drain_all_pages(),
            Op::Tick { ms } => {
                m.now_us += ms * 1000;
                m.node.advance_to(m.now_us);
            }
        }
        m.check(op)?;
    }
    for (p, o) in std::mem::take(&mut m.live) {
        prop_assert_eq!(m.node.free_pages(0, p, o), Ok(()));
    }
    m.node.drain_all_pages();
    let isolated: u64 =
        (0..m.node.shared().zones().len()).map(|z| m.node.zone(z).nr_isolated_free_pages()).sum();
    prop_assert_eq!(m.node.shared().nr_free_pages() + isolated, g.pages + g.dma32_pages);
    m.node.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(())
}

proptest! {
    // 256 cases x 4000 operations = 1,024,000 operations, each followed by verify().
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 2000, ..ProptestConfig::default() })]
    #[test]
    fn random_operations_keep_every_invariant(
        (g, ops) in geometry().prop_flat_map(|g| {
            let max = g.max_order;
            (Just(g), proptest::collection::vec(op(max), 4000))
        })
    ) {
        run(&g, &ops)?;
    }
}
