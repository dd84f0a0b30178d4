//! Per-CPU page lists as 6.18 sizes them: the high mark's decay on simulated time and the
//! cache-size rule for runs of high-order frees.

use pageblock_core::{Boot, Gfp, Node, Pfn, Policy, ZoneConfig};

/// The vmstat worker runs every simulated second and decays a CPU's auto-tuned high mark,
/// freeing what it caches above it (`decay_pcp_high`).
#[test]
fn simulated_seconds_decay_per_cpu_caches() {
    let mut n = Node::single_zone(ZoneConfig::normal(1 << 30), Policy::default()).unwrap();
    let high_min = u64::from(n.shared().zone(0).pageset().high_min);
    // Refills on an empty list raise the high mark (`nr_pcp_alloc`) ...
    let mut held: Vec<Pfn> =
        (0..20_000).map(|_| n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap()).collect();
    // ... and frees that an allocation keeps interrupting never count as a run of frees
    // (`free_high`), so the list grows up to it.
    let mut kept = Vec::new();
    while held.len() >= 2 {
        for p in held.drain(held.len() - 2..) {
            n.free_pages(0, p, 0).unwrap();
        }
        kept.push(n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap());
    }
    let cached = n.zone(0).counters().cpu(0).count();
    let high = n.zone(0).counters().cpu(0).high();
    assert!(high > high_min && cached > high_min, "cached {cached} high {high} high_min {high_min}");
    n.advance_to(999_999);
    assert_eq!(n.zone(0).counters().cpu(0).count(), cached, "nothing before the first second");
    n.advance_to(10_000_000);
    let after = n.zone(0).counters().cpu(0).count();
    let decayed = n.zone(0).counters().cpu(0).high();
    assert!(decayed < high && decayed >= high_min, "ten passes of decay_pcp_high: {high} -> {decayed}");
    assert!(
        after < cached && after <= decayed,
        "what is cached above the mark is freed: {cached} -> {after}"
    );
    n.verify().unwrap();
}

/// How many pages CPU 0 still caches after each free of a long run of order-3 frees.
fn cached_during_a_run_of_high_order_frees(cpu_cache_bytes: u64) -> Vec<u64> {
    let n = Node::single_zone(
        ZoneConfig::normal(1 << 30),
        Policy { boot: Boot { cpu_cache_bytes, ..Boot::default() }, ..Policy::default() },
    )
    .unwrap();
    let held: Vec<Pfn> = (0..1000).map(|_| n.alloc_pages(0, 3, Gfp::HIGHUSER_MOVABLE).unwrap()).collect();
    n.drain_all_pages();
    held.into_iter()
        .map(|p| {
            n.free_pages(0, p, 3).unwrap();
            n.zone(0).counters().cpu(0).count()
        })
        .collect()
}

/// `PCPF_FREE_HIGH_BATCH` (zone_pcp_update_cacheinfo): a CPU whose cache slice holds more
/// than three batches lets a run of high-order frees fill a batch before flushing it; a CPU
/// with a small cache flushes every free of the run.
#[test]
fn a_big_cpu_cache_keeps_a_batch_of_high_order_frees() {
    let batch = 63;
    // The run starts once batch + high_min / 2 pages were freed in a row (224 frees here).
    let small = cached_during_a_run_of_high_order_frees(0);
    let tail = &small[300..];
    assert!(tail.iter().all(|&c| c == 0), "a small cache flushes each free: {tail:?}");
    let big = cached_during_a_run_of_high_order_frees(2 << 20);
    let tail = &big[300..];
    assert!(tail.iter().all(|&c| c < batch), "a full batch is flushed at once: {tail:?}");
    assert!(tail.iter().any(|&c| c + 8 >= batch), "up to a batch stays cached between flushes: {tail:?}");
}
