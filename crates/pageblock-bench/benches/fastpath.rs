//! Criterion microbenchmarks of the fast path, pageblock and its peers side by side in one
//! run (the same adapters as `pageblock bench fastpath`):
//!
//! * `a_pair`: an order-0 allocation immediately freed;
//! * `b_random_free`: freeing 4096 order-0 pages in random order (the bulk-free path), with
//!   pageblock under each of `fastpath::BULK_FREE_SETTINGS` (memmap layout, bulk free);
//! * `c_mixed`: 1000 operations of the mixed workload on a half-full allocator;
//! * `e_pair_2_threads`: `a` on two threads at once (time per pair per thread).
//!
//! Run: `cargo bench -p pageblock-bench --bench fastpath`. Wall clock on a shared machine:
//! compare peers within one run and quote medians.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use pageblock::{Policy, SpeedOnly};
use pageblock_bench::fastpath::peers::{
    BsaPeer, BuddyAllocPeer, BuddyAllocRegion, FrameAlloc, LockedBsaPeer, LockedBuddyAllocPeer,
    PageblockPeer, SharedFrameAlloc,
};
use pageblock_bench::fastpath::BULK_FREE_SETTINGS;
use pageblock_lab::prng::Prng;

fn pair<A: FrameAlloc>(a: &mut A) {
    let f = a.alloc(0).expect("frame");
    a.free(black_box(f), 0);
}

fn a_pair(c: &mut Criterion, region: &BuddyAllocRegion) {
    let mut g = c.benchmark_group("a_pair");
    let mut pb = PageblockPeer::new(Policy::default());
    g.bench_function("pageblock", |b| b.iter(|| pair(&mut pb)));
    let mut bsa = BsaPeer::new();
    g.bench_function("buddy_system_allocator", |b| b.iter(|| pair(&mut bsa)));
    let mut ba = BuddyAllocPeer::new(region);
    g.bench_function("buddy-alloc", |b| b.iter(|| pair(&mut ba)));
    g.finish();
}

/// Allocate `n` order-0 frames and shuffle them (the untimed setup of a random-order free).
fn allocated<A: FrameAlloc>(a: &mut A, n: usize, rng: &mut Prng) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|_| a.alloc(0).expect("frame")).collect();
    rng.shuffle(&mut v);
    v
}

/// Time only the random-order frees of `iters` rounds of `n` pages.
fn timed_random_frees<A: FrameAlloc>(a: &mut A, n: usize, iters: u64, rng: &mut Prng) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let v = allocated(a, n, rng);
        let t = Instant::now();
        for &f in &v {
            a.free(f, 0);
        }
        total += t.elapsed();
    }
    total
}

fn b_random_free(c: &mut Criterion, region: &BuddyAllocRegion) {
    const N: usize = 4096;
    let mut g = c.benchmark_group("b_random_free_4096");
    let mut rng = Prng::new(1);
    for (name, layout, bulk_free) in BULK_FREE_SETTINGS {
        let mut pb = PageblockPeer::with_layout(
            Policy { speed_only: SpeedOnly { bulk_free, ..SpeedOnly::default() }, ..Policy::default() },
            layout,
        );
        g.bench_function(name, |b| b.iter_custom(|iters| timed_random_frees(&mut pb, N, iters, &mut rng)));
    }
    let mut bsa = BsaPeer::new();
    g.bench_function("buddy_system_allocator", |b| {
        b.iter_custom(|iters| timed_random_frees(&mut bsa, N, iters, &mut rng))
    });
    let mut ba = BuddyAllocPeer::new(region);
    g.bench_function("buddy-alloc", |b| {
        b.iter_custom(|iters| timed_random_frees(&mut ba, N, iters, &mut rng))
    });
    g.finish();
}

/// 1000 mixed operations against a live set kept at about half of 64 MiB.
fn mixed_ops<A: FrameAlloc>(a: &mut A, live: &mut Vec<(u64, u32)>, rng: &mut Prng) {
    for _ in 0..1000 {
        let r = rng.next_u64();
        let order = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 9][(r >> 32) as usize % 20];
        if r & 1 == 0 && live.len() < 4096 {
            if let Some(f) = a.alloc(order) {
                live.push((f, order));
            }
        } else if !live.is_empty() {
            let (f, o) = live.swap_remove((r >> 8) as usize % live.len());
            a.free(f, o);
        }
    }
}

fn c_mixed(c: &mut Criterion, region: &BuddyAllocRegion) {
    let mut g = c.benchmark_group("c_mixed_1000_ops");
    let mut rng = Prng::new(2);
    let (mut pb, mut live) = (PageblockPeer::new(Policy::default()), Vec::new());
    g.bench_function("pageblock", |b| b.iter(|| mixed_ops(&mut pb, &mut live, &mut rng)));
    let (mut bsa, mut live) = (BsaPeer::new(), Vec::new());
    g.bench_function("buddy_system_allocator", |b| b.iter(|| mixed_ops(&mut bsa, &mut live, &mut rng)));
    let (mut ba, mut live) = (BuddyAllocPeer::new(region), Vec::new());
    g.bench_function("buddy-alloc", |b| b.iter(|| mixed_ops(&mut ba, &mut live, &mut rng)));
    g.finish();
}

/// Time `iters` pairs on each of two threads; the result is wall time per pair per thread.
fn two_threads<A: SharedFrameAlloc>(a: &A, iters: u64) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..iters {
                    let f = a.alloc(0).expect("frame");
                    a.free(black_box(f), 0);
                }
            });
        }
    });
    t.elapsed()
}

fn e_pair_2_threads(c: &mut Criterion, region: &BuddyAllocRegion) {
    let mut g = c.benchmark_group("e_pair_2_threads");
    let pb = PageblockPeer::new(Policy::default());
    g.bench_function("pageblock", |b| b.iter_custom(|iters| two_threads(&pb, iters)));
    let bsa = LockedBsaPeer::new();
    g.bench_function("buddy_system_allocator", |b| b.iter_custom(|iters| two_threads(&bsa, iters)));
    let ba = LockedBuddyAllocPeer(Mutex::new(BuddyAllocPeer::new(region)));
    g.bench_function("buddy-alloc", |b| b.iter_custom(|iters| two_threads(&ba, iters)));
    g.finish();
}

fn benches(c: &mut Criterion) {
    let region = BuddyAllocRegion::new(true).expect("a 4 GiB mapping for buddy-alloc");
    a_pair(c, &region);
    b_random_free(c, &region);
    c_mixed(c, &region);
    e_pair_2_threads(c, &region);
}

criterion_group! {
    name = fastpath;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(fastpath);
