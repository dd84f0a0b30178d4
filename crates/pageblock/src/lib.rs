//! # pageblock: a thread-safe page allocator with Linux's anti-fragmentation machinery
//!
//! For now a thin layer: the [`pageblock_core::Zone`] behind its lock (the kernel's
//! `zone->lock`), and lock-free reads of everything reports need. Per-CPU page caches, a real
//! mmap'd arena and the fast path come next.
//!
//! ```
//! use pageblock::{Allocator, Gfp, Policy, ZoneConfig};
//!
//! let a = Allocator::new(ZoneConfig::normal(64 << 20), Policy::default()).unwrap();
//! let pfn = a.alloc_pages(0, Gfp::KERNEL).unwrap();
//! assert!(a.pagetypeinfo().render().contains("Unmovable"));
//! a.free_pages(pfn, 0).unwrap();
//! ```

#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex, MutexGuard};

use pageblock_core::{show, Zone, ZoneShared};
pub use pageblock_core::{AllocError, ConfigError, FreeError, Gfp, Pfn, Policy, ZoneConfig};
use pageblock_formats::pagetypeinfo::PageTypeInfo;

/// A page allocator over one zone, usable from any thread.
pub struct Allocator {
    zone: Mutex<Zone>,
    shared: Arc<ZoneShared>,
}

impl Allocator {
    /// Boot a zone of `config` with `policy`.
    pub fn new(config: ZoneConfig, policy: Policy) -> Result<Allocator, ConfigError> {
        let zone = Zone::new(config, policy)?;
        let shared = Arc::clone(zone.shared());
        Ok(Allocator {
            zone: Mutex::new(zone),
            shared,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Zone> {
        // A panic inside the zone is a broken invariant (a bug); the poison flag adds nothing.
        self.zone
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Allocate 2^`order` pages for a request with GFP mask `gfp`.
    pub fn alloc_pages(&self, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        self.lock().alloc_pages(order, gfp)
    }

    /// Free a block returned by [`Allocator::alloc_pages`].
    pub fn free_pages(&self, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.lock().free_pages(pfn, order)
    }

    /// `/proc/pagetypeinfo` from the per-migratetype counts: never takes the zone lock.
    pub fn pagetypeinfo(&self) -> PageTypeInfo {
        show::pagetypeinfo_counts(&self.shared, show::PagetypeinfoMode::Counts)
    }

    /// The lock-free part of the zone (counters, pageblock bits, memmap).
    pub fn shared(&self) -> &Arc<ZoneShared> {
        &self.shared
    }

    /// Run `f` on the zone with its lock held.
    pub fn with_zone<R>(&self, f: impl FnOnce(&mut Zone) -> R) -> R {
        f(&mut self.lock())
    }
}
