//! # pageblock: a thread-safe page allocator with Linux's anti-fragmentation machinery
//!
//! [`Allocator`] is the runtime around [`pageblock_core::Zone`]: the zone sits behind its
//! lock (the kernel's `zone->lock`), every CPU slot has its own per-CPU page lists behind
//! their own lock (`per_cpu_pages` and `pcp->lock`), and statistics and reports are read from
//! the zone's lock-free half ([`ZoneShared`]) without waiting for anyone.
//!
//! Memory is either simulated (metadata only: pfns in a made-up range) or real: an mmap'd,
//! 2 MiB-aligned [`arena::Arena`] whose pfns are virtual page numbers, so a block's address is
//! `pfn << 12` and huge-page-sized blocks are huge-page aligned.
//!
//! ```
//! use pageblock::{Allocator, Gfp, Policy, ZoneConfig};
//!
//! let a = Allocator::with_arena(64 << 20, Policy::default()).unwrap();
//! let pfn = a.alloc_pages(0, Gfp::KERNEL).unwrap();
//! let page = a.page_ptr(pfn).unwrap();
//! // SAFETY: the page was just allocated and is ours until freed.
//! unsafe { page.as_ptr().write_bytes(0x5a, 4096) };
//! a.free_pages(pfn, 0).unwrap();
//! assert!(a.free_pages(pfn, 0).is_err(), "double free is refused");
//! ```
//!
//! Fast path (order ≤ 3, or the pageblock order with THP): a lock-free watermark check, a
//! `try_lock` of the CPU's lists, and a list pop or push; the zone lock is taken only to
//! refill or drain a batch. Everything else goes to the zone under its lock.
//!
//! Tracing: a trace sink installed on the zone (`with_zone(|z| z.set_trace_sink(..))`) sees
//! the events emitted under the zone lock (refills, drains, zone-path allocations and
//! frees); allocations and frees served entirely by per-CPU lists emit no `mm_page_alloc`
//! or `mm_page_free` here. The simulator (`pageblock-core` directly) traces everything.

pub mod arena;
mod cpu;
mod sync;

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pageblock_core::gfp::{self, NoFragmentRule};
use pageblock_core::memmap::{PageInfo, PageState};
use pageblock_core::pcp::PerCpuPages;
use pageblock_core::{show, MigrateType, Zone, ZoneShared};
pub use pageblock_core::{AllocError, ConfigError, FreeError, Gfp, Pfn, Policy, ZoneConfig};
use pageblock_formats::pagetypeinfo::PageTypeInfo;

use crate::arena::Arena;
use crate::sync::SpinLock;

/// A page allocator over one zone, usable from any thread.
pub struct Allocator {
    zone: Mutex<Zone>,
    shared: Arc<ZoneShared>,
    pcp: Box<[SpinLock<PerCpuPages>]>,
    /// `nr_cpus - 1` when the slot count is a power of two (slot = ticket & mask).
    cpu_mask: Option<usize>,
    rule: NoFragmentRule,
    group_by_mobility: bool,
    arena: Option<Arena>,
    zone_lock_acquisitions: AtomicU64,
}

impl Allocator {
    /// A metadata-only allocator (for simulation) over the zone `config` describes.
    pub fn new(config: ZoneConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        Self::build(config, policy, None)
    }

    /// An allocator over `bytes` of real, mmap'd memory, with one CPU slot per online CPU.
    pub fn with_arena(bytes: u64, policy: Policy) -> Result<Allocator, ArenaError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        Self::with_arena_cpus(bytes, cpus, policy)
    }

    /// An allocator over `bytes` of real, mmap'd memory with `nr_cpus` CPU slots.
    pub fn with_arena_cpus(bytes: u64, nr_cpus: u32, policy: Policy) -> Result<Allocator, ArenaError> {
        let arena = Arena::new(bytes).map_err(ArenaError::Map)?;
        let config = ZoneConfig {
            start_pfn: arena.start_pfn(),
            present_pages: arena.nr_pages(),
            nr_cpus,
            ..ZoneConfig::normal(0)
        };
        Self::build(config, policy, Some(arena)).map_err(ArenaError::Config)
    }

    fn build(config: ZoneConfig, policy: Policy, arena: Option<Arena>) -> Result<Allocator, ConfigError> {
        let zone = Zone::new(config, policy.clone())?;
        let shared = Arc::clone(zone.shared());
        let pcp = (0..shared.config().nr_cpus as usize)
            .map(|cpu| SpinLock::new(PerCpuPages::new(cpu, &shared, &policy)))
            .collect();
        let rule = NoFragmentRule {
            configured: policy.nofragment,
            zone_is_normal: shared.config().zone_type == pageblock_core::ZoneType::Normal,
            defrag_mode: policy.defrag_mode,
        };
        let group_by_mobility = zone.group_by_mobility();
        let nr_cpus = shared.config().nr_cpus as usize;
        let cpu_mask = nr_cpus.is_power_of_two().then_some(nr_cpus - 1);
        Ok(Allocator {
            zone: Mutex::new(zone),
            shared,
            pcp,
            cpu_mask,
            rule,
            group_by_mobility,
            arena,
            zone_lock_acquisitions: AtomicU64::new(0),
        })
    }

    fn lock_zone(&self) -> MutexGuard<'_, Zone> {
        self.zone_lock_acquisitions.fetch_add(1, Ordering::Relaxed);
        // A panic under the zone lock is a broken invariant (a bug); poison adds nothing.
        self.zone.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many times the zone lock has been taken (refills, drains, zone-path allocations
    /// and frees, walks, `with_zone`).
    pub fn zone_lock_acquisitions(&self) -> u64 {
        self.zone_lock_acquisitions.load(Ordering::Relaxed)
    }

    /// The slot the calling thread uses (a mask, not a division, for power-of-two counts).
    #[inline]
    fn this_cpu(&self) -> usize {
        let ticket = cpu::thread_ticket();
        match self.cpu_mask {
            Some(mask) => ticket & mask,
            None => ticket % self.pcp.len(),
        }
    }

    /// Number of CPU slots.
    pub fn nr_cpus(&self) -> usize {
        self.pcp.len()
    }

    /// Use CPU slot `cpu` explicitly (deterministic runs, pinned threads).
    pub fn on_cpu(&self, cpu: usize) -> OnCpu<'_> {
        assert!(cpu < self.pcp.len(), "CPU slot {cpu} of {}", self.pcp.len());
        OnCpu { alloc: self, cpu }
    }

    /// Allocate 2^`order` pages for a request with GFP mask `gfp`, on this thread's slot.
    #[inline]
    pub fn alloc_pages(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        self.alloc_pages_on(self.this_cpu(), order, gfp)
    }

    /// Free a block returned by [`Allocator::alloc_pages`], on this thread's slot.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.free_pages_on(self.this_cpu(), pfn, order)
    }

    /// `__alloc_pages` → `get_page_from_freelist` → `rmqueue_pcplist`, else the zone.
    #[inline]
    fn alloc_pages_on(&self, cpu: usize, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        let shared = &*self.shared;
        if order <= shared.config().max_order {
            if let Ok(mt) = gfp::gfp_migratetype(gfp, self.group_by_mobility) {
                if let Some(pfn) = self.rmqueue_pcplist(cpu, order, mt, gfp) {
                    return Ok(pfn);
                }
            }
        }
        self.alloc_zone(order, gfp)
    }

    /// The per-CPU fast path: watermark check (lock-free), then the CPU's lists, refilled
    /// from the zone in one lock hold when empty. `None` sends the request to the zone.
    #[inline]
    fn rmqueue_pcplist(&self, cpu: usize, order: u32, mt: MigrateType, gfp: Gfp) -> Option<Pfn> {
        let flags = gfp::alloc_flags_fast(gfp, mt, self.rule);
        let mut pcp = self.pcp[cpu].try_lock()?;
        if !pcp.allowed_order(order) || !self.shared.watermark_allows(order, flags) {
            return None;
        }
        pcp.rmqueue(&self.shared, order, mt, |n, out| {
            self.lock_zone().rmqueue_bulk(order, n, mt, flags, out);
        })
    }

    /// The zone path: the whole allocator under the zone lock (fast-path flags, fallbacks,
    /// the slow path). Before reporting failure, every CPU's cached pages are given back and
    /// the request is retried once (`drain_all_pages` in the kernel's reclaim retry).
    #[cold]
    fn alloc_zone(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        let first = self.lock_zone().alloc_pages(order, gfp);
        match first {
            Err(AllocError::NoMemory { .. }) if self.has_cached_pages() => {
                self.drain_all_pages();
                self.lock_zone().alloc_pages(order, gfp)
            }
            other => other,
        }
    }

    fn has_cached_pages(&self) -> bool {
        (0..self.pcp.len()).any(|cpu| self.shared.counters().cpu(cpu).count() > 0)
    }

    /// `free_frozen_pages`: validate, then cache the block on the CPU's lists (freeing a
    /// batch to the zone if over `high`), or free it to the zone directly.
    #[inline]
    fn free_pages_on(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        let shared = &*self.shared;
        let word = shared.allocated_word(pfn, order)?;
        let mt = shared.pageblock_migratetype(pfn.0);
        // Isolated pageblocks never take cached pages.
        if mt != MigrateType::Isolate {
            if let Some(mut pcp) = self.pcp[cpu].try_lock() {
                if pcp.allowed_order(order) {
                    // Claim the block from its owner: of two racing frees, one wins.
                    let cached = PageInfo { state: PageState::Pcp, order, ..PageInfo::TAIL };
                    if shared.memmap().compare_exchange_word(self.idx(pfn), word, cached).is_err() {
                        return Err(FreeError::DoubleFree { pfn });
                    }
                    pcp.free(shared, pfn, order, mt, |blocks| self.lock_zone().free_pcppages_bulk(blocks));
                    return Ok(());
                }
            }
        }
        self.lock_zone().free_pages(pfn, order)
    }

    #[inline]
    fn idx(&self, pfn: Pfn) -> u32 {
        (pfn.0 - self.shared.config().start_pfn) as u32
    }

    /// `drain_pages(cpu)`: give CPU `cpu`'s cached pages back to the zone.
    pub fn drain_pages(&self, cpu: usize) {
        let mut pcp = self.pcp[cpu].lock();
        pcp.drain(&self.shared, |blocks| self.lock_zone().free_pcppages_bulk(blocks));
    }

    /// `drain_all_pages()`: give every CPU's cached pages back to the zone.
    pub fn drain_all_pages(&self) {
        for cpu in 0..self.pcp.len() {
            self.drain_pages(cpu);
        }
    }

    /// `/proc/pagetypeinfo` from the per-migratetype counts: never takes the zone lock. With
    /// the `Plain` free-area layout (no counts) it walks the lists instead.
    pub fn pagetypeinfo(&self) -> PageTypeInfo {
        show::pagetypeinfo_counts(&self.shared, show::PagetypeinfoMode::Counts)
            .unwrap_or_else(|| self.pagetypeinfo_walk())
    }

    /// `/proc/pagetypeinfo` the pre-seed-000 way: walk the free lists, taking the zone lock
    /// for one order at a time (as the kernel's `pagetypeinfo_showfree_print` does).
    pub fn pagetypeinfo_walk(&self) -> PageTypeInfo {
        let max_order = self.shared.config().max_order;
        let walked: Vec<Vec<u64>> =
            (0..=max_order).map(|o| show::walk_free_counts(&self.lock_zone(), o)).collect();
        show::pagetypeinfo_from_walk(&self.shared, &walked)
    }

    /// The lock-free part of the zone (counters, pageblock bits, memmap).
    pub fn shared(&self) -> &Arc<ZoneShared> {
        &self.shared
    }

    /// Run `f` on the zone with its lock held. Blocks cached on per-CPU lists are allocated
    /// as far as the zone can tell; drain them first for an exact picture.
    pub fn with_zone<R>(&self, f: impl FnOnce(&mut Zone) -> R) -> R {
        f(&mut self.lock_zone())
    }

    /// The address of page `pfn` (arena mode only).
    pub fn page_ptr(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        self.arena.as_ref()?.page_ptr(pfn.0)
    }

    /// The page containing `ptr` (arena mode only).
    pub fn pfn_of(&self, ptr: *const u8) -> Option<Pfn> {
        self.arena.as_ref()?.pfn_of(ptr).map(Pfn)
    }
}

/// An [`Allocator`] bound to one CPU slot.
#[derive(Clone, Copy)]
pub struct OnCpu<'a> {
    alloc: &'a Allocator,
    cpu: usize,
}

impl OnCpu<'_> {
    /// [`Allocator::alloc_pages`] on this slot.
    #[inline]
    pub fn alloc_pages(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        self.alloc.alloc_pages_on(self.cpu, order, gfp)
    }

    /// [`Allocator::free_pages`] on this slot.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.alloc.free_pages_on(self.cpu, pfn, order)
    }
}

/// Why an arena allocator could not be built.
#[derive(Debug)]
pub enum ArenaError {
    /// mmap failed.
    Map(std::io::Error),
    /// The zone geometry was rejected.
    Config(ConfigError),
}

impl std::fmt::Display for ArenaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArenaError::Map(e) => write!(f, "mapping the arena failed: {e}"),
            ArenaError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ArenaError {}
