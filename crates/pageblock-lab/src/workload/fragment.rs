//! `fragment`: a long-running mix that leaves a zone fragmented, the way a machine looks
//! after days of kernel builds, page cache churn and slab growth.
//!
//! Each operation either frees the allocation whose lifetime ended first or allocates a new
//! block. The footprint first ramps up until the zone is full (an order-0 request fails at
//! the watermarks), then swings between 100% and 40% of the zone (70% on average), the way
//! page cache and anonymous memory grow until memory is full and are then cut back: each
//! swing down punches holes all over the zone, each swing up fills them with whatever type
//! asks next.
//!
//! Requests:
//!
//! | order | share of requests | types (movable / unmovable / reclaimable) |
//! |---|---|---|
//! | 0 | 81.3% | 85 / 8 / 7 and 45 / 32 / 23, alternating per swing |
//! | 1 | 8% | same |
//! | 2 | 5% | same |
//! | 3 | 5.5% | same |
//! | 9 (THP) | 0.2% | 95 / 5 / 0 |
//!
//! By pages, huge pages make up about a third of the demand. Each operation runs on a CPU
//! drawn at random, so a block is often freed on another CPU than the one that allocated it
//! and every CPU's per-CPU lists take part. Lifetimes are drawn per type:
//! movable memory is mostly short-lived (page cache, anonymous memory of short processes),
//! unmovable memory is often long-lived or permanent (kernel structures), reclaimable memory
//! (slab caches) sits in between. Long-lived unmovable and reclaimable blocks end up scattered
//! across movable pageblocks by fallbacks: that is the fragmentation the allocator fights.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pageblock_core::{Gfp, MigrateType, Pfn};

use crate::prng::Prng;
use crate::report::RunReport;
use crate::workload::{Pages, Workload};

/// Orders requested and their weights (per ten thousand requests).
const ORDERS: [(u32, u32); 5] = [(0, 8130), (1, 800), (2, 500), (3, 550), (9, 20)];
/// Migratetype weights (movable, unmovable, reclaimable) for small requests, alternating
/// from one swing of the footprint to the next: page-cache growth, then a slab storm (a
/// kernel build's dentries and inodes). 65/20/15 on average.
const TYPES_SMALL: [[u32; 3]; 2] = [[85, 8, 7], [45, 32, 23]];
/// Migratetype weights for huge requests.
const TYPES_HUGE: [u32; 3] = [95, 5, 0];

/// Lifetime classes: (weight per type movable/unmovable/reclaimable, range). Ranges are in
/// units of 1/16 of the zone's turnover `T`, the number of live allocations at the target
/// footprint, so a zone of any size fills to the target and then churns; `u64::MAX` means
/// the block is never freed during the run.
const LIFETIMES: [([u32; 3], (u64, u64)); 4] = [
    ([50, 30, 20], (0, 2)),
    ([35, 30, 50], (2, 32)),
    ([15, 30, 30], (32, 320)),
    ([0, 10, 0], (u64::MAX, u64::MAX)),
];

/// Average pages per request, from [`ORDERS`]: 0.813 + 0.08×2 + 0.05×4 + 0.055×8 + 0.002×512.
const MEAN_REQUEST_PAGES: u64 = 4;

/// The footprint swings between these percentages of the zone (70% on average).
const PEAK_PERCENT: u64 = 100;
const TROUGH_PERCENT: u64 = 40;

/// The `fragment` workload.
#[derive(Debug)]
pub struct Fragment {
    prng: Prng,
    nr_cpus: usize,
    /// Live allocations by time of death: `(death, pfn, order)`, earliest first.
    live: BinaryHeap<Reverse<(u64, u64, u32)>>,
    held: u64,
    managed: u64,
    /// Operation at which the footprint first reached the peak (the swinging starts).
    peak_reached: Option<u64>,
    /// Operations per full swing (peak → trough → peak).
    swing_period: u64,
    /// One sixteenth of the turnover: live allocations at the target footprint / 16.
    lifetime_unit: u64,
    now: u64,
}

impl Fragment {
    /// A workload for a machine of `managed_pages` and `nr_cpus`, seeded with `seed`.
    pub fn new(managed_pages: u64, nr_cpus: usize, seed: u64) -> Fragment {
        let average = managed_pages * (PEAK_PERCENT + TROUGH_PERCENT) / 200;
        let swing_pages = managed_pages * (PEAK_PERCENT - TROUGH_PERCENT) / 100;
        Fragment {
            prng: Prng::new(seed),
            nr_cpus: nr_cpus.max(1),
            live: BinaryHeap::new(),
            held: 0,
            managed: managed_pages,
            peak_reached: None,
            // Going down frees ~one block per operation, going up allocates ~one per two.
            swing_period: (3 * swing_pages / MEAN_REQUEST_PAGES).max(2),
            lifetime_unit: (average / MEAN_REQUEST_PAGES / 16).max(1),
            now: 0,
        }
    }

    /// How many swings have started since the first peak.
    fn swing(&self) -> usize {
        self.peak_reached.map_or(0, |start| (1 + (self.now - start) / self.swing_period) as usize)
    }

    /// The footprint to aim for now: the peak until it is first reached, then a triangle wave
    /// between peak and trough.
    fn target(&mut self) -> u64 {
        let peak = self.managed * PEAK_PERCENT / 100;
        let trough = self.managed * TROUGH_PERCENT / 100;
        if self.peak_reached.is_none() && self.held + MEAN_REQUEST_PAGES >= peak {
            self.peak_reached = Some(self.now);
        }
        let Some(start) = self.peak_reached else {
            return peak;
        };
        let half = self.swing_period / 2;
        let phase = (self.now - start) % self.swing_period;
        let depth = if phase < half { phase } else { self.swing_period - phase };
        peak - (peak - trough) * depth / half.max(1)
    }

    fn pick_request(&mut self) -> (u32, MigrateType, Gfp) {
        let order = ORDERS[self.prng.weighted(&ORDERS.map(|(_, w)| w))].0;
        let types = if order >= 9 { TYPES_HUGE } else { TYPES_SMALL[self.swing() % 2] };
        let mt = [MigrateType::Movable, MigrateType::Unmovable, MigrateType::Reclaimable]
            [self.prng.weighted(&types)];
        let comp = if order > 0 { Gfp::COMP } else { Gfp(0) };
        let gfp = match mt {
            MigrateType::Movable if order >= 9 => Gfp::TRANSHUGE,
            MigrateType::Movable => Gfp::HIGHUSER_MOVABLE | comp,
            // One unmovable request in twenty comes from atomic context.
            MigrateType::Unmovable if self.prng.below(20) == 0 => Gfp::ATOMIC | comp,
            MigrateType::Unmovable => Gfp::KERNEL | comp,
            _ => Gfp::KERNEL | Gfp::RECLAIMABLE | comp,
        };
        (order, mt, gfp)
    }

    fn pick_death(&mut self, mt: MigrateType) -> u64 {
        let col = match mt {
            MigrateType::Movable => 0,
            MigrateType::Unmovable => 1,
            _ => 2,
        };
        let class = self.prng.weighted(&LIFETIMES.map(|(w, _)| w[col]));
        match LIFETIMES[class].1 {
            (u64::MAX, _) => u64::MAX,
            (lo, hi) => self.now + 1 + self.prng.range(lo * self.lifetime_unit, hi * self.lifetime_unit),
        }
    }

    fn cpu(&mut self) -> usize {
        self.prng.below(self.nr_cpus as u64) as usize
    }

    fn free_first_to_die(&mut self, pages: &dyn Pages, report: &mut RunReport) {
        let Some(Reverse((_, pfn, order))) = self.live.pop() else {
            return;
        };
        let cpu = self.cpu();
        if let Err(e) = pages.free_pages(cpu, Pfn(pfn), order) {
            unreachable!("the workload freed its own block {pfn:#x}/{order}: {e}");
        }
        self.held -= 1 << order;
        report.record_free(order);
    }
}

impl Workload for Fragment {
    fn name(&self) -> &'static str {
        "fragment"
    }

    fn step(&mut self, pages: &dyn Pages, report: &mut RunReport) {
        self.now += 1;
        // Below the target, allocation wins three times in four even when a lifetime is over,
        // so the footprint follows the target; lifetimes decide which block goes first. The
        // first ramp-up only allocates, as memory fills after boot.
        let target = self.target();
        let due =
            self.peak_reached.is_some() && self.live.peek().is_some_and(|Reverse((d, _, _))| *d <= self.now);
        if self.held >= target || (due && self.prng.below(4) == 0) {
            self.free_first_to_die(pages, report);
            return;
        }
        let (order, mt, gfp) = self.pick_request();
        let cpu = self.cpu();
        let result = pages.alloc_pages(cpu, order, gfp);
        report.record_alloc(order, mt, result.is_ok());
        if result.is_err() && order == 0 && self.peak_reached.is_none() {
            // Memory is full down to the watermarks: the peak is as high as it gets.
            self.peak_reached = Some(self.now);
        }
        if let Ok(pfn) = result {
            let death = self.pick_death(mt);
            self.live.push(Reverse((death, pfn.0, order)));
            self.held += 1 << order;
        }
    }

    fn held_pages(&self) -> u64 {
        self.held
    }
}
