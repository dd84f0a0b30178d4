//! Movable handles, shrinkers and the daemon threads, one behaviour per test: compaction
//! copies a handle's bytes and makes a huge page where none was; a pinned handle never
//! moves; a foreign handle is refused and handed back; reclaim asks shrinkers for pages, on
//! the allocating thread and on kswapd's; huge blocks are 2 MiB-aligned and THP-advised.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pageblock::{Allocator, Gfp, Movable, MovableError, Policy, ShrinkControl, Shrinker};
use pageblock_core::vmscan::MAX_RECLAIM_RETRIES;
use pageblock_core::{VmEvent, ZoneType};

mod common;
use common::{fill, intact};

const MIB: u64 = 1 << 20;

// Arenas of at least five pageblocks (10 MiB): smaller nodes do not group pages by mobility
// (`page_group_by_mobility_disabled`), so every block is unmovable and compaction finds no
// block to migrate into, as in the kernel.

fn quiet(mib: u64) -> Allocator {
    Allocator::with_arena_quiet(mib * MIB, 2, Policy::default()).unwrap()
}

/// Fill the zone with order-0 handles, then free every other one: free memory is plenty but
/// no two free pages are buddies. Returns the survivors with their seeds.
fn checkerboard(a: &Allocator) -> Vec<(Movable, u64)> {
    let mut all = Vec::new();
    while let Ok(mut m) = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE) {
        let seed = 0x1234_5678 * (all.len() as u64 + 1);
        fill(a, &mut m, seed);
        let pfn = a.pin(&mut m).unwrap().pfn();
        all.push((m, seed, pfn));
    }
    let mut kept = Vec::new();
    for (m, seed, pfn) in all {
        if pfn.0 % 2 == 0 {
            a.free_movable(m).unwrap();
        } else {
            kept.push((m, seed));
        }
    }
    a.drain_all_pages();
    kept
}

/// A huge-page request that may compact but not reclaim (`GFP_TRANSHUGE_LIGHT` plus direct
/// reclaim would reclaim; without it, only compaction can make the block).
fn huge_without_reclaim(a: &Allocator) -> bool {
    a.alloc_pages(9, Gfp::TRANSHUGE_LIGHT).is_ok()
}

#[test]
fn compaction_copies_handles_and_makes_a_huge_page_from_a_checkerboard() {
    let a = quiet(16);
    let mut kept = checkerboard(&a);
    assert!(!huge_without_reclaim(&a), "no order-9 block exists before compaction");
    let before = a.shared().event(VmEvent::PgMigrateSuccess);
    a.compact_memory();
    let moved = a.shared().event(VmEvent::PgMigrateSuccess) - before;
    assert!(moved > 0, "compaction moved nothing");
    for (m, seed) in &mut kept {
        assert!(intact(&a, m, *seed), "a handle's bytes changed in the move");
    }
    assert!(a.alloc_pages(9, Gfp::TRANSHUGE_LIGHT).is_ok(), "compaction made no huge page");
    for (m, _) in kept {
        a.free_movable(m).unwrap();
    }
    a.verify().unwrap();
}

#[test]
fn a_pinned_handle_never_moves() {
    let a = quiet(16);
    let mut kept = checkerboard(&a);
    let (first, rest) = kept.split_first_mut().unwrap();
    let pinned = a.pin(&mut first.0).unwrap();
    let at = pinned.pfn();
    a.compact_memory();
    assert!(a.shared().event(VmEvent::PgMigrateSuccess) > 0, "others moved");
    assert_eq!(pinned.pfn(), at);
    drop(pinned);
    assert_eq!(a.pin(&mut first.0).unwrap().pfn(), at, "it stayed where it was pinned");
    assert!(intact(&a, &mut first.0, first.1));
    for (m, seed) in rest {
        assert!(intact(&a, m, *seed));
    }
    for (m, _) in kept {
        a.free_movable(m).unwrap();
    }
    a.verify().unwrap();
}

#[test]
fn a_foreign_handle_is_refused_and_handed_back() {
    let (a, b) = (quiet(4), quiet(4));
    let m = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let _other = b.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
    let census = (a.verify().unwrap(), b.verify().unwrap());
    let (mut m, e) = b.free_movable(m).unwrap_err();
    assert_eq!(e, MovableError::Foreign);
    assert!(matches!(b.pin(&mut m), Err(MovableError::Foreign)));
    assert_eq!((a.verify().unwrap(), b.verify().unwrap()), census, "nothing changed");
    a.free_movable(m).unwrap();
    assert!(a.alloc_movable(0, Gfp::KERNEL).is_err(), "a movable handle needs a movable mask");
}

/// A cache of order-0 handles that reclaim may drop, oldest first.
#[derive(Default)]
struct Cache {
    entries: Mutex<VecDeque<Movable>>,
    freed: AtomicU64,
    /// Freed on a thread named `kswapd0`.
    freed_by_kswapd: AtomicU64,
}

impl Shrinker for Cache {
    fn count_objects(&self) -> u64 {
        self.entries.lock().unwrap().len() as u64
    }

    fn scan_objects(&self, sc: &mut ShrinkControl<'_>) {
        let kswapd = std::thread::current().name() == Some("kswapd0");
        for _ in 0..sc.nr_to_scan() {
            let Some(m) = self.entries.lock().unwrap().pop_front() else {
                break;
            };
            sc.free_movable(m).unwrap();
            self.freed.fetch_add(1, Ordering::Relaxed);
            if kswapd {
                self.freed_by_kswapd.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[test]
fn direct_reclaim_asks_the_shrinker_on_the_allocating_thread() {
    let a = quiet(8);
    let cache = Arc::new(Cache::default());
    for _ in 0..1024 {
        let m = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
        cache.entries.lock().unwrap().push_back(m);
    }
    a.register_shrinker(cache.clone());
    // Fill the rest with memory nobody can reclaim: the next requests must reclaim.
    let mut pinned = Vec::new();
    while let Ok(p) = a.alloc_pages(0, Gfp::KERNEL) {
        pinned.push(p);
        if cache.freed.load(Ordering::Relaxed) > 0 {
            break;
        }
    }
    assert!(cache.freed.load(Ordering::Relaxed) > 0, "direct reclaim never asked the shrinker");
    assert_eq!(cache.freed_by_kswapd.load(Ordering::Relaxed), 0, "no kswapd thread runs");
    assert!(a.shared().event(VmEvent::SlabsScanned) > 0);
    assert!(
        a.shared().counters().allocstall(ZoneType::Normal) > 0,
        "the allocating thread stalled to reclaim"
    );
    for p in pinned {
        a.free_pages(p, 0).unwrap();
    }
    for m in cache.entries.lock().unwrap().drain(..) {
        a.free_movable(m).unwrap();
    }
    a.drain_all_pages();
    let census = a.verify().unwrap();
    assert_eq!(census.allocated, 0);
}

/// Poll `done` until it holds or `limit` passes (the daemons run on their own schedule).
fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

#[test]
fn kswapd_thread_reclaims_in_the_background_and_stops_with_the_allocator() {
    let mut a = Allocator::with_arena_cpus(8 * MIB, 2, Policy::default()).unwrap();
    assert!(a.daemons_running());
    let cache = Arc::new(Cache::default());
    a.register_shrinker(cache.clone());
    // Fill with cache pages only, without ever reclaiming directly: kswapd must do it.
    while let Ok(m) = a.alloc_movable(0, Gfp::NOWAIT | Gfp::MOVABLE) {
        cache.entries.lock().unwrap().push_back(m);
    }
    assert!(
        eventually(Duration::from_secs(20), || cache.freed_by_kswapd.load(Ordering::Relaxed) > 0),
        "kswapd never shrank the cache"
    );
    assert!(a.shared().event(VmEvent::Pageoutrun) > 0);
    a.stop_daemons();
    assert!(!a.daemons_running());
    for m in cache.entries.lock().unwrap().drain(..) {
        a.free_movable(m).unwrap();
    }
    a.drain_all_pages();
    assert_eq!(a.verify().unwrap().allocated, 0);
}

/// R5: woken once on a node with nothing to reclaim, the kswapd thread re-enters
/// `balance_pgdat` by itself until `MAX_RECLAIM_RETRIES` runs reclaimed nothing, then sleeps.
#[test]
fn kswapd_thread_runs_until_hopeless_after_one_wake_up() {
    let a = Allocator::with_arena_cpus(8 * MIB, 2, Policy::default()).unwrap();
    let runs = || a.shared().event(VmEvent::Pageoutrun);
    let mut pinned = Vec::new();
    while runs() == 0 && !a.shared().daemons().kswapd_woken {
        pinned.push(a.alloc_pages(0, Gfp::KERNEL).unwrap());
    }
    let retries = u64::from(MAX_RECLAIM_RETRIES);
    assert!(
        eventually(Duration::from_secs(20), || runs() >= retries),
        "kswapd ran {} times after one wake-up",
        runs()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(runs(), retries, "hopeless: kswapd sleeps through its nap");
    assert_eq!(a.shared().daemons().kswapd_failures, MAX_RECLAIM_RETRIES);
    for p in pinned {
        a.free_pages(p, 0).unwrap();
    }
}

#[test]
fn huge_blocks_are_2mib_aligned_in_a_thp_advised_mapping() {
    let a = quiet(8);
    let pfn = a.alloc_pages(9, Gfp::TRANSHUGE_LIGHT).unwrap();
    let addr = a.page_ptr(pfn).unwrap().as_ptr() as usize;
    assert_eq!(addr % (2 << 20), 0);
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let in_arena = |line: &str| {
        let range = line.split_whitespace().next().unwrap_or("");
        let Some((lo, hi)) = range.split_once('-') else { return false };
        match (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
            (Ok(lo), Ok(hi)) => lo <= addr && addr < hi,
            _ => false,
        }
    };
    let vma = smaps.lines().position(in_arena).expect("the arena's mapping is in smaps");
    let flags = smaps.lines().skip(vma).find(|l| l.starts_with("VmFlags:")).unwrap();
    assert!(flags.split_whitespace().any(|f| f == "hg"), "MADV_HUGEPAGE not set: {flags}");
    a.free_pages(pfn, 9).unwrap();
}

#[test]
fn kcompactd_thread_compacts_a_fragmented_arena_proactively() {
    let mut a = Allocator::with_arena_quiet(16 * MIB, 2, Policy::default()).unwrap();
    let mut kept = checkerboard(&a);
    assert!(!huge_without_reclaim(&a), "no order-9 block exists yet");
    a.start_daemons().unwrap();
    // Every free page is an order-0 one: the fragmentation score is far above the
    // proactiveness goal, and kcompactd's 500 ms timer finds it.
    assert!(
        eventually(Duration::from_secs(20), || a.shared().event(VmEvent::CompactDaemonMigrateScanned) > 0),
        "kcompactd never ran"
    );
    a.stop_daemons();
    assert!(a.shared().event(VmEvent::PgMigrateSuccess) > 0);
    for (m, seed) in &mut kept {
        assert!(intact(&a, m, *seed), "a handle's bytes changed in the move");
    }
    assert!(huge_without_reclaim(&a), "proactive compaction made no huge page");
    for (m, _) in kept {
        a.free_movable(m).unwrap();
    }
    a.verify().unwrap();
}
