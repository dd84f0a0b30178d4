//! No page ever has two owners (issue 20, acceptance): random interleavings of raw blocks,
//! movable handles, pins, single and batch frees, handle frees and compaction, mixed with
//! hostile frees — of handles' pages (head, interior, any order), interior pages and wrong
//! orders of raw blocks, free pages and pfns outside the arena.
//!
//! The seeded test (metadata only, one CPU slot: a seed is one run) keeps a shadow of who
//! owns which pfn range and checks after every step that the ranges are disjoint, that the
//! memmap records each owner (a raw block as its caller's, a handle's as the handle's), that
//! a handle moves only when compaction runs, and that `verify()` passes; every hostile call
//! must fail and leave every state word and counter as it was. The threaded test, in real
//! memory, runs the hostile frees against pinned handles while other threads allocate, free
//! and compact, and checks every byte of every handle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pageblock::{Allocator, FreeError, Gfp, Movable, Pfn, Policy, ZoneConfig};
use pageblock_core::memmap::Memmap;
use pageblock_core::VmEvent;

mod common;
use common::{fill, intact, state_words, Rng};

const MIB: u64 = 1 << 20;
/// Pages the seeded test keeps allocated at most (of its zone's 6144).
const FOOTPRINT: u64 = 4000;
/// Seeds, and steps per seed, of the seeded test.
const STEPS: (u64, u64) = (16, 3000);

/// Everything a refused call must leave as it was: every state word, the free count and
/// the per-CPU counts.
fn snapshot(a: &Allocator) -> (Vec<u32>, u64, Vec<u64>) {
    let zone = a.shared().zone(0);
    let cpus = (0..a.nr_cpus()).map(|c| zone.counters().cpu(c).count()).collect();
    (state_words(a), a.shared().nr_free_pages(), cpus)
}

/// The single-threaded world: the allocator and the shadow of what this test owns.
struct World {
    a: Allocator,
    rng: Rng,
    /// Raw blocks: pfn, order.
    raw: Vec<(Pfn, u32)>,
    /// Handles and where the last pin saw them.
    handles: Vec<(Movable, Pfn)>,
    /// Whether the footprint is growing towards [`FOOTPRINT`] or shrinking from it.
    growing: bool,
    /// Pages compaction had moved at the last check.
    moved: u64,
    hostile: u64,
}

impl World {
    fn new(seed: u64) -> World {
        // One CPU slot: handles use the thread's slot, and with more than one which slot a
        // test thread gets depends on the other tests' threads. Metadata only: an arena's
        // start (on a 4 MiB boundary or not) would change the buddy layout from run to run.
        let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(24 * MIB) };
        let a = Allocator::single_zone(zone, Policy::default()).unwrap();
        World { a, rng: Rng(seed), raw: Vec::new(), handles: Vec::new(), growing: true, moved: 0, hostile: 0 }
    }

    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next() % n as u64) as usize
    }

    fn footprint(&self) -> u64 {
        let raw: u64 = self.raw.iter().map(|&(_, o)| 1 << o).sum();
        raw + self.handles.iter().map(|(m, _)| 1u64 << m.order()).sum::<u64>()
    }

    /// One random step. The footprint swings between a quarter of [`FOOTPRINT`] and all of
    /// it, so random frees leave holes for compaction to fill.
    fn step(&mut self) {
        let footprint = self.footprint();
        if !(FOOTPRINT / 4..=FOOTPRINT).contains(&footprint) {
            self.growing = footprint < FOOTPRINT / 4;
        }
        let r = self.rng.next() % 100;
        match (r, self.growing) {
            (0..=24, true) | (0..=7, false) => self.alloc_raw(),
            (25..=49, true) | (8..=15, false) => self.alloc_handle(),
            (50..=55, true) | (16..=35, false) => self.free_raw(),
            (56..=59, true) | (36..=45, false) => self.free_batch(),
            (60..=65, true) | (46..=65, false) => self.free_handle(),
            (66..=71, _) => self.pin_one(),
            (72..=75, _) => self.compact(),
            _ => self.hostile(),
        }
    }

    fn alloc_raw(&mut self) {
        let order = [0, 0, 0, 1, 2, 3, 9][self.pick(7)];
        let gfp = [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL | Gfp::RECLAIMABLE][self.pick(3)];
        if let Ok(pfn) = self.a.alloc_pages(order, gfp) {
            self.raw.push((pfn, order));
        }
    }

    fn alloc_handle(&mut self) {
        let order = [0, 0, 0, 1, 2, 3][self.pick(6)];
        if let Ok(mut m) = self.a.alloc_movable(order, Gfp::HIGHUSER_MOVABLE) {
            let pfn = self.a.pin(&mut m).unwrap().pfn();
            self.handles.push((m, pfn));
        }
    }

    fn free_raw(&mut self) {
        if self.raw.is_empty() {
            return;
        }
        let i = self.pick(self.raw.len());
        let (pfn, order) = self.raw.swap_remove(i);
        self.a.free_pages(pfn, order).expect("freeing an own raw block");
    }

    /// Up to four raw blocks of one order in one batch.
    fn free_batch(&mut self) {
        let i = self.pick(self.raw.len().max(1));
        let Some(&(_, order)) = self.raw.get(i) else {
            return;
        };
        let mut batch = Vec::new();
        while batch.len() < 4 {
            let Some(i) = self.raw.iter().position(|&(_, o)| o == order) else {
                break;
            };
            batch.push(self.raw.swap_remove(i).0);
        }
        self.a.free_pages_batch(&batch, order).expect("freeing own raw blocks");
    }

    fn free_handle(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let i = self.pick(self.handles.len());
        let (m, _) = self.handles.swap_remove(i);
        self.a.free_movable(m).map_err(|(_, e)| e).expect("freeing an own handle");
    }

    fn pin_one(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let i = self.pick(self.handles.len());
        let (m, pfn) = &mut self.handles[i];
        assert_eq!(self.a.pin(m).unwrap().pfn(), *pfn, "a handle moved without compaction");
    }

    /// Compaction, explicitly or as a huge page request under fragmentation would run it.
    fn compact(&mut self) {
        if self.rng.next() % 2 == 0 {
            self.a.compact_memory();
        } else if let Ok(pfn) = self.a.alloc_pages(9, Gfp::TRANSHUGE_LIGHT) {
            self.raw.push((pfn, 9));
        }
    }

    /// One hostile call: it must fail and change nothing.
    fn hostile(&mut self) {
        let zone = self.a.shared().zone(0).config();
        let (start, end) = (zone.start_pfn, zone.end_pfn());
        let before = snapshot(&self.a);
        let kind = self.pick(7);
        let (pfn, order) = match kind {
            // A handle's head at its order or another, or one of its interior pages.
            0..=2 if !self.handles.is_empty() => {
                let i = self.pick(self.handles.len());
                let (head, o) = (self.handles[i].1, self.handles[i].0.order());
                match kind {
                    0 => (head, o),
                    1 => (head, (o + 1 + self.pick(3) as u32) % 4),
                    _ => (Pfn(head.0 + self.pick(1 << o) as u64), 0),
                }
            }
            // An interior page or a wrong order of a raw block.
            3 | 4 if !self.raw.is_empty() => {
                let i = self.pick(self.raw.len());
                let (p, o) = self.raw[i];
                if kind == 3 && o > 0 {
                    (Pfn(p.0 + 1 + self.pick((1 << o) - 1) as u64), 0)
                } else {
                    (p, (o + 1 + self.pick(3) as u32) % 10)
                }
            }
            // A page nobody here owns: free, or inside a free block.
            5 => {
                let p = start + (self.rng.next() % (end - start));
                if self.owner_of(p).is_some() {
                    return;
                }
                (Pfn(p), self.pick(4) as u32)
            }
            // Outside the arena.
            _ => ([Pfn(start - 1), Pfn(end), Pfn(0), Pfn(u64::MAX)][self.pick(4)], 0),
        };
        let handle = self.handles.iter().any(|(m, h)| (h.0..h.0 + (1 << m.order())).contains(&pfn.0));
        let refused = match self.pick(3) {
            0 => self.a.free_pages(pfn, order).unwrap_err(),
            1 => {
                // The hostile block first, own blocks after it: nothing is freed.
                let own: Vec<Pfn> = self.raw.iter().filter(|r| r.1 == order).map(|r| r.0).take(2).collect();
                let batch: Vec<Pfn> = std::iter::once(pfn).chain(own).collect();
                let e = self.a.on_cpu(0).unwrap().free_pages_batch(&batch, order).unwrap_err();
                assert_eq!(e.freed, 0, "{e}");
                e.error
            }
            _ => self.a.shared().set_pinned(pfn, order, true).unwrap_err(),
        };
        if handle {
            assert_eq!(refused, FreeError::HandleOwned { pfn }, "order {order}");
        }
        assert_eq!(snapshot(&self.a), before, "a refused call ({refused}) changed something");
        self.hostile += 1;
    }

    /// Which of the shadow's blocks covers `pfn`, if any.
    fn owner_of(&self, pfn: u64) -> Option<usize> {
        let raw = self.raw.iter().copied();
        let handles = self.handles.iter().map(|(m, p)| (*p, m.order()));
        raw.chain(handles).position(|(p, o)| (p.0..p.0 + (1 << o)).contains(&pfn))
    }

    /// After every step: handles moved only if compaction moved pages (any allocation may
    /// compact), the shadow's ranges are disjoint, the memmap records each owner, and the
    /// allocator's invariants hold.
    fn check(&mut self) {
        let moved = self.a.shared().event(VmEvent::PgMigrateSuccess);
        for (m, pfn) in &mut self.handles {
            let now = self.a.pin(m).unwrap().pfn();
            assert!(now == *pfn || moved > self.moved, "handle at {pfn} moved to {now} without compaction");
            *pfn = now;
        }
        self.moved = moved;
        let mut ranges: Vec<(u64, u64)> = self.raw.iter().map(|&(p, o)| (p.0, p.0 + (1 << o))).collect();
        ranges.extend(self.handles.iter().map(|(m, p)| (p.0, p.0 + (1 << m.order()))));
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(w[0].1 <= w[1].0, "pages {:#x}..{:#x} have two owners", w[1].0, w[0].1.min(w[1].1));
        }
        let zone = self.a.shared().zone(0);
        let word = |p: Pfn| zone.memmap().info_word((p.0 - zone.config().start_pfn) as u32);
        for &(p, o) in &self.raw {
            assert!(Memmap::word_is_allocated(word(p), o), "raw block {p} is not its caller's");
        }
        for (m, p) in &self.handles {
            assert!(Memmap::word_is_handle(word(*p), m.order()), "handle block {p} is not the handle's");
        }
        self.a.verify().unwrap();
    }

    fn teardown(mut self) {
        while !self.raw.is_empty() {
            self.free_raw();
        }
        while !self.handles.is_empty() {
            self.free_handle();
        }
        self.a.drain_all_pages();
        let census = self.a.verify().unwrap();
        assert_eq!(census.allocated, 0, "every page is back");
    }
}

#[test]
fn seeded_interleavings_never_give_a_page_two_owners() {
    let (mut hostile, mut moved) = (0, 0);
    for seed in 1..=STEPS.0 {
        let mut w = World::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        for _ in 0..STEPS.1 {
            w.step();
            w.check();
        }
        hostile += w.hostile;
        moved += w.moved;
        w.teardown();
    }
    eprintln!("{hostile} hostile calls, {moved} pages moved");
    assert!(hostile > STEPS.0 * STEPS.1 / 10, "only {hostile} hostile calls were made");
    assert!(moved > 0, "compaction never moved a handle");
}

/// Threads share a pool of handles (one thread at a time per handle): each allocates,
/// stamps, checks and frees handles and raw blocks, and while it holds a handle pinned
/// tries to free its pages raw; another thread compacts all the while.
#[test]
fn hostile_frees_of_pinned_handles_fail_while_threads_allocate_and_compact() {
    let a = Allocator::with_arena_quiet(24 * MIB, 3, Policy::default()).unwrap();
    let pool: Vec<Mutex<Option<(Movable, u64)>>> = checkerboard(&a).into_iter().map(Mutex::new).collect();
    let stop = AtomicBool::new(false);
    let hostile = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                a.compact_memory();
            }
        });
        // Stops the compactor however the workers end (a failed check panics).
        let _stop = StopOnDrop(&stop);
        let workers: Vec<_> = (0..3u64)
            .map(|t| {
                let (a, pool, hostile) = (&a, &pool, &hostile);
                s.spawn(move || {
                    let mut rng = Rng(0x1234_5678_9abc_def1 ^ (t + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
                    let mut raw: Vec<(Pfn, u32)> = Vec::new();
                    for _ in 0..20_000 {
                        let r = rng.next();
                        if r % 8 == 0 {
                            let order = (r >> 8) as u32 % 3;
                            if let Ok(p) = a.alloc_pages(order, Gfp::HIGHUSER_MOVABLE) {
                                raw.push((p, order));
                            }
                            if raw.len() > 16 {
                                let (p, order) = raw.swap_remove(0);
                                a.free_pages(p, order).expect("freeing an own raw block");
                            }
                            continue;
                        }
                        let mut slot = pool[(r >> 16) as usize % pool.len()].lock().unwrap();
                        match slot.take() {
                            None => {
                                if let Ok(mut m) = a.alloc_movable((r >> 8) as u32 % 3, Gfp::HIGHUSER_MOVABLE)
                                {
                                    fill(a, &mut m, r);
                                    *slot = Some((m, r));
                                }
                            }
                            Some((m, seed)) if r % 5 == 0 => {
                                let mut m = m;
                                assert!(intact(a, &mut m, seed), "a handle's bytes changed");
                                a.free_movable(m).map_err(|(_, e)| e).unwrap();
                            }
                            Some((mut m, seed)) => {
                                hostile_while_pinned(a, &mut m, &mut rng);
                                hostile.fetch_add(1, Ordering::Relaxed);
                                assert!(intact(a, &mut m, seed), "a handle's bytes changed");
                                *slot = Some((m, seed));
                            }
                        }
                    }
                    for (p, order) in raw {
                        a.free_pages(p, order).expect("freeing an own raw block");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
    for slot in &pool {
        if let Some((mut m, seed)) = slot.lock().unwrap().take() {
            assert!(intact(&a, &mut m, seed), "a handle's bytes changed");
            a.free_movable(m).map_err(|(_, e)| e).unwrap();
        }
    }
    a.verify().unwrap();
    let moved = a.shared().event(VmEvent::PgMigrateSuccess);
    eprintln!("{} hostile rounds, {moved} pages moved", hostile.load(Ordering::Relaxed));
    assert!(moved > 0, "compaction never moved a handle");
}

/// Fill the arena with order-0 handles and free every other one (so compaction has work
/// from the start); the survivors, with an empty slot for each freed one.
fn checkerboard(a: &Allocator) -> Vec<Option<(Movable, u64)>> {
    let mut all = Vec::new();
    while let Ok(mut m) = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE) {
        let seed = 0x5bd1_e995 * (all.len() as u64 + 1);
        fill(a, &mut m, seed);
        all.push((m, seed));
    }
    let mut slots = Vec::new();
    for (mut m, seed) in all {
        if a.pin(&mut m).unwrap().pfn().0 % 2 == 0 {
            a.free_movable(m).map_err(|(_, e)| e).unwrap();
            slots.push(None);
        } else {
            slots.push(Some((m, seed)));
        }
    }
    slots
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Pin `m` (it cannot move or be freed by its handle now) and free its pages raw, every way.
/// A compaction run may hold the block isolated for a moment (it scans, finds it pinned and
/// puts it back): then the refusal says the block is not allocated, but it is still refused.
fn hostile_while_pinned(a: &Allocator, m: &mut Movable, rng: &mut Rng) {
    let order = m.order();
    let pinned = a.pin(m).unwrap();
    let head = pinned.pfn();
    let pfn = Pfn(head.0 + rng.next() % (1 << order));
    let o = (rng.next() % 4) as u32;
    assert!(a.free_pages(pfn, o).is_err(), "a raw free of a pinned handle's page {pfn}");
    let e = a.free_pages_batch(&[head], order).unwrap_err();
    assert_eq!(e.freed, 0);
    assert!(matches!(e.error, FreeError::HandleOwned { .. } | FreeError::DoubleFree { .. }), "{e}");
    drop(pinned);
}
