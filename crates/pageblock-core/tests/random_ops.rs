//! Property test: random geometries and random operation sequences, with `verify()` after
//! every operation. The cases below add up to over one million operations.
//!
//! `scripts/test` fixes `PROPTEST_RNG_SEED` so CI is reproducible; run with another seed to
//! explore. A failure prints the shrunk geometry and operations and is saved to
//! `random_ops.proptest-regressions`, which is replayed first on every later run.

mod common;

use std::sync::Arc;

use common::fingerprint;
use pageblock_core::free_area::FreeAreaLayout;
use pageblock_core::memmap::{PageInfo, PageState};
use pageblock_core::pcp::PerCpuPages;
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
    /// Allocate through CPU `cpu`'s per-CPU lists (refilled from the zone when empty).
    PcpAlloc { cpu: usize, order: u32, gfp: usize },
    /// Free the n-th live allocation through CPU `cpu`'s lists.
    PcpFree { cpu: usize, nth: usize },
    /// Drain CPU `cpu`'s lists.
    Drain { cpu: usize },
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
        4 => (0..2usize, 0..=max_order, 0..GFPS.len()).prop_map(|(cpu, order, gfp)| Op::PcpAlloc { cpu, order, gfp }),
        4 => (0..2usize, any::<usize>()).prop_map(|(cpu, nth)| Op::PcpFree { cpu, nth }),
        1 => (0..2usize).prop_map(|cpu| Op::Drain { cpu }),
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
    let layouts = [FreeAreaLayout::Plain, FreeAreaLayout::Counts, FreeAreaLayout::PerList];
    (3..=10u32, 0..=7u32, 0..4096u64, 256..2048u64, 0..3u64, any::<[bool; 6]>(), 0..3usize, 1..8u32).prop_map(
        move |(max_order, pb, start, pages, cma, flags, layout, batch)| {
            let [defrag, memory, nofrag, grouping, prefetch, fixed_high] = flags;
            // Small pageblocks are common so that HighAtomic reserves (at most 1% of the zone,
            // in whole pageblocks) and CMA areas fit in small zones.
            let pageblock_order = pb.min(max_order).clamp(2, 5);
            let cma_blocks = if pages >> pageblock_order >= 8 { cma } else { 0 };
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
                    buddy_prefetch: prefetch,
                    percpu_pagelist_high_fraction: if fixed_high { 8 } else { 0 },
                    pcp_batch: Some(batch),
                    free_area_layout: layouts[layout],
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

/// Everything a run drives: the zone, two CPUs' lists, and the blocks the "callers" hold.
struct Machine {
    zone: Zone,
    pcp: Vec<PerCpuPages>,
    live: Vec<(Pfn, u32)>,
}

impl Machine {
    fn pcp_alloc(&mut self, cpu: usize, order: u32, gfp: Gfp) -> Option<Pfn> {
        let shared = Arc::clone(self.zone.shared());
        let mt = pageblock_core::gfp::gfp_migratetype(gfp, self.zone.group_by_mobility()).ok()?;
        let pcp = &mut self.pcp[cpu];
        if !pcp.allowed_order(order) {
            return None;
        }
        let zone = &mut self.zone;
        let flags = AllocFlags::WMARK_LOW | AllocFlags::NOFRAGMENT;
        pcp.rmqueue(&shared, order, mt, |n, out| {
            zone.rmqueue_bulk(order, n, mt, flags, out);
        })
    }

    fn pcp_free(&mut self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), TestCaseError> {
        let shared = Arc::clone(self.zone.shared());
        if !self.pcp[cpu].allowed_order(order) {
            prop_assert_eq!(self.zone.free_pages(pfn, order), Ok(()));
            return Ok(());
        }
        let cached = PageInfo { state: PageState::Pcp, order, ..PageInfo::TAIL };
        prop_assert_eq!(shared.claim_for_free(pfn, order, cached), Ok(()));
        let zone = &mut self.zone;
        let mt = shared.pageblock_migratetype(pfn.0);
        self.pcp[cpu].free(&shared, pfn, order, mt, |blocks| zone.free_pcppages_bulk(blocks));
        Ok(())
    }

    fn drain(&mut self, cpu: usize) {
        let shared = Arc::clone(self.zone.shared());
        let zone = &mut self.zone;
        self.pcp[cpu].drain(&shared, |blocks| zone.free_pcppages_bulk(blocks));
    }

    fn check(&self, after: &Op) -> Result<(), TestCaseError> {
        let census = self.zone.verify().map_err(|e| TestCaseError::fail(format!("after {after:?}: {e}")))?;
        let cached: u64 = self.pcp.iter().map(|p| p.count()).sum();
        prop_assert_eq!(census.pcp, cached, "per-CPU pages after {:?}", after);
        let held: u64 = self.live.iter().map(|&(_, o)| 1u64 << o).sum();
        prop_assert_eq!(census.allocated, held, "allocated pages after {:?}", after);
        Ok(())
    }
}

fn run(g: &Geometry, ops: &[Op]) -> Result<(), TestCaseError> {
    let zone = build(g);
    let pcp = (0..2).map(|cpu| PerCpuPages::new(cpu, zone.shared(), &g.policy)).collect();
    let mut m = Machine { zone, pcp, live: Vec::new() };
    for op in ops {
        match *op {
            Op::Alloc { order, gfp } => {
                if let Ok(p) = m.zone.alloc_pages(order.min(g.max_order), GFPS[gfp]) {
                    prop_assert!(p.is_aligned(order.min(g.max_order)));
                    m.live.push((p, order.min(g.max_order)));
                }
            }
            Op::PcpAlloc { cpu, order, gfp } => {
                let order = order.min(g.max_order);
                if let Some(p) = m.pcp_alloc(cpu, order, GFPS[gfp]) {
                    prop_assert!(p.is_aligned(order));
                    m.live.push((p, order));
                }
            }
            Op::Free { nth } | Op::PcpFree { nth, .. } if !m.live.is_empty() => {
                let (p, o) = m.live.swap_remove(nth % m.live.len());
                match *op {
                    Op::PcpFree { cpu, .. } => m.pcp_free(cpu, p, o)?,
                    _ => prop_assert_eq!(m.zone.free_pages(p, o), Ok(())),
                }
            }
            Op::Free { .. } | Op::PcpFree { .. } => {}
            Op::Drain { cpu } => m.drain(cpu),
            Op::Bulk { order, count, mt } => {
                let mt = [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable][mt];
                let mut got = Vec::new();
                let flags = AllocFlags::WMARK_LOW | AllocFlags::NOFRAGMENT;
                let n = m.zone.rmqueue_bulk(order.min(g.max_order), count, mt, flags, &mut got);
                prop_assert_eq!(n, got.len());
                m.zone.verify().map_err(|e| TestCaseError::fail(format!("after bulk refill: {e}")))?;
                for p in got {
                    m.zone.free_pcp_page(p, order.min(g.max_order));
                }
            }
            Op::Misuse { nth, double } if !m.live.is_empty() => {
                let (p, o) = m.live[nth % m.live.len()];
                let z = &mut m.zone;
                if double {
                    z.free_pages(p, o).unwrap();
                    m.live.swap_remove(nth % m.live.len());
                    let after_free = fingerprint(z);
                    prop_assert!(z.free_pages(p, o).is_err());
                    prop_assert_eq!(after_free, fingerprint(z));
                } else {
                    let before = fingerprint(z);
                    prop_assert!(z.free_pages(p, (o + 1) % (g.max_order + 1)).is_err());
                    prop_assert_eq!(before, fingerprint(z));
                }
            }
            Op::Misuse { .. } => {}
        }
        m.check(op)?;
    }
    for (p, o) in std::mem::take(&mut m.live) {
        prop_assert_eq!(m.zone.free_pages(p, o), Ok(()));
    }
    m.drain(0);
    m.drain(1);
    prop_assert_eq!(m.zone.nr_free_pages() + m.zone.nr_isolated_free_pages(), g.pages);
    m.zone.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
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
