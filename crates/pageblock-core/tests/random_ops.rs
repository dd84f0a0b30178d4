//! Property test: random geometries and random operation sequences, with `verify()` after
//! every operation. The cases below add up to over one million operations.
//!
//! `scripts/test` fixes `PROPTEST_RNG_SEED` so CI is reproducible; run with another seed to
//! explore. A failure prints the shrunk geometry and operations and is saved to
//! `random_ops.proptest-regressions`, which is replayed first on every later run.

mod common;

use common::fingerprint;
use pageblock_core::{AllocFlags, Gfp, MigrateType, Pfn, Policy, Zone, ZoneConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Allocate `order` with one of a few GFP masks.
    Alloc { order: u32, gfp: usize },
    /// Free the n-th live allocation (modulo the count).
    Free { nth: usize },
    /// Refill a pretend per-CPU list with `count` blocks, then drain them.
    Bulk { order: u32, count: usize, mt: usize },
    /// A misuse: free a live block with the wrong order, or free one twice.
    Misuse { nth: usize, double: bool },
}

const GFPS: [Gfp; 6] = [
    Gfp::HIGHUSER_MOVABLE,
    Gfp::KERNEL,
    Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0),
    Gfp::ATOMIC,
    Gfp::TRANSHUGE,
    Gfp(Gfp::KERNEL.0 | Gfp::HIGH.0),
];

fn op(max_order: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..=max_order, 0..GFPS.len()).prop_map(|(order, gfp)| Op::Alloc { order, gfp }),
        5 => any::<usize>().prop_map(|nth| Op::Free { nth }),
        1 => (0..=3u32, 1..40usize, 0..3usize).prop_map(|(order, count, mt)| Op::Bulk { order, count, mt }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(nth, double)| Op::Misuse { nth, double }),
    ]
}

#[derive(Clone, Debug)]
struct Geometry {
    start_pfn: u64,
    pages: u64,
    max_order: u32,
    pageblock_order: u32,
    cma_blocks: u64,
    policy: Policy,
}

fn geometry() -> impl Strategy<Value = Geometry> {
    (
        3..=10u32,
        0..=7u32,
        0..4096u64,
        256..2048u64,
        0..3u64,
        any::<[bool; 4]>(),
    )
        .prop_map(
            |(max_order, pb, start, pages, cma, [defrag, memory, nofrag, grouping])| {
                // Small pageblocks are common so that HighAtomic reserves (at most 1% of the zone,
                // in whole pageblocks) and CMA areas fit in small zones.
                let pageblock_order = pb.min(max_order).clamp(2, 5);
                let cma_blocks = if pages >> pageblock_order >= 8 {
                    cma
                } else {
                    0
                };
                Geometry {
                    start_pfn: 0x10000 + start,
                    pages,
                    max_order,
                    pageblock_order,
                    cma_blocks,
                    policy: Policy {
                        defrag_mode: defrag,
                        rmqueue_mode_memory: memory,
                        nofragment: nofrag,
                        group_by_mobility: grouping,
                        min_free_kbytes: Some(64),
                        ..Policy::default()
                    },
                }
            },
        )
}

fn build(g: &Geometry) -> Zone {
    let cfg = ZoneConfig {
        start_pfn: g.start_pfn,
        present_pages: g.pages,
        max_order: g.max_order,
        pageblock_order: g.pageblock_order,
        config_cma: true,
        cma_pages: g.cma_blocks << g.pageblock_order,
        ..ZoneConfig::normal(0)
    };
    Zone::new(cfg, g.policy.clone()).expect("valid geometry")
}

fn run(g: &Geometry, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut z = build(g);
    z.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut live: Vec<(Pfn, u32)> = Vec::new();
    for op in ops {
        match *op {
            Op::Alloc { order, gfp } => {
                if let Ok(p) = z.alloc_pages(order.min(g.max_order), GFPS[gfp]) {
                    prop_assert!(p.is_aligned(order.min(g.max_order)));
                    live.push((p, order.min(g.max_order)));
                }
            }
            Op::Free { nth } if !live.is_empty() => {
                let (p, o) = live.swap_remove(nth % live.len());
                prop_assert_eq!(z.free_pages(p, o), Ok(()));
            }
            Op::Free { .. } => {}
            Op::Bulk { order, count, mt } => {
                let mt = [
                    MigrateType::Unmovable,
                    MigrateType::Movable,
                    MigrateType::Reclaimable,
                ][mt];
                let mut got = Vec::new();
                let flags = AllocFlags::WMARK_LOW | AllocFlags::NOFRAGMENT;
                let n = z.rmqueue_bulk(order.min(g.max_order), count, mt, flags, &mut got);
                prop_assert_eq!(n, got.len());
                z.verify()
                    .map_err(|e| TestCaseError::fail(format!("after bulk refill: {e}")))?;
                for p in got {
                    z.free_pcp_page(p, order.min(g.max_order));
                }
            }
            Op::Misuse { nth, double } if !live.is_empty() => {
                let (p, o) = live[nth % live.len()];
                let before = fingerprint(&z);
                if double {
                    z.free_pages(p, o).unwrap();
                    live.swap_remove(nth % live.len());
                    let after_free = fingerprint(&z);
                    prop_assert!(z.free_pages(p, o).is_err());
                    prop_assert_eq!(after_free, fingerprint(&z));
                } else {
                    prop_assert!(z.free_pages(p, (o + 1) % (g.max_order + 1)).is_err());
                    prop_assert_eq!(before, fingerprint(&z));
                }
            }
            Op::Misuse { .. } => {}
        }
        z.verify()
            .map_err(|e| TestCaseError::fail(format!("after {op:?}: {e}")))?;
    }
    let census = z.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let held: u64 = live.iter().map(|&(_, o)| 1u64 << o).sum();
    prop_assert_eq!(census.allocated, held);
    for (p, o) in live {
        prop_assert_eq!(z.free_pages(p, o), Ok(()));
    }
    prop_assert_eq!(z.nr_free_pages() + z.nr_isolated_free_pages(), g.pages);
    z.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
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
