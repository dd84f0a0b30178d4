//! # pageblock-lab: workloads, simulation runs and reports on top of `pageblock-core`
//!
//! Simulation runs and trace replays are deterministic: one RNG seed drives a run, and the
//! same seed gives the same zone state and the same reports byte for byte. Also here: the
//! seed patches' experiments ([`seeds`], each figure marked deterministic or wall-clock),
//! reading real traces ([`trace`]), inspecting the running kernel ([`inspect`]) and the
//! wall-clock benchmark against peer allocators ([`fastpath`]).

pub mod compare;
pub mod fastpath;
pub mod html;
pub mod inspect;
pub mod machine;
pub mod meta;
pub mod prng;
pub mod replay;
pub mod report;
pub mod seeds;
pub mod sim;
pub mod thp;
pub mod trace;
pub mod trace_writer;
pub mod workload;
