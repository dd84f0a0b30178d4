//! # pageblock-lab: workloads, simulation runs and reports on top of `pageblock-core`
//!
//! Simulation runs and trace replays are deterministic: one RNG seed drives a run, and the
//! same seed gives the same zone state and the same reports byte for byte. Also here: the
//! seed patches' experiments ([`seeds`], each figure marked deterministic or wall-clock, with
//! the helpers of [`wallclock`]), replaying real traces
//! ([`replay`], read by `pageblock-trace`) and inspecting the running kernel ([`inspect`]). The wall-clock benchmark against peer allocators is the crate
//! `pageblock-bench`, which depends on this one (never the other way).

pub mod block_map;
pub mod compare;
pub mod inspect;
pub mod machine;
pub mod meta;
pub mod prng;
pub mod replay;
pub mod report;
pub mod seeds;
pub mod sim;
pub mod thp;
pub mod wallclock;
pub mod workload;
