//! `pageblock bench fastpath`: pageblock against peer page allocators, side by side, in one
//! run, on a 4 GiB region (the cases of `shared/reference/peer-bench.md`).
//!
//! | case | what | reported |
//! |---|---|---|
//! | a | order-0 allocation immediately freed | ns per pair |
//! | b | 1,000,000 order-0 allocations, then frees in random order | ns per alloc (`b_alloc`), per free (`b_free`) |
//! | c | mixed: 80% order 0, 15% orders 1–3, 5% order 9, at most half of memory allocated | ns per operation |
//! | e | a and c on 2 threads (`e_a`, `e_c`) | million operations per second |
//! | f | 900,000 order-0 allocations, then frees in random order (cache misses on the memmap) | ns per alloc (`f_alloc`), per free (`f_free`) |
//!
//! Besides the table, pageblock's case f frees are timed under three memmap layouts and
//! bulk-free settings, and through `free_pages_batch` (all 900,000 in one call).
//!
//! Repetitions are the outer loop and allocators the inner loop, so slow phases of a noisy
//! machine hit every allocator alike; every figure is the median of the repetitions, with the
//! raw samples kept. Wall-clock results: compare within one run, never across machines.

mod cases;
pub mod peers;
pub mod table;

use std::sync::Mutex;

use pageblock::{BulkFree, MemmapLayout, Policy, SpeedOnly};
use pageblock_lab::wallclock::median;
use serde::Serialize;

use peers::{
    BsaPeer, BuddyAllocPeer, BuddyAllocRegion, LockedBsaPeer, LockedBuddyAllocPeer, PageblockPeer, PeerKind,
};

/// How much to run.
#[derive(Clone, Copy, Debug)]
pub struct FastpathConfig {
    /// Repetitions of every measurement.
    pub reps: usize,
    /// Pairs in case a.
    pub a_pairs: u64,
    /// Allocations in case b.
    pub b_allocs: usize,
    /// Allocations in case f.
    pub f_allocs: usize,
    /// Operations in case c.
    pub c_ops: u64,
    /// Pairs per thread in case e_a.
    pub e_pairs_per_thread: u64,
    /// Operations per thread in case e_c.
    pub e_ops_per_thread: u64,
    /// Threads in case e.
    pub threads: usize,
    /// Fault buddy-alloc's 4 GiB in before measuring (it keeps its lists in free memory).
    pub prefault: bool,
    /// pageblock's memmap layout in the main table (the default: the split layout).
    pub memmap_layout: MemmapLayout,
}

impl Default for FastpathConfig {
    fn default() -> Self {
        FastpathConfig {
            reps: 5,
            a_pairs: 5_000_000,
            b_allocs: 1_000_000,
            f_allocs: 900_000,
            c_ops: 5_000_000,
            e_pairs_per_thread: 2_000_000,
            e_ops_per_thread: 2_000_000,
            threads: 2,
            prefault: true,
            memmap_layout: MemmapLayout::Split,
        }
    }
}

impl FastpathConfig {
    /// A tiny configuration for tests (numbers are meaningless, paths are exercised).
    pub fn smoke() -> Self {
        FastpathConfig {
            reps: 1,
            a_pairs: 2000,
            b_allocs: 2000,
            f_allocs: 1800,
            c_ops: 2000,
            e_pairs_per_thread: 1000,
            e_ops_per_thread: 1000,
            threads: 2,
            prefault: false,
            memmap_layout: MemmapLayout::Split,
        }
    }
}

/// One (allocator, case) result.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// `pageblock`, `buddy_system_allocator` or `buddy-alloc`.
    pub allocator: &'static str,
    /// One of [`CASES`].
    pub case: &'static str,
    /// Median nanoseconds per operation (single-thread cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_op: Option<f64>,
    /// Median million operations per second (two-thread cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mops_per_s: Option<f64>,
    /// Every repetition's value, in the unit above.
    pub samples: Vec<f64>,
}

/// Every case, in report order; `e_*` are two-thread throughputs, the rest nanoseconds.
pub const CASES: [&str; 8] = ["a", "b_alloc", "b_free", "c", "e_a", "e_c", "f_alloc", "f_free"];

/// pageblock's random-order bulk free (case f) under one memmap layout and bulk-free setting.
#[derive(Clone, Debug, Serialize)]
pub struct BulkFreeResult {
    /// Which setting, e.g. `records-12 two-pass`.
    pub setting: &'static str,
    /// Median nanoseconds per random-order free.
    pub ns_per_free: f64,
    /// Every repetition's value.
    pub samples: Vec<f64>,
}

/// The settings [`BulkFreeResult`] compares: the kernel's shape (12-byte records walked as
/// the 2018 kernel walked its lists), the pipeline alone, and today's default.
pub const BULK_FREE_SETTINGS: [(&str, MemmapLayout, BulkFree); 3] = [
    ("records-12 two-pass (2018 kernel)", MemmapLayout::Records(12), BulkFree::TwoPass),
    ("records-12 pipelined", MemmapLayout::Records(12), BulkFree::Pipelined),
    ("split pipelined (default)", MemmapLayout::Split, BulkFree::Pipelined),
];

/// Everything a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct FastpathReport {
    /// Per allocator and case.
    pub results: Vec<CaseResult>,
    /// pageblock's case f frees under each of [`BULK_FREE_SETTINGS`].
    pub bulk_free: Vec<BulkFreeResult>,
    /// pageblock's case f frees in one `free_pages_batch` call (the run's memmap layout).
    pub free_pages_batch: BulkFreeResult,
}

type Samples = Vec<(PeerKind, &'static str, f64)>;

fn one_rep(
    cfg: &FastpathConfig,
    rep: usize,
    arena: &BuddyAllocRegion,
    out: &mut Samples,
    bulk_free: &mut [Vec<f64>; 3],
    batch: &mut Vec<f64>,
) {
    let seed = 0x5eed + rep as u64;
    for peer in PeerKind::ALL {
        let single: [(&'static str, f64); 6] = match peer {
            PeerKind::Pageblock => {
                single_thread(cfg, seed, || PageblockPeer::with_layout(Policy::default(), cfg.memmap_layout))
            }
            PeerKind::BuddySystemAllocator => single_thread(cfg, seed, BsaPeer::new),
            PeerKind::BuddyAlloc => single_thread(cfg, seed, || BuddyAllocPeer::new(arena)),
        };
        out.extend(single.iter().map(|&(case, v)| (peer, case, v)));
        let (e_a, e_c) = match peer {
            PeerKind::Pageblock => {
                two_threads(cfg, seed, || PageblockPeer::with_layout(Policy::default(), cfg.memmap_layout))
            }
            PeerKind::BuddySystemAllocator => two_threads(cfg, seed, LockedBsaPeer::new),
            PeerKind::BuddyAlloc => {
                two_threads(cfg, seed, || LockedBuddyAllocPeer(Mutex::new(BuddyAllocPeer::new(arena))))
            }
        };
        out.push((peer, "e_a", e_a));
        out.push((peer, "e_c", e_c));
    }
    for (i, &(_, layout, setting)) in BULK_FREE_SETTINGS.iter().enumerate() {
        let mut a = PageblockPeer::with_layout(
            Policy {
                speed_only: SpeedOnly { bulk_free: setting, ..SpeedOnly::default() },
                ..Policy::default()
            },
            layout,
        );
        bulk_free[i].push(cases::bulk_then_random_free(&mut a, cfg.f_allocs, seed).1);
    }
    let a = PageblockPeer::with_layout(Policy::default(), cfg.memmap_layout);
    batch.push(cases::bulk_then_batch_free(&a, cfg.f_allocs, seed));
}

fn single_thread<A: peers::FrameAlloc>(
    cfg: &FastpathConfig,
    seed: u64,
    new: impl Fn() -> A,
) -> [(&'static str, f64); 6] {
    let a = cases::alloc_free_pairs(&mut new(), cfg.a_pairs);
    let (b_alloc, b_free) = cases::bulk_then_random_free(&mut new(), cfg.b_allocs, seed);
    let c = cases::mixed(&mut new(), cfg.c_ops, seed);
    let (f_alloc, f_free) = cases::bulk_then_random_free(&mut new(), cfg.f_allocs, seed);
    [("a", a), ("b_alloc", b_alloc), ("b_free", b_free), ("c", c), ("f_alloc", f_alloc), ("f_free", f_free)]
}

fn two_threads<A: peers::SharedFrameAlloc>(
    cfg: &FastpathConfig,
    seed: u64,
    new: impl Fn() -> A,
) -> (f64, f64) {
    let e_a = cases::shared_pairs(&new(), cfg.threads, cfg.e_pairs_per_thread);
    let e_c = cases::shared_mixed(&new(), cfg.threads, cfg.e_ops_per_thread, seed);
    (e_a, e_c)
}

/// Run every case for every allocator `cfg.reps` times; `progress(done, total)` after each
/// repetition.
pub fn run(cfg: &FastpathConfig, progress: &mut dyn FnMut(usize, usize)) -> Result<FastpathReport, String> {
    // Both 4 GiB mappings are tried before anything is measured: a host that refuses them
    // (ulimit -v, no overcommit) gets a message, not a panic in the middle of a run.
    let arena = BuddyAllocRegion::new(cfg.prefault)
        .map_err(|e| format!("mapping buddy-alloc's 4 GiB region: {e}"))?;
    PageblockPeer::try_with_layout(Policy::default(), cfg.memmap_layout)
        .map_err(|e| format!("pageblock's 4 GiB arena: {e}"))?;
    let mut samples = Samples::new();
    let mut bulk_free = [Vec::new(), Vec::new(), Vec::new()];
    let mut batch = Vec::new();
    for rep in 0..cfg.reps {
        one_rep(cfg, rep, &arena, &mut samples, &mut bulk_free, &mut batch);
        progress(rep + 1, cfg.reps);
    }
    let mut results = Vec::new();
    for peer in PeerKind::ALL {
        for case in CASES {
            let v: Vec<f64> = samples.iter().filter(|s| s.0 == peer && s.1 == case).map(|s| s.2).collect();
            let m = median(&v);
            let two = case.starts_with("e_");
            results.push(CaseResult {
                allocator: peer.name(),
                case,
                ns_per_op: (!two).then_some(m),
                mops_per_s: two.then_some(m),
                samples: v,
            });
        }
    }
    let bulk_free = BULK_FREE_SETTINGS
        .iter()
        .zip(bulk_free)
        .map(|(&(setting, ..), v)| BulkFreeResult { setting, ns_per_free: median(&v), samples: v })
        .collect();
    let free_pages_batch =
        BulkFreeResult { setting: "free_pages_batch, one call", ns_per_free: median(&batch), samples: batch };
    Ok(FastpathReport { results, bulk_free, free_pages_batch })
}
