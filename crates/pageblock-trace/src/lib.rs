//! # pageblock-trace: kernel page-allocator traces, read and written
//!
//! Reading real kernel page-allocator traces: ftrace text (`/sys/kernel/tracing/trace`,
//! `trace_pipe`) or `perf script` text, plain, gzip or zstd, decoded line by line into
//! compact [`TraceRecord`]s for replay and statistics; and writing a simulated run's kmem
//! events as ftrace text ([`writer`]), so that a simulated run reads like a recorded one.
//!
//! ```text
//! TraceInput    file → text (compression told by content; a truncated file is an error
//!               after the text before the cut)
//! TraceReader   text → (line_no, TraceRecord): kmem page events, compaction events,
//!               CPU:n [LOST …] markers; other tracepoints counted and skipped
//! TraceStats    one streaming pass of statistics (events, orders, gfp mix, lifetimes…)
//! FtraceWriter  a simulated run's kmem events → ftrace text (`writer`)
//! ```
//!
//! Decoding is the hot path (a real trace has millions of lines): a byte-level fast path
//! decodes the common line shapes without allocating, and hands everything else to the
//! strict `pageblock_formats` parsers (see the `decode` module), which also word every error.

mod decode;
mod error;
mod gfp_table;
mod input;
mod lines;
mod reader;
mod record;
mod stats;
mod windows;
pub mod writer;

pub use error::TraceError;
pub use gfp_table::GfpTable;
pub use input::{trace_file, Compression, ReadProgress, TraceInput};
pub use pageblock_formats::ftrace::Dialect;
pub use reader::{LineCounts, TraceReader};
pub use record::{GfpId, LostEvents, RecordKind, ShrinkInactive, Task, TraceRecord, VmscanEvent};
pub use stats::{
    AllocStats, DrainStats, FallbackPair, FallbackStats, GfpCount, GfpMix, LifetimePercentiles,
    LifetimeStats, LostStats, OrderMigratetype, RefillStats, TimeSpan, TraceStats, GFP_TOP,
};
