//! # pageblock-lab: workloads, simulation runs and reports on top of `pageblock-core`
//!
//! Simulation runs and trace replays are deterministic: one RNG seed drives a run, and the
//! same seed gives the same zone state and the same reports byte for byte. Also here: the
//! seed patches' experiments ([`seeds`], each figure marked deterministic or wall-clock, with
//! the helpers of [`wallclock`]), seed 004's THP lab ([`thp`]) and replaying real traces
//! ([`replay`], read by `pageblock-trace`). The simulated node's pageblock map
//! ([`block_map`]) is drawn by `pageblock-view`, as the live machine's is. The live machine is
//! `pageblock-live` and the wall-clock benchmark against peer allocators `pageblock-bench`,
//! which depends on this one (never the other way); this crate depends on neither.

pub mod block_map;
pub mod compare;
pub mod machine;
pub mod prng;
pub mod replay;
pub mod report;
pub mod seeds;
pub mod sim;
pub mod summary;
pub mod thp;
pub mod wallclock;
pub mod workload;
