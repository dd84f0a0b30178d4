//! Replaying a real kernel's page-allocator trace against the simulator.

pub mod snapshot;
pub mod start;
