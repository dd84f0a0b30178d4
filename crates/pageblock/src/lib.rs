//! # pageblock: a thread-safe page allocator with Linux's anti-fragmentation machinery
//!
//! [`Allocator`] is the runtime around a node's [`pageblock_core::Zone`]s: each zone sits
//! behind its lock (the kernel's `zone->lock`), every CPU slot has its own per-CPU page lists
//! per zone behind their own lock (`per_cpu_pages` and `pcp->lock`), and statistics and
//! reports are read from the node's lock-free half ([`NodeShared`]) without waiting for
//! anyone.
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
//! The allocation and free paths are [`pageblock_core::page_alloc`]'s — the same code the
//! lab's simulator runs ([`pageblock_core::Node`]); this crate supplies the locks
//! ([`NodeLocks`]): a mutex per zone and a spinlock per CPU slot's lists, `try_lock` where
//! the kernel trylocks. Fast path (order ≤ 3, or the pageblock order with THP): a lock-free
//! watermark check, a `try_lock` of the CPU's lists, and a list pop or push; the zone lock
//! is taken only to refill or drain a batch. Everything else takes the zone lock.
//!
//! Like the kernel, a failing request drains other CPUs' caches only after direct reclaim
//! made progress — and reclaim is not modelled yet — so pages cached on another CPU stay
//! there when memory runs out; [`Allocator::drain_all_pages`] gives them back.
//!
//! Tracing: install a sink on the node's hub (`shared().trace().set_sink(..)`); it sees every
//! event, stamped with the CPU slot.

pub mod arena;
mod cpu;
mod sync;

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pageblock_core::page_alloc;
use pageblock_core::pcp::PerCpuPages;
use pageblock_core::{show, NodeLocks, NodeShared, PageCensus, VerifyError, Zone};
pub use pageblock_core::{AllocError, ConfigError, FreeError, Gfp, NodeConfig, Pfn, Policy, ZoneConfig};
use pageblock_formats::pagetypeinfo::PageTypeInfo;

use crate::arena::Arena;
use crate::sync::{SpinGuard, SpinLock};

/// A page allocator over one node, usable from any thread.
pub struct Allocator {
    shared: Arc<NodeShared>,
    zones: Box<[Mutex<Zone>]>,
    /// At [`NodeShared::pcp_index`].
    pcp: Box<[SpinLock<PerCpuPages>]>,
    /// `nr_cpus - 1` when the slot count is a power of two (slot = ticket & mask).
    cpu_mask: Option<usize>,
    arena: Option<Arena>,
    zone_lock_acquisitions: AtomicU64,
}

impl Allocator {
    /// A metadata-only allocator (for simulation) over the node `config` describes.
    pub fn new(config: NodeConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        Self::build(config, policy, None)
    }

    /// A metadata-only allocator over one zone.
    pub fn single_zone(zone: ZoneConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        Self::new(NodeConfig::single(zone), policy)
    }

    /// An allocator over `bytes` of real, mmap'd memory, with one CPU slot per online CPU.
    pub fn with_arena(bytes: u64, policy: Policy) -> Result<Allocator, ArenaError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        Self::with_arena_cpus(bytes, cpus, policy)
    }

    /// An allocator over `bytes` of real, mmap'd memory with `nr_cpus` CPU slots: one
    /// ZONE_NORMAL whose pfns are the arena's virtual page numbers.
    pub fn with_arena_cpus(bytes: u64, nr_cpus: u32, policy: Policy) -> Result<Allocator, ArenaError> {
        let arena = Arena::new(bytes).map_err(ArenaError::Map)?;
        let zone = ZoneConfig {
            nr_cpus,
            ..ZoneConfig::new(pageblock_core::ZoneType::Normal, arena.start_pfn(), arena.nr_pages())
        };
        Self::build(NodeConfig::single(zone), policy, Some(arena)).map_err(ArenaError::Config)
    }

    fn build(config: NodeConfig, policy: Policy, arena: Option<Arena>) -> Result<Allocator, ConfigError> {
        let (shared, zones) = NodeShared::boot(config, policy)?;
        let nr_cpus = shared.nr_cpus();
        let pcp = PerCpuPages::for_node(nr_cpus, &zones).map(SpinLock::new).collect();
        Ok(Allocator {
            shared: Arc::new(shared),
            zones: zones.into_iter().map(Mutex::new).collect(),
            pcp,
            cpu_mask: nr_cpus.is_power_of_two().then_some(nr_cpus - 1),
            arena,
            zone_lock_acquisitions: AtomicU64::new(0),
        })
    }

    /// How many times a zone lock has been taken (refills, drains, zone-path allocations and
    /// frees, walks, `with_zone`).
    pub fn zone_lock_acquisitions(&self) -> u64 {
        self.zone_lock_acquisitions.load(Ordering::Relaxed)
    }

    /// The slot the calling thread uses (a mask, not a division, for power-of-two counts).
    #[inline]
    fn this_cpu(&self) -> usize {
        let ticket = cpu::thread_ticket();
        match self.cpu_mask {
            Some(mask) => ticket & mask,
            None => ticket % self.nr_cpus(),
        }
    }

    /// Number of CPU slots.
    pub fn nr_cpus(&self) -> usize {
        self.shared.nr_cpus()
    }

    /// Use CPU slot `cpu` explicitly (deterministic runs, pinned threads). Panics if `cpu` is
    /// not below [`Allocator::nr_cpus`].
    pub fn on_cpu(&self, cpu: usize) -> OnCpu<'_> {
        assert!(cpu < self.nr_cpus(), "CPU slot {cpu} of {}", self.nr_cpus());
        OnCpu { alloc: self, cpu }
    }

    /// Allocate 2^`order` pages for a request with GFP mask `gfp`, on this thread's slot.
    #[inline]
    pub fn alloc_pages(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        page_alloc::alloc_pages(self, self.this_cpu(), order, gfp)
    }

    /// Free a block returned by [`Allocator::alloc_pages`], on this thread's slot. Misuse is
    /// refused and changes nothing; of two racing frees of one block exactly one wins.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        page_alloc::free_pages(self, self.this_cpu(), pfn, order)
    }

    /// `drain_pages(cpu)`: give CPU `cpu`'s cached pages of every zone back.
    pub fn drain_pages(&self, cpu: usize) {
        for z in 0..self.zones.len() {
            page_alloc::drain_pages_zone(self, cpu, z);
        }
    }

    /// `drain_all_pages()`: give every CPU's cached pages back to the zones.
    pub fn drain_all_pages(&self) {
        page_alloc::drain_all_pages(self);
    }

    /// The vmstat worker's pass for CPU slot `cpu` (`decay_pcp_high`): the kernel runs it
    /// every second on every CPU; callers with long-lived allocators run it periodically.
    pub fn vmstat_update(&self, cpu: usize) -> bool {
        page_alloc::vmstat_update(self, cpu)
    }

    /// `/proc/pagetypeinfo` from the per-migratetype counts, as 6.18 prints it: never takes a
    /// zone lock. With the `Plain` free-area layout (no counts) it walks the lists instead.
    pub fn pagetypeinfo(&self) -> PageTypeInfo {
        show::pagetypeinfo(self, show::PagetypeinfoMode::CountsCapped)
    }

    /// `/proc/pagetypeinfo` the pre-seed-000 way: walk the free lists, taking the zone lock
    /// for one order at a time (as the kernel's `pagetypeinfo_showfree_print` does).
    pub fn pagetypeinfo_walk(&self) -> PageTypeInfo {
        show::pagetypeinfo_walk(self)
    }

    /// The lock-free part of the node (counters, zones' pageblock bits and memmaps).
    pub fn shared(&self) -> &Arc<NodeShared> {
        &self.shared
    }

    /// Run `f` on zone `zone` with its lock held. Blocks cached on per-CPU lists are
    /// allocated as far as the zone can tell; drain them first for an exact picture.
    pub fn with_zone<R>(&self, zone: usize, f: impl FnOnce(&mut Zone) -> R) -> R {
        f(&mut self.lock_zone(zone))
    }

    /// Check every invariant of every zone and every CPU's lists, holding each lock in turn
    /// (quiesce the allocator first: concurrent operations move pages between them).
    pub fn verify(&self) -> Result<PageCensus, VerifyError> {
        let mut total = PageCensus::default();
        for z in 0..self.zones.len() {
            let mut cached = 0;
            for cpu in 0..self.nr_cpus() {
                cached += self.lock_pcp(cpu, z).verify(self.shared.zone(z))?;
            }
            let census = self.lock_zone(z).verify()?;
            if census.pcp != cached {
                return Err(VerifyError(format!(
                    "zone {z}: {} per-CPU pages in the memmap, {cached} on the lists",
                    census.pcp
                )));
            }
            total = total + census;
        }
        Ok(total)
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

impl NodeLocks for Allocator {
    type ZoneGuard<'a> = MutexGuard<'a, Zone>;
    type PcpGuard<'a> = SpinGuard<'a, PerCpuPages>;

    #[inline]
    fn node(&self) -> &NodeShared {
        &self.shared
    }

    fn lock_zone(&self, zone: usize) -> MutexGuard<'_, Zone> {
        self.zone_lock_acquisitions.fetch_add(1, Ordering::Relaxed);
        // A panic under the zone lock is a broken invariant (a bug); poison adds nothing.
        self.zones[zone].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[inline]
    fn trylock_pcp(&self, cpu: usize, zone: usize) -> Option<SpinGuard<'_, PerCpuPages>> {
        self.pcp[self.shared.pcp_index(cpu, zone)].try_lock()
    }

    fn lock_pcp(&self, cpu: usize, zone: usize) -> SpinGuard<'_, PerCpuPages> {
        self.pcp[self.shared.pcp_index(cpu, zone)].lock()
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
        page_alloc::alloc_pages(self.alloc, self.cpu, order, gfp)
    }

    /// [`Allocator::free_pages`] on this slot.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        page_alloc::free_pages(self.alloc, self.cpu, pfn, order)
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
