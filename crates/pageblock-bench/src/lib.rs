//! # pageblock-bench: wall-clock benchmarks against peer page allocators
//!
//! The one crate that links the peer allocators (`buddy_system_allocator`, `buddy-alloc`)
//! and criterion, so the simulator and trace replay (`pageblock-lab`) do not. Wall-clock
//! results: compare within one run, never across machines.
//!
//! * [`fastpath`]: `pageblock bench fastpath`, pageblock and its peers side by side;
//! * `benches/fastpath.rs`: the criterion microbenchmarks over the same adapters
//!   (`cargo bench -p pageblock-bench --bench fastpath`).

pub mod fastpath;
