//! Linux kernel text formats, parsed and rendered byte for byte.
//!
//! Everything the kernel prints about its page allocator has a data model here, a renderer
//! that reproduces the kernel's `seq_printf`/`TP_printk` output exactly, and a parser that
//! reads real files back into the model, so that `render(parse(text)) == text` for every real
//! sample. The crate knows nothing about allocation: `pageblock-core` fills the models from
//! its zone, the lab parses snapshots and traces taken on real machines. (The only arithmetic
//! here is the kernel's fragmentation-index formulas in [`extfrag`], pure functions of the
//! per-order free counts.)
//!
//! Conventions shared by every module:
//!
//! * Parsers return [`ParseError`] (1-based line and a reason) and never panic, whatever the
//!   input. They are tolerant of column widths (fields are split on whitespace), strict about
//!   structure and numbers (ASCII digits only; no `+`; overflow is an error). An empty file
//!   is an error.
//! * Renderers (`render()`, and `Display`) pad by **bytes**, as the kernel's `vsnprintf` does.
//! * Stat lists whose names change between kernel releases (zoneinfo, vmstat) are ordered
//!   `(name, value)` lists, so unknown stats round-trip.
//!
//! | module | kernel source of the format |
//! |---|---|
//! | [`buddyinfo`] | `mm/vmstat.c` `frag_show_print` |
//! | [`pagetypeinfo`] | `mm/vmstat.c` `pagetypeinfo_show*` |
//! | [`zoneinfo`] | `mm/vmstat.c` `zoneinfo_show_print` |
//! | [`vmstat`] | `mm/vmstat.c` `vmstat_show` |
//! | [`swaps`] | `mm/swapfile.c` `swap_show` (parsed only) |
//! | [`extfrag`] | `mm/vmstat.c` `unusable_show_print`, `extfrag_show_print` (debugfs) |
//! | [`gfp`] | `include/trace/events/mmflags.h` `show_gfp_flags` |
//! | [`ftrace`] | `kernel/trace/trace_output.c` `trace_print_context` (ftrace text line prefix); also `perf script` lines |
//! | [`kmem`] | `include/trace/events/kmem.h` page events |
//! | [`compaction`] | `include/trace/events/compaction.h` events |
//! | [`vmscan`] | `include/trace/events/vmscan.h` `mm_vmscan_lru_shrink_inactive` |

mod error;
mod scan;
mod text;

pub mod buddyinfo;
pub mod compaction;
pub mod extfrag;
pub mod ftrace;
pub mod gfp;
pub mod kmem;
pub mod pagetypeinfo;
pub mod samples;
pub mod swaps;
pub mod vmscan;
pub mod vmstat;
pub mod zoneinfo;

pub use error::ParseError;
