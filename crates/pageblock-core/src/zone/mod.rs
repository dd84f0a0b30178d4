//! The zone: a contiguous pfn range with its memmap, pageblock bits, free areas, watermarks
//! and counters (`struct zone`).
//!
//! A [`Zone`] is the state the kernel protects with `zone->lock`: it is used through
//! `&mut self`, and the thread-safe runtime keeps it behind a mutex. What reports read lives
//! in [`ZoneShared`], reachable through an `Arc` without the lock: the configuration, the
//! memmap and pageblock bits (atomics, as the kernel reads them locklessly), and every counter.
//!
//! The zone is a parent module; its children hold the zone's own operations, by kernel
//! concept: `free_area` (list and accounting primitives), `buddy` (merge, split,
//! smallest-first), `fallback` (claim and steal), `highatomic`, [`watermark`], `alloc` and
//! `free` (a zone's part of allocating and freeing, and the misuse checks), `pageset` (the
//! per-CPU list sizes), `defer` and `capture` (the zone's compaction state), `isolate` (a free
//! block taken for compaction), `hotplug` (onlining), `verify` (the zone's own check) and
//! [`zone_state`] (a chosen state, for replay). Code outside the zone calls its methods and
//! never re-opens `impl Zone`. The entry points and the slow path are [`crate::page_alloc`] and
//! `crate::slowpath`.
//!
//! # Invariants (checked by [`crate::verify`])
//!
//! * Every pfn of the zone belongs to exactly one block: free (on a buddy list), allocated,
//!   cached on a per-CPU list, or isolated. Blocks are naturally aligned and inside the zone.
//! * A free block of order < `pageblock_order` is on the list of its pageblock's type; a free
//!   block of order ≥ `pageblock_order` covers pageblocks that all have the list's type.
//! * `nr_free[o] == Σ_mt len(free_list[o][mt])`, `mt_nr_free[o][mt] == len(free_list[o][mt])`.
//! * `NR_FREE_PAGES == Σ_{o, mt ≠ Isolate} len(free_list[o][mt]) << o`, and likewise
//!   `NR_FREE_CMA_PAGES`, `nr_free_highatomic`, `NR_FREE_PAGES_BLOCKS` for their lists.
//! * No two buddies below `pageblock_order` are both free (merges there ignore types; from
//!   pageblock order up a pair can stay split after a HighAtomic release, as in the kernel).
//! * `nr_reserved_highatomic == pageblock_nr_pages × (number of HighAtomic pageblocks)`.
//! * free + allocated + per-CPU + isolated pages == managed pages; the reserved pages are the
//!   first `reserved_pages` of the zone, each a `Reserved` page of order 0.

pub(crate) mod alloc;
pub(crate) mod buddy;
pub(crate) mod capture;
pub(crate) mod defer;
pub(crate) mod fallback;
pub(crate) mod free;
pub(crate) mod free_area;
pub(crate) mod highatomic;
pub(crate) mod hotplug;
pub(crate) mod isolate;
pub(crate) mod pageset;
pub(crate) mod verify;
pub mod watermark;
pub mod zone_state;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use capture::Capture;
use defer::ZoneCompaction;
use pageset::PagesetLimits;

use crate::config::{ZoneConfig, ZoneType, MAX_NR_ZONES};
use crate::memmap::pagemap::Pages;
use crate::memmap::{Memmap, PageState};
use crate::migratetype::MigrateType;
use crate::pageblock::Pageblocks;
use crate::policy::Policy;
use crate::stats::{Counter, EventCounters, VmEvent, ZoneStat, NR_ZONE_STATS};
use crate::trace::{TraceEvent, TraceHub};
use crate::types::Pfn;
use crate::zone::free_area::FreeAreas;
use crate::zone::watermark::{WatermarkLevel, Watermarks};

/// Every counter of a zone: written under the zone lock, read by anyone.
#[derive(Debug, Default)]
pub struct ZoneCounters {
    pub(crate) zone_stat: [Counter; NR_ZONE_STATS],
    /// `zone->nr_free_highatomic`: free pages on HighAtomic lists.
    pub(crate) nr_free_highatomic: Counter,
    /// `zone->nr_reserved_highatomic`: pages in HighAtomic pageblocks.
    pub(crate) nr_reserved_highatomic: Counter,
    /// `_watermark[]`, raw (without boost).
    pub(crate) watermark: [Counter; 4],
    /// `watermark_boost`.
    pub(crate) watermark_boost: Counter,
    pub(crate) events: EventCounters,
    /// Per-CPU parts of the counters and `pcp->count`/`high`, one entry per CPU.
    pub(crate) cpus: Box<[CpuCounters]>,
}

impl ZoneCounters {
    fn new(nr_cpus: usize) -> ZoneCounters {
        ZoneCounters { cpus: (0..nr_cpus).map(|_| CpuCounters::default()).collect(), ..Default::default() }
    }

    /// The per-CPU counters of `cpu`.
    #[inline]
    pub fn cpu(&self, cpu: usize) -> &CpuCounters {
        &self.cpus[cpu]
    }

    /// A zone statistic.
    #[inline]
    pub fn zone_stat(&self, item: ZoneStat) -> u64 {
        self.zone_stat[item as usize].get()
    }

    /// An event count: the zone's part plus every CPU's part.
    pub fn event(&self, ev: VmEvent) -> u64 {
        let per_cpu = match ev {
            VmEvent::PgAlloc => self.cpus.iter().map(|c| c.pgalloc.get()).sum(),
            VmEvent::PgFree => self.cpus.iter().map(|c| c.pgfree.get()).sum(),
            VmEvent::NumaHit => self.cpus.iter().map(|c| c.allocs.get()).sum(),
            _ => 0,
        };
        self.events[ev as usize].get() + per_cpu
    }

    /// Free pages on HighAtomic lists.
    pub fn nr_free_highatomic(&self) -> u64 {
        self.nr_free_highatomic.get()
    }

    /// Pages in HighAtomic pageblocks.
    pub fn nr_reserved_highatomic(&self) -> u64 {
        self.nr_reserved_highatomic.get()
    }

    /// The raw watermarks.
    pub fn watermarks(&self) -> Watermarks {
        let w = |l: WatermarkLevel| self.watermark[l as usize].get();
        Watermarks {
            min: w(WatermarkLevel::Min),
            low: w(WatermarkLevel::Low),
            high: w(WatermarkLevel::High),
            promo: w(WatermarkLevel::Promo),
        }
    }

    /// The current watermark boost.
    pub fn watermark_boost(&self) -> u64 {
        self.watermark_boost.get()
    }
}

/// The part of a zone that readers reach without the zone lock.
#[derive(Debug)]
pub struct ZoneShared {
    config: ZoneConfig,
    pub(crate) memmap: Memmap,
    pub(crate) pageblocks: Pageblocks,
    pub(crate) counters: ZoneCounters,
    pub(crate) free_areas: FreeAreas,
    pub(crate) flags: ZoneFlags,
    /// `zone_managed_pages()`: grows when memory is onlined.
    managed: Counter,
    /// `pcp->batch`, `high_min`, `high_max` of every CPU (`zone_pcp_update` rewrites them).
    pageset: [Counter; 3],
    /// `lowmem_reserve[]`, indexed by the highest zone type a request may use.
    pub(crate) lowmem_reserve: [Counter; MAX_NR_ZONES],
}

impl ZoneShared {
    /// The zone's geometry.
    #[inline]
    pub fn config(&self) -> &ZoneConfig {
        &self.config
    }

    /// The counters.
    #[inline]
    pub fn counters(&self) -> &ZoneCounters {
        &self.counters
    }

    /// The pageblock flag bits.
    #[inline]
    pub fn pageblocks(&self) -> &Pageblocks {
        &self.pageblocks
    }

    /// The memmap.
    #[inline]
    pub fn memmap(&self) -> &Memmap {
        &self.memmap
    }

    /// Zone flags.
    #[inline]
    pub fn flags(&self) -> &ZoneFlags {
        &self.flags
    }

    /// The free areas (lists and their counts).
    #[inline]
    pub fn free_areas(&self) -> &FreeAreas {
        &self.free_areas
    }

    /// The per-CPU list sizes.
    pub fn pageset(&self) -> PagesetLimits {
        let [batch, high_min, high_max] = self.pageset.each_ref().map(|c| c.get() as u32);
        PagesetLimits { batch, high_min, high_max }
    }

    pub(crate) fn set_pageset(&self, l: PagesetLimits) {
        for (c, v) in self.pageset.iter().zip([l.batch, l.high_min, l.high_max]) {
            c.set(u64::from(v));
        }
    }

    /// The zone's `protection:` tuple (`lowmem_reserve[]`).
    pub fn lowmem_reserve_pages(&self) -> [u64; MAX_NR_ZONES] {
        self.lowmem_reserve.each_ref().map(Counter::get)
    }

    pub(crate) fn add_managed(&self, pages: u64) {
        self.managed.add(pages);
    }

    pub(crate) fn set_watermarks(&self, wm: Watermarks) {
        for (level, v) in [wm.min, wm.low, wm.high, wm.promo].into_iter().enumerate() {
            self.counters.watermark[level].set(v);
        }
    }

    pub(crate) fn set_lowmem_reserve(&self, r: [u64; MAX_NR_ZONES]) {
        for (c, v) in self.lowmem_reserve.iter().zip(r) {
            c.set(v);
        }
    }

    /// `zone_managed_pages()`.
    #[inline]
    pub fn managed_pages(&self) -> u64 {
        self.managed.get()
    }

    /// `pcp_allowed_order()`: orders up to `PAGE_ALLOC_COSTLY_ORDER`, and the pageblock
    /// order when THP is configured, go through the per-CPU lists.
    #[inline]
    pub fn pcp_allowed_order(&self, order: u32) -> bool {
        order <= crate::types::PAGE_ALLOC_COSTLY_ORDER
            || (self.config.thp && order == self.config.pageblock_order)
    }

    /// True if `pfn` is one of this zone's pages (reserved, managed or offline).
    #[inline]
    pub fn contains(&self, pfn: u64) -> bool {
        self.page_idx(pfn).is_some()
    }

    /// The memmap index of `pfn`, if it is one of this zone's pages: one range test covers
    /// pfns below the zone too (the subtraction wraps).
    #[inline(always)]
    pub(crate) fn page_idx(&self, pfn: u64) -> Option<u32> {
        // The memmap covers exactly the zone's pages (its length is `config.nr_pages()`,
        // which costs three saturating additions to recompute on every buddy check).
        let idx = pfn.wrapping_sub(self.config.start_pfn);
        (idx < self.memmap.len() as u64).then_some(idx as u32)
    }

    /// True if page `pfn` (in the zone) is offline memory (`!pfn_to_online_page`).
    pub fn page_offline(&self, pfn: u64) -> bool {
        self.memmap.info((pfn - self.config.start_pfn) as u32).state == PageState::Offline
    }

    /// True if no page of `[start, end)` (in the zone) is offline.
    pub fn range_online(&self, start: u64, end: u64) -> bool {
        (start..end).all(|p| !self.page_offline(p))
    }

    /// The migratetype of the pageblock containing `pfn` (which must be in the zone).
    #[inline]
    pub fn pageblock_migratetype(&self, pfn: u64) -> MigrateType {
        let pbo = self.config.pageblock_order;
        self.pageblocks.migratetype(((pfn >> pbo) - (self.config.start_pfn >> pbo)) as usize)
    }
}

/// Zone state flags (`enum zone_flags`), set and cleared with atomic bit operations as the
/// kernel does, so the lock-free fast path can read and set them.
#[derive(Debug, Default)]
pub struct ZoneFlags {
    boosted_watermark: AtomicBool,
    below_high: AtomicBool,
    reclaim_active: AtomicBool,
}

impl ZoneFlags {
    /// `ZONE_BOOSTED_WATERMARK`: a fallback boosted the watermarks; kswapd should be woken.
    pub fn boosted_watermark(&self) -> bool {
        self.boosted_watermark.load(Relaxed)
    }

    /// `ZONE_BELOW_HIGH`: the zone fell below the high watermark (shrinks per-CPU caches).
    #[inline]
    pub fn below_high(&self) -> bool {
        self.below_high.load(Relaxed)
    }

    /// `ZONE_RECLAIM_ACTIVE`: kswapd is reclaiming this zone (per-CPU caches shrink faster).
    #[inline]
    pub fn reclaim_active(&self) -> bool {
        self.reclaim_active.load(Relaxed)
    }

    pub(crate) fn set_boosted_watermark(&self, on: bool) {
        self.boosted_watermark.store(on, Relaxed);
    }

    /// `ZONE_RECLAIM_ACTIVE`: kswapd is balancing the zone (per-CPU lists cache less).
    pub(crate) fn set_reclaim_active(&self, on: bool) {
        self.reclaim_active.store(on, Relaxed);
    }

    pub(crate) fn set_below_high(&self, on: bool) {
        // Test first: the flag's cache line is read on every allocation; keep it clean.
        if self.below_high.load(Relaxed) != on {
            self.below_high.store(on, Relaxed);
        }
    }
}

/// Per-CPU statistics of the zone: written by the holder of that CPU's per-CPU page lock
/// (single writer per CPU), summed by readers (the kernel's per-CPU vm event counters and
/// `pcp->count`). Padded to a cache line so CPUs do not share lines.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct CpuCounters {
    /// Base pages allocated through this CPU's lists (part of `PGALLOC`).
    pub(crate) pgalloc: Counter,
    /// Base pages freed to this CPU's lists (part of `PGFREE`).
    pub(crate) pgfree: Counter,
    /// Allocations served from this CPU's lists (part of `NUMA_HIT`).
    pub(crate) allocs: Counter,
    /// `pcp->count`: base pages cached on this CPU's lists.
    pub(crate) count: Counter,
    /// `pcp->high`: the current high mark.
    pub(crate) high: Counter,
}

impl CpuCounters {
    /// Pages cached on this CPU's lists.
    pub fn count(&self) -> u64 {
        self.count.get()
    }

    /// The CPU's current high mark.
    pub fn high(&self) -> u64 {
        self.high.get()
    }
}

/// A zone under its lock.
pub struct Zone {
    pub(crate) shared: Arc<ZoneShared>,
    pub(crate) policy: Policy,
    pub(crate) group_by_mobility: bool,
    pub(crate) trace: Arc<TraceHub>,
    /// The CPU holding the lock (events are stamped with it; `smp_processor_id()`).
    cpu: u32,
    start_pfn: u64,
    end_pfn: u64,
    max_order: u32,
    pageblock_order: u32,
    /// Where compaction's scanners stopped and how long to defer it.
    pub(crate) compact: ZoneCompaction,
    /// A direct compaction waiting for a freed block (`current->capture_control`).
    pub(crate) capture: Option<Capture>,
    /// Ids handed to capture wishes so far.
    pub(crate) capture_seq: u64,
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone")
            .field("config", self.shared.config())
            .field("policy", &self.policy)
            .field("nr_free_pages", &self.nr_free_pages())
            .finish_non_exhaustive()
    }
}

/// What the node decides for each zone when it boots (watermarks and reserves depend on the
/// other zones; grouping by mobility and tracing are node-wide).
#[derive(Clone, Debug)]
pub(crate) struct ZoneSetup {
    pub(crate) watermarks: Watermarks,
    pub(crate) lowmem_reserve: [u64; MAX_NR_ZONES],
    pub(crate) group_by_mobility: bool,
    pub(crate) trace: Arc<TraceHub>,
}

impl Zone {
    /// Build a zone: memmap, pageblocks (all Movable, as `memmap_init` leaves them — Unmovable
    /// when grouping by mobility is off — CMA blocks at the top if configured), watermarks,
    /// then free every page to the buddy lists in pfn order with `FPI_TO_TAIL`, as memblock
    /// hands memory over at boot. The configuration was validated by the node.
    pub(crate) fn new(config: ZoneConfig, policy: Policy, setup: ZoneSetup) -> Zone {
        let pbo = config.pageblock_order;
        let first_block = config.start_pfn >> pbo;
        let nr_blocks = (config.end_pfn().div_ceil(1 << pbo) - first_block) as usize;
        let managed = config.managed_pages;
        let wm = setup.watermarks;
        let initial = if setup.group_by_mobility { MigrateType::Movable } else { MigrateType::Unmovable };
        let shared = ZoneShared {
            memmap: Memmap::with_layout(config.nr_pages() as usize, config.memmap_layout, config.start_pfn),
            pageblocks: Pageblocks::new(nr_blocks, initial),
            counters: ZoneCounters::new(config.nr_cpus as usize),
            free_areas: FreeAreas::new(policy.seed_patches.free_area_layout),
            flags: ZoneFlags::default(),
            managed: Counter::new(managed),
            pageset: Default::default(),
            lowmem_reserve: Default::default(),
            config,
        };
        shared.set_pageset(PagesetLimits::compute(managed, wm.low, shared.config.nr_cpus, &policy));
        shared.set_lowmem_reserve(setup.lowmem_reserve);
        shared.set_watermarks(wm);
        let compact = ZoneCompaction::new(shared.config.start_pfn, shared.config.end_pfn(), pbo);
        let mut zone = Zone {
            start_pfn: shared.config.start_pfn,
            end_pfn: shared.config.end_pfn(),
            max_order: shared.config.max_order,
            pageblock_order: pbo,
            group_by_mobility: setup.group_by_mobility,
            shared: Arc::new(shared),
            policy,
            trace: setup.trace,
            cpu: 0,
            compact,
            capture: None,
            capture_seq: 0,
        };
        zone.init_cma_blocks();
        zone.free_all_pages_at_boot();
        zone
    }

    /// Mark the top `cma_pages` of the zone (whole pageblocks inside it) as CMA.
    fn init_cma_blocks(&mut self) {
        let pb = self.pageblock_nr_pages();
        let mut block_start = (self.end_pfn & !(pb - 1)).wrapping_sub(pb);
        let mut left = self.shared.config.cma_pages;
        while left > 0 && block_start >= self.start_pfn {
            self.set_pageblock_migratetype(block_start, MigrateType::Cma);
            left -= pb;
            block_start -= pb;
        }
    }

    fn free_all_pages_at_boot(&mut self) {
        let first = self.shared.config.first_managed_pfn();
        for pfn in self.start_pfn..first {
            self.shared.memmap.set_head(self.idx(pfn), PageState::Reserved, 0);
        }
        let online_end = first + self.shared.config.managed_pages;
        for pfn in online_end..self.end_pfn {
            self.shared.memmap.set_head(self.idx(pfn), PageState::Offline, 0);
        }
        self.free_range_to_buddy(first, online_end);
    }

    /// Give `[start, end)` (pages that are nobody's yet, their memmap entries clear) to the
    /// buddy lists in the largest aligned blocks, to the list tails, as memblock and memory
    /// onlining do (`__free_pages_core`). Returns the blocks freed.
    pub(crate) fn free_range_to_buddy(&mut self, start: u64, end: u64) -> Vec<(u64, u32)> {
        let blocks: Vec<(u64, u32)> = crate::types::aligned_blocks(start, end, self.max_order).collect();
        for &(pfn, order) in &blocks {
            self.count(VmEvent::PgFree, 1 << order);
            self.split_large_buddy(pfn, order, crate::zone::buddy::FreeTo::Tail);
        }
        blocks
    }

    /// The part of the zone readable without its lock.
    pub fn shared(&self) -> &Arc<ZoneShared> {
        &self.shared
    }

    /// The zone's geometry.
    #[inline]
    pub fn config(&self) -> &ZoneConfig {
        self.shared.config()
    }

    /// The counters.
    #[inline]
    pub fn counters(&self) -> &ZoneCounters {
        &self.shared.counters
    }

    /// The behaviour switches this zone runs with.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Zone flags.
    #[inline]
    pub fn flags(&self) -> &ZoneFlags {
        &self.shared.flags
    }

    /// Whether pages are grouped by mobility (false if the policy or the zone's size
    /// disables it: `page_group_by_mobility_disabled`).
    pub fn group_by_mobility(&self) -> bool {
        self.group_by_mobility
    }

    /// Stamp events emitted under this lock hold with `cpu` (the CPU that took the lock).
    #[inline]
    pub(crate) fn set_cpu(&mut self, cpu: usize) {
        self.cpu = cpu as u32;
    }

    /// The CPU holding the lock.
    #[inline]
    pub(crate) fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The zone's compaction state (scanner positions, deferral).
    pub fn compaction(&self) -> &ZoneCompaction {
        &self.compact
    }

    #[inline]
    pub(crate) fn emit(&self, ev: impl FnOnce() -> TraceEvent) {
        self.trace.emit(self.cpu, ev);
    }

    /// The first managed pfn.
    #[inline]
    pub fn start_pfn(&self) -> u64 {
        self.start_pfn
    }

    /// First pfn past the managed pages.
    #[inline]
    pub fn end_pfn(&self) -> u64 {
        self.end_pfn
    }

    /// `MAX_PAGE_ORDER` of this zone.
    #[inline]
    pub fn max_order(&self) -> u32 {
        self.max_order
    }

    /// `pageblock_order` of this zone.
    #[inline]
    pub fn pageblock_order(&self) -> u32 {
        self.pageblock_order
    }

    /// `pageblock_nr_pages`.
    #[inline]
    pub fn pageblock_nr_pages(&self) -> u64 {
        1 << self.pageblock_order
    }

    /// `managed_pages`.
    #[inline]
    pub fn managed_pages(&self) -> u64 {
        self.shared.managed_pages()
    }

    /// `NR_FREE_PAGES`.
    #[inline]
    pub fn nr_free_pages(&self) -> u64 {
        self.shared.nr_free_pages()
    }

    /// The zone type.
    pub fn zone_type(&self) -> ZoneType {
        self.shared.config.zone_type
    }

    /// True if `pfn` lies in the zone.
    #[inline]
    pub fn contains(&self, pfn: u64) -> bool {
        self.shared.contains(pfn)
    }

    /// Memmap index of `pfn` (which must be in the zone).
    #[inline]
    pub(crate) fn idx(&self, pfn: u64) -> u32 {
        debug_assert!(self.contains(pfn), "pfn {pfn:#x} outside the zone");
        (pfn - self.start_pfn) as u32
    }

    /// Pfn of memmap index `idx`.
    #[inline]
    pub(crate) fn pfn_at(&self, idx: u32) -> u64 {
        self.start_pfn + idx as u64
    }

    /// Pageblock number (zone-relative) of `pfn`.
    #[inline]
    pub(crate) fn block_of(&self, pfn: u64) -> usize {
        ((pfn >> self.pageblock_order) - (self.start_pfn >> self.pageblock_order)) as usize
    }

    /// `get_pageblock_migratetype()` of the block containing `pfn`.
    #[inline]
    pub fn pageblock_migratetype(&self, pfn: u64) -> MigrateType {
        self.shared.pageblocks.migratetype(self.block_of(pfn))
    }

    /// The memmap as a [`PageMap`](crate::memmap::pagemap::PageMap) (layout tested on each access:
    /// a loop over many pages uses [`crate::memmap::pagemap::with_pages!`]).
    #[inline]
    pub(crate) fn pages(&self) -> Pages<'_> {
        self.shared.memmap.pages()
    }

    /// Set the type of every pageblock covered by the block at `pfn` of `order`
    /// (`change_pageblock_range`, or `set_pageblock_migratetype` for order ≤ pageblock order).
    pub(crate) fn set_pageblock_range(&self, pfn: u64, order: u32, mt: MigrateType) {
        let pb = self.pageblock_nr_pages();
        let start = pfn & !(pb - 1);
        let nr = 1u64 << order.saturating_sub(self.pageblock_order);
        for i in 0..nr {
            self.set_pageblock_migratetype(start + i * pb, mt);
        }
    }

    /// `set_pageblock_migratetype()`: with grouping by mobility off, the kernel stores every
    /// mobility type as Unmovable.
    pub(crate) fn set_pageblock_migratetype(&self, pfn: u64, mt: MigrateType) {
        let mt = if !self.group_by_mobility && mt.is_mergeable() { MigrateType::Unmovable } else { mt };
        self.shared.pageblocks.set_migratetype(self.block_of(pfn), mt);
    }

    /// True if the pageblock containing `pfn` lies partly outside the zone.
    pub(crate) fn pageblock_straddles_zone(&self, pfn: u64) -> bool {
        let pb = self.pageblock_nr_pages();
        let start = pfn & !(pb - 1);
        start < self.start_pfn || start + pb > self.end_pfn
    }

    /// Count `n` occurrences of `ev`.
    #[inline]
    pub(crate) fn count(&self, ev: VmEvent, n: u64) {
        self.shared.counters.events[ev as usize].add(n);
    }

    /// The free blocks on `free_list[order][mt]`, head first.
    pub fn free_list(&self, order: u32, mt: MigrateType) -> impl Iterator<Item = Pfn> + '_ {
        self.shared.free_areas.list(order, mt).iter(self.pages()).map(|idx| Pfn(self.pfn_at(idx)))
    }

    /// Free pages on Isolate lists (not counted in `NR_FREE_PAGES`).
    pub fn nr_isolated_free_pages(&self) -> u64 {
        (0..=self.max_order).map(|o| (self.free_list(o, MigrateType::Isolate).count() as u64) << o).sum()
    }
}
