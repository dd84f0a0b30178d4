//! The reports as 6.18 prints them: regression tests for divergences D4, D5 and D6 of the
//! audit.

use pageblock_core::show::{self, PagetypeinfoMode};
use pageblock_core::unstable::ZoneInternals;
use pageblock_core::{Gfp, Node, NodeConfig, NodeLocks, Pfn, Policy, Sysctl, ZoneConfig};
use pageblock_formats::zoneinfo::ZoneInfo;

/// D4: by default pagetypeinfo prints `>100000` at the cap, as 6.18 and the seed-000 patch
/// do, whether it reads counts or walks; only `Counts` prints the exact number.
#[test]
fn pagetypeinfo_is_capped_by_default() {
    let n = Node::single_zone(ZoneConfig::normal(2 << 30), Policy::default()).unwrap();
    // 150000 free order-0 pages on one list: every other page of the first 300000.
    let held: Vec<Pfn> = (0..300_000).map(|_| n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap()).collect();
    n.drain_all_pages();
    let mut sorted = held;
    sorted.sort_unstable();
    for p in sorted.iter().filter(|p| p.0 % 2 == 0) {
        n.free_pages(0, *p, 0).unwrap();
    }
    n.drain_all_pages();
    let by_policy = show::pagetypeinfo_by_policy(&n).render();
    assert!(by_policy.contains(">100000"), "{by_policy}");
    assert_eq!(by_policy, show::pagetypeinfo_walk(&n).render(), "counting prints what walking prints");
    let exact = show::pagetypeinfo(&n, PagetypeinfoMode::Counts).render();
    assert!(!exact.contains('>') && exact.contains("150000"), "{exact}");
}

/// D5: zoneinfo prints the per-node block under the first populated zone and every zone
/// stat line a 6.18 kernel prints, in its order.
#[test]
fn zoneinfo_prints_every_line_of_a_real_one() {
    let real = ZoneInfo::parse(include_str!("../../pageblock-formats/tests/data/zoneinfo.txt")).unwrap();
    let n = Node::new(NodeConfig::x86_64(4 << 30, 2), Policy::default()).unwrap();
    let ours = show::zoneinfo(n.shared());
    let names = |zi: &ZoneInfo| -> Vec<(String, Vec<String>, Option<Vec<String>>)> {
        zi.zones
            .iter()
            .map(|z| {
                let stats = z
                    .populated
                    .as_ref()
                    .map_or(Vec::new(), |p| p.stats.iter().map(|s| s.0.clone()).collect());
                let node = z.node_stats.as_ref().map(|v| v.iter().map(|s| s.0.clone()).collect());
                (z.zone.clone(), stats, node)
            })
            .collect()
    };
    assert_eq!(names(&ours), names(&real), "zones, stat lines and the per-node block");
    let text = ours.render();
    assert_eq!(ZoneInfo::parse(&text).unwrap().render(), text);
}

/// D6: page_owner's mixed-block count puts CMA blocks under Movable, and looks only at the
/// first pageblock of an allocation spanning several.
#[test]
fn mixed_blocks_are_counted_as_page_owner_counts_them() {
    let cfg = ZoneConfig { config_cma: true, cma_pages: 4 << 9, ..ZoneConfig::normal(64 << 20) };
    let n = Node::single_zone(cfg, Policy::default()).unwrap();
    let z = n.shared().zone(0);
    let types = show::reported_migratetypes(true);
    let col = |name: &str| types.iter().position(|t| t.name() == name).unwrap();
    // A movable request may use CMA: allocate until one lands in a CMA block.
    let mut held = Vec::new();
    let cma = loop {
        let p = n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap();
        held.push(p);
        if z.pageblock_migratetype(p.0) == pageblock_core::MigrateType::Cma {
            break p;
        }
    };
    let _ = cma;
    let counts = show::mixed_block_counts(z);
    assert!(counts[col("Movable")] >= 1, "a CMA block with a Movable page counts under Movable: {counts:?}");
    assert_eq!(counts[col("CMA")], 0, "never under CMA");
    // An unmovable order-10 allocation in two Movable-typed pageblocks: it claims whole
    // blocks, so its type matches the first block and the scan skips the second.
    let m = Node::single_zone(
        ZoneConfig::normal(64 << 20),
        Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 128).unwrap(),
    )
    .unwrap();
    let big = m.alloc_pages(0, 10, Gfp::HIGHUSER_MOVABLE).unwrap();
    m.lock_zone(0).split_page(big.0, 10, 10);
    let zm = m.shared().zone(0);
    assert_eq!(show::mixed_block_counts(zm).iter().sum::<u64>(), 0);
}
