//! # pageblock: a thread-safe page allocator with Linux's anti-fragmentation machinery
//!
//! [`Allocator`] is the runtime around a node's zones: each zone sits behind its lock (the
//! kernel's `zone->lock`), every CPU slot has its own per-CPU page lists per zone behind their
//! own lock (`per_cpu_pages` and `pcp->lock`), and statistics and reports are read from the
//! node's lock-free counters without waiting for anyone.
//!
//! Memory is either simulated (metadata only: pfns in a made-up range) or real: an mmap'd,
//! 2 MiB-aligned [`arena::Arena`] whose pfns are virtual page numbers, so a block's address is
//! `pfn << 12` and huge-page-sized blocks are huge-page aligned.
//!
//! The public surface is what a user of an allocator needs — allocation and free (on this
//! thread's CPU slot or a named one), movable handles, shrinkers, the daemons, the kernel's
//! reports and counters, and [`Allocator::verify`] — and nothing of it hands out a zone, the
//! per-CPU lists or the memmap, so no safe call can break an invariant:
//!
//! ```
//! use pageblock::{Allocator, Gfp, Policy, VmEvent};
//!
//! let mut a = Allocator::with_arena_cpus(64 << 20, 2, Policy::default()).unwrap();
//!
//! // Raw pages, on this thread's CPU slot or on a named one.
//! let pfn = a.alloc_pages(0, Gfp::KERNEL).unwrap();
//! let page = a.page_ptr(pfn).unwrap();
//! // SAFETY: the page was just allocated and is ours until freed.
//! unsafe { page.as_ptr().write_bytes(0x5a, 4096) };
//! a.free_pages(pfn, 0).unwrap();
//! assert!(a.free_pages(pfn, 0).is_err(), "double free is refused");
//! let cpu1 = a.on_cpu(1).unwrap();
//! let block = cpu1.alloc_pages(3, Gfp::KERNEL).unwrap();
//! cpu1.free_pages(block, 3).unwrap();
//! assert!(a.on_cpu(2).is_err(), "there are two CPU slots");
//!
//! // Movable memory: compaction may move it (copying the bytes), never while pinned.
//! let mut m = a.alloc_movable(0, Gfp::HIGHUSER_MOVABLE).unwrap();
//! a.pin(&mut m).unwrap().bytes_mut().unwrap()[0] = 42;
//! assert_eq!(a.pin(&mut m).unwrap().bytes().unwrap()[0], 42);
//! a.free_movable(m).unwrap();
//!
//! // The kernel's reports and counters.
//! assert!(a.buddyinfo().render().starts_with("Node 0, zone   Normal"));
//! assert!(a.pagetypeinfo().render().contains("Free pages count per migrate type"));
//! assert!(a.event(VmEvent::PgAlloc) >= 3);
//! assert!(a.vmstat().render().contains("pgalloc_normal"));
//!
//! // Every invariant, once the daemons are quiet.
//! a.stop_daemons();
//! a.drain_all_pages();
//! assert_eq!(a.verify().unwrap().free, a.managed_pages());
//! ```
//!
//! An arena allocator runs kswapd and kcompactd as threads (`kswapd0`, `kcompactd0`); direct
//! compaction and reclaim run on the allocating thread. Owners of reclaimable memory register
//! a [`Shrinker`]. See `docs/ARCHITECTURE.md` for the design.
//!
//! The allocation and free paths are [`pageblock_core::page_alloc`]'s — the same code the
//! lab's simulator runs ([`pageblock_core::Node`]); this crate supplies the locks (a
//! [`pageblock_core::NodeLocks`] driver): a mutex per zone and a spinlock per CPU slot's
//! lists, `try_lock` where the kernel trylocks. Fast path (order ≤ 3, or the pageblock order
//! with THP): a lock-free watermark check, a `try_lock` of the CPU's lists, and a list pop or
//! push; the zone lock is taken only to refill or drain a batch. Everything else takes the
//! zone lock.
//!
//! Like the kernel, a failing request drains other CPUs' caches only after direct reclaim
//! made progress, so pages cached on another CPU can stay there when memory runs out;
//! [`Allocator::drain_all_pages`] gives them back.
//!
//! Tracing: [`Allocator::set_trace_sink`] installs a sink that sees every event, stamped with
//! the CPU slot.
//!
//! The cargo feature `unstable-internals` adds hidden methods that hand out the node's
//! internals (its lock-free half, the locking driver, a locked zone) for this crate's own
//! tests: they have no stability and can corrupt the allocator. Nothing else should enable it.

pub mod arena;
mod cpu;
mod daemons;
mod movable;
mod pgdat;
mod report;
mod shrinker;
mod sync;
#[cfg(feature = "unstable-internals")]
mod unstable;

use std::ptr::NonNull;
use std::sync::Arc;

use pageblock_core::compaction::{compact_node, CompactResult};
use pageblock_core::page_alloc;
use pageblock_core::types::PAGE_SIZE;
pub use pageblock_core::{
    AllocError, Boot, BulkFree, ConfigError, DefragModeFix, FreeAreaLayout, FreeBatchError, FreeError, Gfp,
    KernelPeriod, MemmapLayout, NodeConfig, PageblockSwitch, PcpBatch, Pfn, Policy, SeedPatches, SpeedOnly,
    Switches, Sysctl, SysctlError, Sysctls, TraceSink, VmEvent, ZoneConfig,
};
use pageblock_core::{PageCensus, VerifyError};

use crate::arena::Arena;
pub use crate::cpu::NoSuchCpu;
use crate::daemons::DaemonThreads;
pub use crate::movable::{Movable, MovableError, Pinned};
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub use crate::pgdat::Pgdat;
pub use crate::shrinker::{ShrinkControl, Shrinker, ShrinkerId, SHRINK_BATCH};

/// A page allocator over one node, usable from any thread.
pub struct Allocator {
    pgdat: Arc<pgdat::Pgdat>,
    /// kswapd and kcompactd, while they run.
    daemons: Option<DaemonThreads>,
}

impl Allocator {
    /// A metadata-only allocator (for simulation) over the node `config` describes. No
    /// daemon threads run until [`Allocator::start_daemons`].
    pub fn new(config: NodeConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        Self::build(config, policy, None)
    }

    /// A metadata-only allocator over one zone.
    pub fn single_zone(zone: ZoneConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        Self::new(NodeConfig::single(zone), policy)
    }

    /// An allocator over `bytes` of real, mmap'd memory, with one CPU slot per online CPU and
    /// kswapd and kcompactd running.
    pub fn with_arena(bytes: u64, policy: Policy) -> Result<Allocator, ArenaError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        Self::with_arena_cpus(bytes, cpus, policy)
    }

    /// An allocator over `bytes` of real, mmap'd memory with `nr_cpus` CPU slots (one
    /// ZONE_NORMAL whose pfns are the arena's virtual page numbers), kswapd and kcompactd
    /// running.
    pub fn with_arena_cpus(bytes: u64, nr_cpus: u32, policy: Policy) -> Result<Allocator, ArenaError> {
        let mut a = Self::with_arena_quiet(bytes, nr_cpus, policy)?;
        a.start_daemons().map_err(ArenaError::Map)?;
        Ok(a)
    }

    /// [`Allocator::with_arena_cpus`] without the daemon threads (benchmarks and
    /// deterministic tests; start them later with [`Allocator::start_daemons`]).
    pub fn with_arena_quiet(bytes: u64, nr_cpus: u32, policy: Policy) -> Result<Allocator, ArenaError> {
        Self::with_arena_layout(bytes, nr_cpus, MemmapLayout::Split, policy)
    }

    /// [`Allocator::with_arena_quiet`] with the memmap in `layout`: `MemmapLayout::Records(64)`
    /// gives it the kernel's `struct page` footprint, for cache experiments.
    pub fn with_arena_layout(
        bytes: u64,
        nr_cpus: u32,
        layout: MemmapLayout,
        policy: Policy,
    ) -> Result<Allocator, ArenaError> {
        let zone = |start_pfn, pages| ZoneConfig {
            nr_cpus,
            memmap_layout: layout,
            ..ZoneConfig::new(pageblock_core::ZoneType::Normal, start_pfn, pages)
        };
        // The geometry is checked before anything is mapped: a size no zone can index is
        // refused as such, not as whatever a mapping of a wrapped-around length would be.
        match zone(0, bytes.div_ceil(PAGE_SIZE)).validate() {
            Err(ConfigError::TooLarge(_)) => return Err(ArenaError::TooLarge { bytes }),
            Err(e) => return Err(ArenaError::Config(e)),
            Ok(()) => {}
        }
        let arena = Arena::new(bytes).map_err(ArenaError::Map)?;
        let zone = zone(arena.start_pfn(), arena.nr_pages());
        Self::build(NodeConfig::single(zone), policy, Some(arena)).map_err(ArenaError::Config)
    }

    fn build(config: NodeConfig, policy: Policy, arena: Option<Arena>) -> Result<Allocator, ConfigError> {
        Ok(Allocator { pgdat: Arc::new(pgdat::Pgdat::boot(config, policy, arena)?), daemons: None })
    }

    /// Start kswapd and kcompactd (nothing if they run already).
    pub fn start_daemons(&mut self) -> std::io::Result<()> {
        if self.daemons.is_none() {
            self.daemons = Some(DaemonThreads::start(&self.pgdat)?);
        }
        Ok(())
    }

    /// Stop kswapd and kcompactd and wait for them (their current pass finishes first).
    /// Wake-ups are still recorded; [`Allocator::start_daemons`] picks them up.
    pub fn stop_daemons(&mut self) {
        if let Some(d) = self.daemons.take() {
            d.stop(&self.pgdat);
        }
    }

    /// Whether kswapd and kcompactd run.
    pub fn daemons_running(&self) -> bool {
        self.daemons.is_some()
    }

    /// Number of CPU slots.
    pub fn nr_cpus(&self) -> usize {
        self.pgdat.shared.nr_cpus()
    }

    /// Use CPU slot `cpu` explicitly (deterministic runs, pinned threads); refused unless
    /// `cpu` is below [`Allocator::nr_cpus`].
    pub fn on_cpu(&self, cpu: usize) -> Result<OnCpu<'_>, NoSuchCpu> {
        Ok(OnCpu { alloc: self, cpu: self.cpu_slot(cpu)? })
    }

    /// This thread's CPU slot.
    fn this_cpu(&self) -> OnCpu<'_> {
        OnCpu { alloc: self, cpu: self.pgdat.this_cpu() }
    }

    /// Allocate 2^`order` pages for a request with GFP mask `gfp`, on this thread's slot.
    /// In an arena, a block of the pageblock order (2 MiB) is 2 MiB-aligned and advised for
    /// transparent huge pages.
    #[inline]
    pub fn alloc_pages(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        page_alloc::alloc_pages(&*self.pgdat, self.pgdat.this_cpu(), order, gfp)
    }

    /// Free a block returned by [`Allocator::alloc_pages`], on this thread's slot. Misuse is
    /// refused and changes nothing (a page of a movable handle, too: only
    /// [`Allocator::free_movable`] frees it); of two racing frees of one block exactly one
    /// wins.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        page_alloc::free_pages(&*self.pgdat, self.pgdat.this_cpu(), pfn, order)
    }

    /// Free many blocks of `order` at once, on this thread's slot: each exactly as
    /// [`Allocator::free_pages`] frees it, in order, but faster when they are scattered
    /// (the next blocks' state is fetched while one is freed). For tearing down a region.
    /// Stops at the first refused block: the ones before it are freed, it and the rest are
    /// untouched.
    pub fn free_pages_batch(&self, pages: &[Pfn], order: u32) -> Result<(), FreeBatchError> {
        page_alloc::free_pages_batch(&*self.pgdat, self.pgdat.this_cpu(), pages, order)
    }

    /// Allocate 2^`order` movable pages as a handle that compaction may move while it is not
    /// pinned (`gfp` must be a movable mask, e.g. [`Gfp::HIGHUSER_MOVABLE`]). The pages are
    /// the handle's until [`Allocator::free_movable`]: a raw free of any of them is refused
    /// ([`FreeError::HandleOwned`]).
    pub fn alloc_movable(&self, order: u32, gfp: Gfp) -> Result<Movable, AllocError> {
        self.this_cpu().alloc_movable(order, gfp)
    }

    /// Pin `m` in place: its pages do not move until the pin is dropped.
    pub fn pin<'a>(&'a self, m: &'a mut Movable) -> Result<Pinned<'a>, MovableError> {
        let table = self.pgdat.movable.get().ok_or(MovableError::Foreign)?;
        table.pin(&self.pgdat, m)
    }

    /// Free a movable allocation, on this thread's slot. On refusal (a handle of another
    /// allocator) the handle comes back and nothing changed.
    pub fn free_movable(&self, m: Movable) -> Result<(), (Movable, MovableError)> {
        self.this_cpu().free_movable(m)
    }

    /// Register the owner of reclaimable memory; reclaim asks it for pages from now on.
    pub fn register_shrinker(&self, shrinker: Arc<dyn Shrinker>) -> ShrinkerId {
        self.pgdat.shrinkers.register(shrinker)
    }

    /// Stop asking a shrinker (false if it was not registered).
    pub fn unregister_shrinker(&self, id: ShrinkerId) -> bool {
        self.pgdat.shrinkers.unregister(id)
    }

    /// `echo 1 > /proc/sys/vm/compact_memory`: compact every zone whole, synchronously, on
    /// this thread. Returns each zone's result (empty while no movable handle is live).
    pub fn compact_memory(&self) -> Vec<CompactResult> {
        compact_node(&*self.pgdat, self.pgdat.this_cpu(), false)
    }

    /// `drain_pages(cpu)`: give CPU slot `cpu`'s cached pages of every zone back.
    pub fn drain_pages(&self, cpu: usize) -> Result<(), NoSuchCpu> {
        let cpu = self.cpu_slot(cpu)?;
        for z in 0..self.pgdat.nr_zones() {
            page_alloc::drain_pages_zone(&*self.pgdat, cpu, z);
        }
        Ok(())
    }

    /// `drain_all_pages()`: give every CPU's cached pages back to the zones.
    pub fn drain_all_pages(&self) {
        page_alloc::drain_all_pages(&*self.pgdat, None);
    }

    /// The vmstat worker's pass for CPU slot `cpu` (`decay_pcp_high`): the kernel runs it
    /// every second on every CPU; callers with long-lived allocators run it periodically.
    /// Returns whether more decay work remains.
    pub fn vmstat_update(&self, cpu: usize) -> Result<bool, NoSuchCpu> {
        Ok(page_alloc::vmstat_update(&*self.pgdat, self.cpu_slot(cpu)?))
    }

    /// `cpu` if it names one of the CPU slots.
    pub(crate) fn cpu_slot(&self, cpu: usize) -> Result<usize, NoSuchCpu> {
        let nr_cpus = self.nr_cpus();
        if cpu < nr_cpus {
            Ok(cpu)
        } else {
            Err(NoSuchCpu { cpu, nr_cpus })
        }
    }

    /// Check every invariant of every zone and every CPU's lists, holding each lock in turn,
    /// and that the movable handles and the memmap agree: every live handle's block is
    /// allocated in the memmap with the handle's order and the handle tag, and every block
    /// with that tag has its handle (quiesce the allocator first — its callers and its
    /// daemons, see [`Allocator::stop_daemons`]: concurrent operations move pages between
    /// them; a held pin is fine).
    pub fn verify(&self) -> Result<PageCensus, VerifyError> {
        let census = pageblock_core::verify::verify_node(&*self.pgdat)?;
        movable::verify_handles(&self.pgdat)?;
        Ok(census)
    }

    /// The address of page `pfn` (arena mode only).
    pub fn page_ptr(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        self.pgdat.arena.as_ref()?.page_ptr(pfn.0)
    }

    /// The page containing `ptr` (arena mode only).
    pub fn pfn_of(&self, ptr: *const u8) -> Option<Pfn> {
        self.pgdat.arena.as_ref()?.pfn_of(ptr).map(Pfn)
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        self.stop_daemons();
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
        page_alloc::alloc_pages(&*self.alloc.pgdat, self.cpu, order, gfp)
    }

    /// [`Allocator::free_pages`] on this slot.
    #[inline]
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        page_alloc::free_pages(&*self.alloc.pgdat, self.cpu, pfn, order)
    }

    /// [`Allocator::alloc_movable`] on this slot.
    pub fn alloc_movable(&self, order: u32, gfp: Gfp) -> Result<Movable, AllocError> {
        if !gfp.contains(Gfp::MOVABLE) {
            return Err(AllocError::NotMovable(gfp));
        }
        let table = self.alloc.pgdat.movable.get_or_init(|| {
            let node = &self.alloc.pgdat.shared;
            let first = node.zones().first().map_or(0, |z| z.config().start_pfn);
            let end = node.zones().last().map_or(0, |z| z.config().end_pfn());
            movable::MovableTable::new(first, end - first)
        });
        loop {
            let pfn = self.alloc_pages(order, gfp)?;
            if let Some(m) = table.adopt(&self.alloc.pgdat, pfn, order) {
                return Ok(m);
            }
        }
    }

    /// [`Allocator::free_movable`] on this slot.
    pub fn free_movable(&self, m: Movable) -> Result<(), (Movable, MovableError)> {
        match self.alloc.pgdat.movable.get() {
            Some(table) => table.free(&self.alloc.pgdat, self.cpu, m),
            None => Err((m, MovableError::Foreign)),
        }
    }

    /// [`Allocator::free_pages_batch`] on this slot.
    pub fn free_pages_batch(&self, pages: &[Pfn], order: u32) -> Result<(), FreeBatchError> {
        page_alloc::free_pages_batch(&*self.alloc.pgdat, self.cpu, pages, order)
    }
}

/// Why an arena allocator could not be built.
#[derive(Debug)]
pub enum ArenaError {
    /// More bytes than one zone can index (fewer than 2^32 pages, 16 TiB, rounded up to
    /// pageblocks); nothing was mapped.
    TooLarge {
        /// The size asked for.
        bytes: u64,
    },
    /// mmap failed.
    Map(std::io::Error),
    /// The zone geometry was rejected.
    Config(ConfigError),
}

impl std::fmt::Display for ArenaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArenaError::TooLarge { bytes } => write!(
                f,
                "an arena of {bytes} bytes is too large: one zone indexes fewer than 2^32 pages \
                 of 4 KiB (16 TiB)"
            ),
            ArenaError::Map(e) => write!(f, "mapping the arena failed: {e}"),
            ArenaError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ArenaError {}
