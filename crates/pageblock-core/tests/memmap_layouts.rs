//! Property test: the memmap layout and the bulk-free prefetching change speed, never a
//! decision. One random operation sequence runs on nodes that differ only in
//! `ZoneConfig::memmap_layout` and `SpeedOnly::bulk_free`/`buddy_prefetch`; after every
//! operation every node must have answered the same and be in the same state (counters,
//! free-list order, pageblock types, every page's state word), and `verify()` must pass.

mod common;

use common::fingerprint;
use pageblock_core::config::KERNEL_STRUCT_PAGE_BYTES;
use pageblock_core::{
    Boot, BulkFree, Gfp, MemmapLayout, Node, NodeConfig, PcpBatch, Pfn, Policy, SpeedOnly, Sysctl,
    ZoneConfig, ZoneType,
};
use proptest::prelude::*;

/// The settings compared: pageblock's default first, then the kernel's shapes.
const VARIANTS: [(MemmapLayout, BulkFree, bool); 5] = [
    (MemmapLayout::Split, BulkFree::Pipelined, false),
    (MemmapLayout::Records(12), BulkFree::Pipelined, false),
    (MemmapLayout::Records(12), BulkFree::TwoPass, true),
    (MemmapLayout::Records(KERNEL_STRUCT_PAGE_BYTES), BulkFree::SinglePass, true),
    (MemmapLayout::Split, BulkFree::SinglePass, false),
];

const GFPS: [Gfp; 4] = [Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL, Gfp::ATOMIC, Gfp::TRANSHUGE];

#[derive(Clone, Debug)]
enum Op {
    Alloc { cpu: usize, order: u32, gfp: usize },
    Free { cpu: usize, nth: usize },
    DrainAll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..2usize, 0..=6u32, 0..GFPS.len()).prop_map(|(cpu, order, gfp)| Op::Alloc { cpu, order, gfp }),
        10 => (0..2usize, any::<usize>()).prop_map(|(cpu, nth)| Op::Free { cpu, nth }),
        1 => Just(Op::DrainAll),
    ]
}

fn node(pages: u64, batch: u32, (layout, bulk_free, buddy_prefetch): (MemmapLayout, BulkFree, bool)) -> Node {
    let zone = ZoneConfig {
        max_order: 6,
        pageblock_order: 4,
        memmap_layout: layout,
        ..ZoneConfig::new(ZoneType::Normal, 0x10_0003, pages)
    };
    let policy = Policy {
        speed_only: SpeedOnly { bulk_free, buddy_prefetch },
        boot: Boot { pcp_batch: Some(PcpBatch::new(batch).unwrap()), ..Boot::default() },
        ..Policy::default()
    };
    let policy = policy.with_sysctl(Sysctl::MinFreeKbytes, 64).unwrap();
    Node::new(NodeConfig::single(zone), policy).expect("valid geometry")
}

fn run(pages: u64, batch: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let nodes: Vec<Node> = VARIANTS.iter().map(|&v| node(pages, batch, v)).collect();
    let mut live: Vec<(Pfn, u32)> = Vec::new();
    for op in ops {
        match *op {
            Op::Alloc { cpu, order, gfp } => {
                let got: Vec<_> = nodes.iter().map(|n| n.alloc_pages(cpu, order, GFPS[gfp])).collect();
                prop_assert!(got.windows(2).all(|w| w[0] == w[1]), "{op:?} answered {got:?}");
                if let Ok(p) = got[0] {
                    live.push((p, order));
                }
            }
            Op::Free { cpu, nth } if !live.is_empty() => {
                let (p, o) = live.swap_remove(nth % live.len());
                for n in &nodes {
                    prop_assert_eq!(n.free_pages(cpu, p, o), Ok(()));
                }
            }
            Op::Free { .. } => {}
            Op::DrainAll => nodes.iter().for_each(Node::drain_all_pages),
        }
        let first = fingerprint(&nodes[0]);
        for (n, v) in nodes.iter().zip(VARIANTS) {
            n.verify().map_err(|e| TestCaseError::fail(format!("{v:?} after {op:?}: {e}")))?;
            prop_assert_eq!(&fingerprint(n), &first, "{:?} differs after {:?}", v, op);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn layouts_and_bulk_free_settings_decide_alike(
        pages in 300..3000u64,
        batch in 1..40u32,
        ops in proptest::collection::vec(op(), 1500),
    ) {
        run(pages, batch, &ops)?;
    }
}

#[test]
fn a_record_size_the_memmap_cannot_hold_is_a_config_error() {
    for bytes in [0, 8, 13, 260] {
        let zone = ZoneConfig { memmap_layout: MemmapLayout::Records(bytes), ..ZoneConfig::normal(64 << 20) };
        assert_eq!(zone.validate(), Err(pageblock_core::ConfigError::StructPageBytes(bytes)));
    }
    for bytes in [12, 16, 64, 256] {
        let zone = ZoneConfig { memmap_layout: MemmapLayout::Records(bytes), ..ZoneConfig::normal(64 << 20) };
        assert_eq!(zone.validate(), Ok(()));
    }
}
