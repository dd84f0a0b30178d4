//! Real threads, real memory: every thread allocates and frees blocks of mixed orders and
//! types in an mmap'd arena, writes a pattern naming itself into every page it owns, and
//! checks the pattern before freeing. A page handed out twice, or lost, shows up as a
//! clobbered pattern, a failed free, or a final count that does not add up.
//!
//! Scale with `PAGEBLOCK_STRESS_OPS` (operations per thread) and `PAGEBLOCK_STRESS_THREADS`.

use std::sync::Arc;

use pageblock::{Allocator, Gfp, Pfn, Policy};

mod common;
use common::Rng;

const PAGE: usize = 4096;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The word written at the start and end of every page of a block: owner and pfn.
fn stamp(owner: u64, pfn: u64) -> u64 {
    (owner << 48) ^ pfn ^ 0x5eed_0000_0000_0000
}

fn fill(a: &Allocator, pfn: Pfn, order: u32, owner: u64) {
    for i in 0..(1u64 << order) {
        let p = a.page_ptr(Pfn(pfn.0 + i)).expect("arena page").as_ptr().cast::<u64>();
        let s = stamp(owner, pfn.0 + i);
        // SAFETY: the page belongs to this thread's live block inside the arena.
        unsafe {
            p.write(s);
            p.add(PAGE / 8 - 1).write(!s);
        }
    }
}

fn check(a: &Allocator, pfn: Pfn, order: u32, owner: u64) {
    for i in 0..(1u64 << order) {
        let p = a.page_ptr(Pfn(pfn.0 + i)).unwrap().as_ptr().cast::<u64>();
        let s = stamp(owner, pfn.0 + i);
        // SAFETY: as in `fill`; the block is still ours.
        let (head, tail) = unsafe { (p.read(), p.add(PAGE / 8 - 1).read()) };
        assert_eq!((head, tail), (s, !s), "page {:#x} of thread {owner} was overwritten", pfn.0 + i);
    }
}

const GFPS: [Gfp; 4] =
    [Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL, Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0), Gfp::ATOMIC];

fn worker(a: &Allocator, owner: u64, ops: u64) -> (u64, u64) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (owner + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let mut live: Vec<(Pfn, u32)> = Vec::new();
    let (mut allocs, mut failures) = (0, 0);
    for _ in 0..ops {
        let r = rng.next();
        // Slightly more allocations than frees: the arena fills up and the workers spend
        // most of the run at the watermarks, where refills fail, drains run and the zone's
        // slow path and fallbacks are exercised.
        if r % 100 < 55 || live.is_empty() {
            let order = match r % 100 {
                0..=69 => 0,
                70..=84 => 1,
                85..=91 => 2,
                92..=97 => 3,
                _ => 9,
            };
            match a.alloc_pages(order, GFPS[(r >> 8) as usize % GFPS.len()]) {
                Ok(pfn) => {
                    fill(a, pfn, order, owner);
                    live.push((pfn, order));
                    allocs += 1;
                }
                Err(_) => failures += 1,
            }
        } else {
            let (pfn, order) = live.swap_remove((r >> 16) as usize % live.len());
            check(a, pfn, order, owner);
            a.free_pages(pfn, order).expect("freeing our own block");
        }
    }
    for (pfn, order) in live {
        check(a, pfn, order, owner);
        a.free_pages(pfn, order).expect("freeing our own block");
    }
    (allocs, failures)
}

#[test]
fn threads_never_share_a_page_and_every_page_comes_back() {
    let threads = env_or("PAGEBLOCK_STRESS_THREADS", 4);
    let ops = env_or("PAGEBLOCK_STRESS_OPS", 1_000_000);
    // 64 MiB: small enough that threads compete for memory and hit the slow paths.
    let a = Arc::new(Allocator::with_arena_cpus(64 << 20, 2, Policy::default()).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|owner| {
            let a = Arc::clone(&a);
            std::thread::spawn(move || worker(&a, owner, ops))
        })
        .collect();
    let (mut allocs, mut failures) = (0, 0);
    for h in handles {
        let (a, f) = h.join().expect("worker");
        allocs += a;
        failures += f;
    }
    assert!(allocs > threads * ops / 4, "the workers did allocate ({allocs})");
    assert!(failures > 0, "the arena ran full at some point");
    a.drain_all_pages();
    let census = a.verify().expect("invariants hold");
    assert_eq!(census.allocated + census.pcp, 0, "every page is back: {census:?}");
    let managed = a.shared().managed_pages();
    assert_eq!(a.shared().nr_free_pages(), managed);
    let c = a.shared().zone(0).counters();
    let boot = managed;
    assert_eq!(
        c.event(pageblock_core::VmEvent::PgFree) - boot,
        c.event(pageblock_core::VmEvent::PgAlloc),
        "pages freed after boot == pages allocated"
    );
}
