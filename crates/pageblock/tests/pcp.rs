//! Per-CPU page lists, driven deterministically through explicit CPU slots.

use pageblock::{Allocator, FreeError, Gfp, Pfn, Policy, Sysctl, ZoneConfig};
use pageblock_core::VmEvent;

fn allocator(mib: u64, policy: Policy) -> Allocator {
    Allocator::single_zone(ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(mib << 20) }, policy).unwrap()
}

#[test]
fn first_allocation_refills_a_batch_and_frees_are_cached() {
    let a = allocator(1024, Policy::default());
    let cpu0 = a.on_cpu(0).unwrap();
    let limits = a.shared().zone(0).pageset();
    assert_eq!(limits.batch, 63);
    let p = cpu0.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let c = a.shared().zone(0).counters();
    // nr_pcp_alloc: the first order-0 refill asks for `batch` blocks (alloc_factor 0).
    assert_eq!(c.cpu(0).count(), 62, "63 refilled, one handed out");
    assert_eq!(c.cpu(1).count(), 0);
    assert_eq!(a.shared().nr_free_pages(), a.shared().managed_pages() - 63);
    cpu0.free_pages(p, 0).unwrap();
    assert_eq!(c.cpu(0).count(), 63, "the free is cached, not returned to the zone");
    // LIFO: the page just freed is the next one handed out.
    assert_eq!(cpu0.alloc_pages(0, Gfp::HIGHUSER_MOVABLE).unwrap(), p);
    assert_eq!(c.event(VmEvent::PgAlloc), 2);
    // Another CPU frees our page onto its own lists.
    a.on_cpu(1).unwrap().free_pages(p, 0).unwrap();
    assert_eq!(c.cpu(1).count(), 1);
    assert_eq!(a.on_cpu(1).unwrap().free_pages(p, 0), Err(FreeError::DoubleFree { pfn: p }));
    a.drain_all_pages();
    assert_eq!(c.cpu(0).count() + c.cpu(1).count(), 0);
    let census = a.verify().unwrap();
    assert_eq!(census.free, a.shared().managed_pages());
}

#[test]
fn freeing_past_high_returns_a_batch_under_one_lock_hold() {
    let a = allocator(256, Policy::default().with_sysctl(Sysctl::PercpuPagelistHighFraction, 8).unwrap());
    let limits = a.shared().zone(0).pageset();
    assert_eq!(limits.high_min, limits.high_max, "a fixed high mark");
    let cpu0 = a.on_cpu(0).unwrap();
    let n = limits.high_max as usize + 10;
    let pages: Vec<Pfn> = (0..n).map(|_| a.on_cpu(1).unwrap().alloc_pages(0, Gfp::KERNEL).unwrap()).collect();
    a.drain_all_pages();
    let c = a.shared().zone(0).counters();
    for (i, p) in pages.iter().enumerate() {
        cpu0.free_pages(*p, 0).unwrap();
        assert!(c.cpu(0).count() < limits.high_max as u64, "after free {i}: {} cached", c.cpu(0).count());
    }
    let cached = c.cpu(0).count();
    let free_before = a.shared().nr_free_pages();
    a.drain_all_pages();
    assert_eq!(a.shared().nr_free_pages() - free_before, cached, "the drain returned exactly the cache");
    a.verify().unwrap();
}

#[test]
fn orders_above_the_pcp_limit_bypass_the_lists() {
    let a = allocator(64, Policy::default());
    let p = a.on_cpu(0).unwrap().alloc_pages(5, Gfp::KERNEL).unwrap();
    assert_eq!(a.shared().zone(0).counters().cpu(0).count(), 0);
    a.on_cpu(0).unwrap().free_pages(p, 5).unwrap();
    assert_eq!(a.shared().zone(0).counters().cpu(0).count(), 0);
    // THP-order requests use the pageblock-order lists: a refill of `max(batch >> 9, 2)`
    // blocks, one handed out.
    let t = a.on_cpu(0).unwrap().alloc_pages(9, Gfp::TRANSHUGE).unwrap();
    assert_eq!(a.shared().zone(0).counters().cpu(0).count(), 512);
    a.on_cpu(0).unwrap().free_pages(t, 9).unwrap();
    a.verify().unwrap();
}

#[test]
fn misuse_on_the_fast_path_is_refused_and_changes_nothing() {
    let a = allocator(64, Policy::default());
    let cpu = a.on_cpu(0).unwrap();
    let p = cpu.alloc_pages(2, Gfp::KERNEL).unwrap();
    let before = a.shared().zone(0).counters().cpu(0).count();
    assert!(matches!(cpu.free_pages(p, 1), Err(FreeError::WrongOrder { allocated_order: 2, .. })));
    assert!(matches!(cpu.free_pages(Pfn(p.0 + 1), 0), Err(FreeError::NotAllocated { .. })));
    assert!(matches!(cpu.free_pages(Pfn(1), 0), Err(FreeError::OutOfRange { .. })));
    assert_eq!(a.shared().zone(0).counters().cpu(0).count(), before);
    cpu.free_pages(p, 2).unwrap();
    assert_eq!(cpu.free_pages(p, 2), Err(FreeError::DoubleFree { pfn: p }));
    a.drain_all_pages();
    a.verify().unwrap();
}

/// Regression (divergence D7): the kernel drains other CPUs' lists only after direct
/// reclaim made progress (`__alloc_pages_direct_reclaim`), never merely because a request
/// failed; the runtime used to drain every CPU after any failure.
#[test]
fn exhausted_memory_does_not_drain_other_cpus_without_reclaim_progress() {
    let a = allocator(16, Policy::default());
    // CPU 1 caches a batch it never uses.
    let p = a.on_cpu(1).unwrap().alloc_pages(0, Gfp::KERNEL).unwrap();
    a.on_cpu(1).unwrap().free_pages(p, 0).unwrap();
    let cached = a.shared().zone(0).counters().cpu(1).count();
    assert!(cached > 0);
    // CPU 0 allocates until nothing is left for it.
    let mut held = Vec::new();
    while let Ok(p) = a.on_cpu(0).unwrap().alloc_pages(0, Gfp::ATOMIC) {
        held.push(p);
    }
    assert_eq!(a.shared().zone(0).counters().cpu(1).count(), cached, "CPU 1's cache was left alone");
    let census = a.verify().unwrap();
    assert_eq!(census.allocated, held.len() as u64);
    // An explicit drain gives the cached pages back.
    a.drain_all_pages();
    assert_eq!(a.shared().zone(0).counters().cpu(1).count(), 0);
    for p in held {
        a.on_cpu(0).unwrap().free_pages(p, 0).unwrap();
    }
    a.drain_all_pages();
    assert_eq!(a.shared().nr_free_pages(), a.shared().managed_pages());
}
