//! # pageblock-core: Linux's zoned buddy allocator with mobility grouping
//!
//! A faithful, deterministic re-implementation of the page allocator in Linux 6.18's
//! `mm/page_alloc.c` and the reports of `mm/vmstat.c`, as pure data structures: no threads,
//! no clock, no randomness, no I/O. A [`Zone`] is what the kernel guards with `zone->lock`;
//! the `pageblock` runtime crate wraps it for concurrent use and the lab drives it with
//! workloads and traces.
//!
//! ```
//! use pageblock_core::{Gfp, Policy, Zone, ZoneConfig};
//!
//! let mut zone = Zone::new(ZoneConfig::normal(64 << 20), Policy::default()).unwrap();
//! let pfn = zone.alloc_pages(3, Gfp::KERNEL).unwrap();
//! zone.free_pages(pfn, 3).unwrap();
//! assert!(zone.free_pages(pfn, 3).is_err(), "a double free is refused");
//! zone.verify().unwrap();
//! ```
//!
//! How the kernel's names map to this crate:
//!
//! | kernel | here |
//! |---|---|
//! | `struct zone`, `zone->lock` | [`Zone`] (`&mut self`), [`ZoneShared`] (lock-free part) |
//! | `struct page` | [`memmap::Memmap`] (12 bytes per page) |
//! | `free_area[o].free_list[mt]`, `nr_free`, `mt_nr_free` | [`free_area::FreeAreas`] |
//! | `struct per_cpu_pages`, `rmqueue_pcplist`, `free_pcppages_bulk` | [`pcp::PerCpuPages`] |
//! | `__free_one_page`, `expand`, `__rmqueue_smallest` | [`buddy`] |
//! | `__rmqueue`, `__rmqueue_claim/steal`, `try_to_claim_block` | [`fallback`] |
//! | `get_page_from_freelist`, `__alloc_pages_slowpath`, `rmqueue_bulk` | [`alloc`] |
//! | `__zone_watermark_ok`, `boost_watermark` | [`watermark`] |
//! | `reserve/unreserve_highatomic_pageblock` | [`highatomic`] |
//! | `/proc/pagetypeinfo`, buddyinfo, zoneinfo, vmstat, extfrag | [`show`] |

// One audited exception, the prefetch hint in `memmap::Memmap::prefetch`.
#![deny(unsafe_code)]

pub mod alloc;
pub mod buddy;
pub mod config;
pub mod fallback;
pub mod free;
pub mod free_area;
pub mod gfp;
pub mod highatomic;
pub mod list;
pub mod memmap;
pub mod migratetype;
pub mod pageblock;
pub mod pcp;
pub mod show;
pub mod stats;
pub mod trace;
pub mod types;
pub mod verify;
pub mod watermark;
pub mod zone;

pub use alloc::AllocError;
pub use config::{ConfigError, Policy, ZoneConfig, ZoneType};
pub use free::FreeError;
pub use gfp::{AllocFlags, Gfp};
pub use migratetype::MigrateType;
pub use stats::{VmEvent, ZoneStat};
pub use trace::{TraceEvent, TraceSink};
pub use types::Pfn;
pub use verify::{PageCensus, VerifyError};
pub use zone::{Zone, ZoneCounters, ZoneShared};
