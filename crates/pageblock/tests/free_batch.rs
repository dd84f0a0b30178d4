//! `free_pages_batch`: the same frees as one `free_pages` after another, faster only.

use pageblock::{Allocator, FreeBatchError, FreeError, Gfp, Pfn, Policy, ZoneConfig};
use pageblock_core::MigrateType;

fn allocator() -> Allocator {
    Allocator::single_zone(ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(256 << 20) }, Policy::default())
        .unwrap()
}

/// `n` blocks of `order` allocated on CPU 0, in a seeded random order.
fn allocated_shuffled(a: &Allocator, n: usize, order: u32, mut seed: u64) -> Vec<Pfn> {
    let mut v: Vec<Pfn> =
        (0..n).map(|_| a.on_cpu(0).unwrap().alloc_pages(order, Gfp::HIGHUSER_MOVABLE).unwrap()).collect();
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    v
}

/// Everything a free decides: every free list in order, the per-CPU counts, pagetypeinfo.
fn fingerprint(a: &Allocator) -> (Vec<Vec<Pfn>>, [u64; 2], String) {
    let lists = a.with_zone(0, |z| {
        let mut lists = Vec::new();
        for order in 0..=z.max_order() {
            for mt in MigrateType::ALL {
                lists.push(z.free_list(order, mt).collect());
            }
        }
        lists
    });
    let c = a.shared().zone(0).counters();
    (lists, [c.cpu(0).count(), c.cpu(1).count()], a.pagetypeinfo().render())
}

#[test]
fn a_batch_free_decides_exactly_what_single_frees_decide() {
    for (n, order) in [(30_000, 0), (4_000, 1), (500, 3)] {
        let (single, batch) = (allocator(), allocator());
        let v = allocated_shuffled(&single, n, order, 0x5eed);
        assert_eq!(
            allocated_shuffled(&batch, n, order, 0x5eed),
            v,
            "both allocators hand out the same blocks"
        );
        for &p in &v {
            single.on_cpu(0).unwrap().free_pages(p, order).unwrap();
        }
        batch.on_cpu(0).unwrap().free_pages_batch(&v, order).unwrap();
        assert_eq!(fingerprint(&batch), fingerprint(&single), "order {order}");
        batch.verify().unwrap();
    }
}

#[test]
fn a_batch_stops_at_the_first_refused_block_and_leaves_the_rest_allocated() {
    let a = allocator();
    let v = allocated_shuffled(&a, 20, 0, 7);
    a.on_cpu(0).unwrap().free_pages(v[12], 0).unwrap();
    let refused = a.on_cpu(0).unwrap().free_pages_batch(&v, 0);
    assert_eq!(refused, Err(FreeBatchError { freed: 12, error: FreeError::DoubleFree { pfn: v[12] } }));
    let zone = a.shared().zone(0);
    assert!(v[..12].iter().all(|&p| zone.check_allocated(p, 0).is_err()), "the first 12 were freed");
    assert!(v[13..].iter().all(|&p| zone.check_allocated(p, 0).is_ok()), "the rest were not touched");
    a.verify().unwrap();
    a.on_cpu(0).unwrap().free_pages_batch(&v[13..], 0).unwrap();
    a.drain_all_pages();
    assert_eq!(a.verify().unwrap().free, a.shared().managed_pages());
}

#[test]
fn a_foreign_pfn_in_the_batch_is_refused_after_being_prefetched_harmlessly() {
    let a = allocator();
    let mut v = allocated_shuffled(&a, 16, 0, 9);
    // Eight frees ahead of index 10 sits a pfn no zone holds: its state is "prefetched"
    // while block 2 is freed, then the free refuses it.
    v[10] = Pfn(u64::MAX - 1);
    let refused = a.on_cpu(0).unwrap().free_pages_batch(&v, 0).unwrap_err();
    assert_eq!(
        refused,
        FreeBatchError { freed: 10, error: FreeError::OutOfRange { pfn: Pfn(u64::MAX - 1) } }
    );
    assert_eq!(
        refused.to_string(),
        format!("block 10 of the batch: {} (the blocks before it were freed)", refused.error)
    );
    a.verify().unwrap();
}
