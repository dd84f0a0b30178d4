//! Real threads, real memory, and the background work running under them: worker threads
//! allocate movable handles, write a known pattern into every byte, rewrite, check and free
//! them, feed a cache that a shrinker empties under pressure, and ask for huge pages; a
//! compactor thread runs `compact_memory` over and over; kswapd and kcompactd run as the
//! allocator's own threads; direct compaction and reclaim run on the workers.
//!
//! After every compaction that moved anything (the node's `pgmigrate_success` changed),
//! each worker checks every byte of every handle it owns; the shrinker checks every handle
//! it drops. At the end every page is back, the census adds up, and `verify()` is clean.
//!
//! Scale with `PAGEBLOCK_COMPACT_STRESS_OPS` (operations per worker).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pageblock::{
    Allocator, DefragModeFix, Gfp, Movable, Pfn, Policy, ShrinkControl, Shrinker, Switches, Sysctl,
};
use pageblock_core::VmEvent;

mod common;
use common::{fill, holds, intact, Rng};

const WORKERS: u64 = 3;
/// Pages a worker keeps live at most (the cache and huge pages come on top).
const OWN_LIMIT: usize = 1200;

fn ops() -> u64 {
    std::env::var("PAGEBLOCK_COMPACT_STRESS_OPS").ok().and_then(|v| v.parse().ok()).unwrap_or(6000)
}

/// Cache pages reclaim may drop, oldest first; each is checked as it goes.
#[derive(Default)]
struct Cache {
    entries: Mutex<VecDeque<(Movable, u64)>>,
    evicted: AtomicU64,
    corrupt: AtomicU64,
}

impl Shrinker for Cache {
    fn count_objects(&self) -> u64 {
        self.entries.lock().unwrap().len() as u64
    }

    fn scan_objects(&self, sc: &mut ShrinkControl<'_>) {
        for _ in 0..sc.nr_to_scan() {
            let Some((mut m, seed)) = self.entries.lock().unwrap().pop_front() else {
                break;
            };
            if !holds(&sc.pin(&mut m).expect("the cache's own handle"), seed) {
                self.corrupt.fetch_add(1, Ordering::Relaxed);
            }
            sc.free_movable(m).map_err(|(_, e)| e).expect("the cache's own handle");
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One worker's life: returns how many full checks it made after compactions.
fn worker(a: &Allocator, cache: &Cache, owner: u64) -> u64 {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (owner + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let mut own: Vec<(Movable, u64)> = Vec::new();
    let mut huge: Vec<Pfn> = Vec::new();
    let mut seen = 0;
    let mut checks = 0;
    let check_all = |own: &mut Vec<(Movable, u64)>| {
        for (m, seed) in own.iter_mut() {
            assert!(intact(a, m, *seed), "worker {owner}: a handle's bytes changed");
        }
    };
    for _ in 0..ops() {
        let r = rng.next();
        let seed = rng.next();
        match r % 16 {
            0..=6 if own.len() < OWN_LIMIT => {
                let order = [0, 0, 0, 0, 0, 1, 2, 3][(r >> 8) as usize % 8];
                if let Ok(mut m) = a.alloc_movable(order, Gfp::HIGHUSER_MOVABLE) {
                    fill(a, &mut m, seed);
                    own.push((m, seed));
                }
            }
            0..=9 if !own.is_empty() => {
                let (mut m, s) = own.swap_remove((r >> 8) as usize % own.len());
                assert!(intact(a, &mut m, s), "worker {owner}: a handle's bytes changed");
                a.free_movable(m).map_err(|(_, e)| e).unwrap();
            }
            10..=12 => {
                if let Ok(mut m) = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE) {
                    fill(a, &mut m, seed);
                    cache.entries.lock().unwrap().push_back((m, seed));
                }
            }
            13 => {
                if let Ok(pfn) = a.alloc_pages(9, Gfp::TRANSHUGE) {
                    huge.push(pfn);
                }
                if huge.len() > 2 {
                    a.free_pages(huge.remove(0), 9).unwrap();
                }
            }
            14 if !own.is_empty() => {
                let i = (r >> 8) as usize % own.len();
                let (m, s) = &mut own[i];
                assert!(intact(a, m, *s));
                fill(a, m, seed);
                *s = seed;
            }
            _ => {}
        }
        let migrated = a.shared().event(VmEvent::PgMigrateSuccess);
        if migrated != seen {
            seen = migrated;
            checks += 1;
            check_all(&mut own);
        }
    }
    check_all(&mut own);
    for (m, _) in own {
        a.free_movable(m).map_err(|(_, e)| e).unwrap();
    }
    for pfn in huge {
        a.free_pages(pfn, 9).unwrap();
    }
    checks
}

fn run(policy: Policy) {
    let a = Arc::new(Allocator::with_arena_cpus(32 << 20, 4, policy).unwrap());
    let cache = Arc::new(Cache::default());
    a.register_shrinker(cache.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (a, stop) = (Arc::clone(&a), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut runs = 0u64;
            while !stop.load(Ordering::Relaxed) {
                a.compact_memory();
                runs += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            runs
        })
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|owner| {
            let (a, cache) = (Arc::clone(&a), Arc::clone(&cache));
            std::thread::spawn(move || worker(&a, &cache, owner))
        })
        .collect();
    let checks: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    stop.store(true, Ordering::Relaxed);
    let compactions = compactor.join().unwrap();

    // Empty the cache (each entry checked), then quiesce and count every page.
    for (mut m, seed) in cache.entries.lock().unwrap().drain(..) {
        assert!(intact(&a, &mut m, seed), "a cache page's bytes changed");
        a.free_movable(m).map_err(|(_, e)| e).unwrap();
    }
    let mut a = Arc::into_inner(a).expect("every other holder is gone");
    a.stop_daemons();
    a.drain_all_pages();
    let census = a.verify().expect("verify after the stress");
    let node = a.shared();
    let managed: u64 = node.zones().iter().map(|z| z.managed_pages()).sum();
    let ev = |e| node.event(e);
    eprintln!(
        "{checks} full checks, {compactions} compact_memory runs, pgmigrate_success {}, \
         compact_stall {}, compact_daemon_wake {}, pageoutrun {}, cache evictions {}",
        ev(VmEvent::PgMigrateSuccess),
        ev(VmEvent::CompactStall),
        ev(VmEvent::CompactDaemonWake),
        ev(VmEvent::Pageoutrun),
        cache.evicted.load(Ordering::Relaxed),
    );
    assert_eq!(cache.corrupt.load(Ordering::Relaxed), 0, "a cache page changed before eviction");
    assert_eq!((census.allocated, census.pcp, census.isolated), (0, 0, 0), "{census:?}");
    assert_eq!(census.free, managed, "pages were lost: {census:?}");
    assert!(ev(VmEvent::PgMigrateSuccess) > 0, "nothing ever moved");
    assert!(checks > 0, "no worker checked its handles after a compaction");
    assert!(cache.evicted.load(Ordering::Relaxed) > 0, "reclaim never emptied the cache");
}

#[test]
fn handles_survive_compaction_and_reclaim_under_threads_vanilla() {
    run(Policy::default());
}

#[test]
fn handles_survive_compaction_and_reclaim_under_threads_defrag_mode() {
    let defrag_mode = Policy::default().with_sysctl(Sysctl::DefragMode, 1).unwrap();
    run(Policy {
        defrag_mode_fixes: Switches::none().with(DefragModeFix::AtomicFallback, true),
        ..defrag_mode
    });
}
