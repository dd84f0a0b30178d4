//! The measured cases. Each builds nothing and times only the operations; setup (fresh
//! allocator, prefill, shuffles) happens outside the timed region.

use std::time::Instant;

use pageblock::Pfn;
use pageblock_lab::prng::Prng;
use pageblock_lab::wallclock::pin_to;

use super::peers::{FrameAlloc, PageblockPeer, SharedFrameAlloc, REGION_PAGES};

/// Order mix of the mixed workload (c): 80% order 0, 5% each of orders 1–3, 5% order 9.
const MIX: [(u32, u32); 5] = [(0, 80), (1, 5), (2, 5), (3, 5), (9, 5)];

fn pick_order(rng: &mut Prng) -> u32 {
    MIX[rng.weighted(&MIX.map(|(_, w)| w))].0
}

/// (a) `pairs` × (allocate order 0; free it): nanoseconds per pair.
pub fn alloc_free_pairs<A: FrameAlloc>(a: &mut A, pairs: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..pairs {
        let f = a.alloc(0).expect("order-0 frame on an empty allocator");
        a.free(std::hint::black_box(f), 0);
    }
    t.elapsed().as_nanos() as f64 / pairs as f64
}

/// (b) `n` order-0 allocations, then frees in a seeded random order: nanoseconds per
/// allocation and per free.
pub fn bulk_then_random_free<A: FrameAlloc>(a: &mut A, n: usize, seed: u64) -> (f64, f64) {
    let mut frames = Vec::with_capacity(n);
    let t = Instant::now();
    for _ in 0..n {
        frames.push(a.alloc(0).expect("order-0 frame"));
    }
    let alloc_ns = t.elapsed().as_nanos() as f64 / n as f64;
    Prng::new(seed).shuffle(&mut frames);
    let t = Instant::now();
    for &f in &frames {
        a.free(f, 0);
    }
    (alloc_ns, t.elapsed().as_nanos() as f64 / n as f64)
}

/// (f) through pageblock's batch API: the allocations and the random order of
/// [`bulk_then_random_free`], freed with one `free_pages_batch` call: nanoseconds per free.
pub fn bulk_then_batch_free(a: &PageblockPeer, n: usize, seed: u64) -> f64 {
    let mut frames: Vec<Pfn> =
        (0..n).map(|_| Pfn(SharedFrameAlloc::alloc(a, 0).expect("order-0 frame"))).collect();
    Prng::new(seed).shuffle(&mut frames);
    let t = Instant::now();
    a.0.free_pages_batch(&frames, 0).expect("frames this allocator handed out");
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The live set of the mixed workload, capped at `cap` pages.
struct Mixed {
    live: Vec<(u64, u32)>,
    held: u64,
    cap: u64,
    rng: Prng,
    order9_failures: u64,
}

impl Mixed {
    fn new(cap: u64, seed: u64) -> Mixed {
        Mixed { live: Vec::new(), held: 0, cap, rng: Prng::new(seed), order9_failures: 0 }
    }

    /// One operation: allocate (an even draw, unless that would pass the cap) or free a
    /// random live block.
    #[inline]
    fn step(&mut self, alloc: &mut impl FnMut(u32) -> Option<u64>, free: &mut impl FnMut(u64, u32)) {
        let r = self.rng.next_u64();
        let order = pick_order(&mut self.rng);
        if r & 1 == 0 && self.held + (1 << order) <= self.cap || self.live.is_empty() {
            match alloc(order) {
                Some(f) => {
                    self.live.push((f, order));
                    self.held += 1 << order;
                }
                None => self.order9_failures += (order == 9) as u64,
            }
        } else {
            let (f, order) = self.live.swap_remove((r >> 1) as usize % self.live.len());
            free(f, order);
            self.held -= 1 << order;
        }
    }

    /// Allocate with the same mix until the cap is reached (not timed).
    fn prefill(&mut self, alloc: &mut impl FnMut(u32) -> Option<u64>) {
        while self.held < self.cap {
            let order = pick_order(&mut self.rng);
            if self.held + (1 << order) > self.cap {
                break;
            }
            let f = alloc(order).expect("prefill below the cap");
            self.live.push((f, order));
            self.held += 1 << order;
        }
    }
}

/// (c) the mixed workload, prefilled to half of memory: nanoseconds per operation.
pub fn mixed<A: FrameAlloc>(a: &mut A, ops: u64, seed: u64) -> f64 {
    let mut m = Mixed::new(REGION_PAGES / 2, seed);
    let a = std::cell::RefCell::new(a);
    let mut alloc = |o| a.borrow_mut().alloc(o);
    let mut free = |f, o| a.borrow_mut().free(f, o);
    m.prefill(&mut alloc);
    let t = Instant::now();
    for _ in 0..ops {
        m.step(&mut alloc, &mut free);
    }
    let ns = t.elapsed().as_nanos() as f64 / ops as f64;
    for (f, o) in m.live.drain(..) {
        free(f, o);
    }
    ns
}

/// On `threads` threads pinned to CPUs 0..threads: `setup(i)` (not timed), a barrier, then
/// `work(i, state)` (timed), returning its operation count. Returns total operations per
/// second in millions: all operations / (last end − first start).
fn throughput<S, Setup, Work>(threads: usize, setup: Setup, work: Work) -> f64
where
    Setup: Fn(usize) -> S + Sync,
    Work: Fn(usize, &mut S) -> u64 + Sync,
{
    let start = std::sync::Barrier::new(threads);
    let spans: Vec<(Instant, Instant, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (start, setup, work) = (&start, &setup, &work);
                s.spawn(move || {
                    pin_to(i);
                    let mut state = setup(i);
                    start.wait();
                    let t0 = Instant::now();
                    let ops = work(i, &mut state);
                    (t0, Instant::now(), ops)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("bench thread")).collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("threads");
    let last = spans.iter().map(|s| s.1).max().expect("threads");
    let ops: u64 = spans.iter().map(|s| s.2).sum();
    ops as f64 / last.duration_since(first).as_nanos() as f64 * 1000.0
}

/// (e, a) alloc/free pairs on `threads` threads: million pairs per second.
pub fn shared_pairs<A: SharedFrameAlloc>(a: &A, threads: usize, pairs_per_thread: u64) -> f64 {
    throughput(
        threads,
        |_| (),
        |_, _| {
            for _ in 0..pairs_per_thread {
                let f = a.alloc(0).expect("order-0 frame");
                a.free(std::hint::black_box(f), 0);
            }
            pairs_per_thread
        },
    )
}

/// (e, c) the mixed workload on `threads` threads, each with its own stream and its share
/// of a half-of-memory cap, prefilled: million operations per second.
pub fn shared_mixed<A: SharedFrameAlloc>(a: &A, threads: usize, ops_per_thread: u64, seed: u64) -> f64 {
    throughput(
        threads,
        |i| {
            let mut m = Mixed::new(REGION_PAGES / 2 / threads as u64, seed ^ ((i as u64 + 1) << 32));
            m.prefill(&mut |o| a.alloc(o));
            m
        },
        |_, m| {
            let (mut alloc, mut free) = (|o| a.alloc(o), |f, o| a.free(f, o));
            for _ in 0..ops_per_thread {
                m.step(&mut alloc, &mut free);
            }
            ops_per_thread
        },
    )
}
