//! # pageblock-core: Linux's zoned buddy allocator with mobility grouping
//!
//! A faithful, deterministic re-implementation of the page allocator in Linux 6.18's
//! `mm/page_alloc.c` and the reports of `mm/vmstat.c`, as pure data structures: no threads,
//! no clock, no randomness, no I/O. A node ([`NodeConfig`]: DMA, DMA32, Normal zones as
//! configured) boots into [`NodeShared`] (what anyone may read) and its [`Zone`]s (what
//! `zone->lock` guards). The allocation path ([`page_alloc`], `slowpath`) is written once
//! against [`NodeLocks`] and driven two ways: by [`Node`], the single-threaded simulator the
//! lab uses, and by the `pageblock` crate's thread-safe `Allocator`.
//!
//! ```
//! use pageblock_core::{Gfp, Node, NodeConfig, Policy, ZoneConfig};
//!
//! let node = Node::new(NodeConfig::single(ZoneConfig::normal(64 << 20)), Policy::default()).unwrap();
//! let pfn = node.alloc_pages(0, 3, Gfp::KERNEL).unwrap();
//! node.free_pages(0, pfn, 3).unwrap();
//! assert!(node.free_pages(0, pfn, 3).is_err(), "a double free is refused");
//! node.verify().unwrap();
//! ```
//!
//! How the kernel's names map to this crate:
//!
//! | kernel | here |
//! |---|---|
//! | `pg_data_t`, `build_zonelists` | [`NodeShared`], [`node`] |
//! | `struct zone`, `zone->lock` | [`Zone`] (`&mut self`), [`ZoneShared`] (lock-free part) |
//! | `struct page` | [`memmap::Memmap`] (9 bytes per page) |
//! | `free_area[o].free_list[mt]`, `nr_free`, `mt_nr_free` | `zone::free_area::FreeAreas` |
//! | `struct per_cpu_pages`, `__rmqueue_pcplist`, `free_pcppages_bulk` | [`pcp::PerCpuPages`] |
//! | `__free_one_page`, `expand`, `__rmqueue_smallest` | `zone::buddy`, `zone::free` |
//! | `__rmqueue`, `__rmqueue_claim/steal`, `try_to_claim_block` | `zone::fallback` |
//! | `__alloc_pages` | [`page_alloc`] |
//! | `get_page_from_freelist`, `rmqueue` | `fastpath` |
//! | `free_frozen_pages`, `drain_all_pages` | `free_pages` |
//! | `__alloc_pages_slowpath`, `should_reclaim_retry` | `slowpath` |
//! | `rmqueue_buddy`, `rmqueue_bulk` | `zone::alloc` |
//! | `__zone_watermark_ok`, `boost_watermark`, `lowmem_reserve` | [`zone::watermark`] |
//! | `reserve/unreserve_highatomic_pageblock` | `zone::highatomic` |
//! | `compact_zone`, `try_to_compact_pages`, kcompactd | [`compaction`] |
//! | `struct lruvec`, `shrink_node`, kswapd, `try_to_free_pages` | [`vmscan`] |
//! | `vma_thp_gfp_mask`, `do_huge_pmd_anonymous_page` | [`thp`] |
//! | `/proc/pagetypeinfo`, buddyinfo, zoneinfo, vmstat, extfrag | [`show`] |
//! | `/proc/sys/vm` sysctls, Kconfig options, boot-time decisions | [`policy`] |
//!
//! What is public, and for whom. The root's re-exports, [`page_alloc`] and [`Node`] are the
//! interface of the allocation path for its drivers. The public modules below them —
//! [`zone`] (a [`Zone`] is what `zone->lock` guards: its methods change free lists and
//! counters without the checks of the allocation path), [`pcp`], [`memmap`], [`vmscan`],
//! [`compaction`], [`thp`], [`show`] — serve the simulator (the lab's workloads and replay)
//! and the crate's tests: they expose internals, with no stability promise. The zone's own
//! operations (buddy, free lists, fallback, watermarks' internals), the fast and free paths,
//! the slow path and the driver trait's module are crate-private; the thread-safe library
//! (`pageblock`) hands none of them out.

// Two audited exceptions: the prefetch hint in `memmap::Memmap::prefetch`, and the memmap's
// huge-page backing store in `vmemmap`.
#![deny(unsafe_code)]

pub mod compaction;
pub mod config;
pub(crate) mod fastpath;
pub(crate) mod free_pages;
pub mod gfp;
mod invariant;
pub(crate) mod list;
mod locks;
pub mod memmap;
pub mod memory_hotplug;
pub mod migratetype;
pub mod mover;
pub mod named_policy;
pub mod node;
pub mod page_alloc;
pub(crate) mod pageblock;
pub mod pcp;
pub mod pfn_table;
pub mod policy;
pub mod scan_control;
pub mod show;
mod sim_node;
pub(crate) mod slowpath;
pub mod stats;
pub mod thp;
pub mod trace;
pub mod types;
#[cfg(feature = "unstable-internals")]
pub mod unstable;
pub mod verify;
pub(crate) mod vmemmap;
pub mod vmscan;
pub(crate) mod vmstat_items;
pub mod zone;

pub use config::{ConfigError, MemmapLayout, NodeConfig, ZoneConfig, ZoneSpan, ZoneType};
pub use gfp::{AllocFlags, Gfp};
pub use invariant::{Invariant, VerifyError};
pub use locks::NodeLocks;
pub use migratetype::MigrateType;
pub use node::{AllocContext, NodeShared};
pub use policy::{
    Boot, BulkFree, DefragModeFix, FreeAreaLayout, KernelPeriod, PageblockSwitch, PcpBatch, Policy,
    SeedPatches, SpeedOnly, Switches, Sysctl, SysctlError, Sysctls,
};
pub use sim_node::{DaemonCpus, DaemonPhases, Node, STAT_INTERVAL_US};
pub use stats::{VmEvent, ZoneStat};
pub use trace::{TraceContext, TraceEvent, TraceHub, TraceSink};
pub use types::Pfn;
pub use zone::alloc::AllocError;
pub use zone::free::{FreeBatchError, FreeError, Owner};
pub use zone::verify::PageCensus;
pub use zone::{Zone, ZoneCounters, ZoneShared};
