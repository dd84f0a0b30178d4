//! Workloads: deterministic generators of allocation and free requests that drive a zone.
//!
//! A workload owns the blocks it allocated and frees them itself; each [`Workload::step`] is
//! one operation (an allocation attempt or a free). Everything random comes from the seed
//! given at construction, so a (workload, seed, zone) triple always produces the same run.

mod fragment;

pub use fragment::Fragment;

use pageblock_core::Zone;

use crate::report::RunReport;

/// A generator of allocator operations.
pub trait Workload {
    /// The name used on the command line.
    fn name(&self) -> &'static str;

    /// Perform one operation on `zone`, recording its outcome in `report`.
    fn step(&mut self, zone: &mut Zone, report: &mut RunReport);

    /// Pages the workload currently holds.
    fn held_pages(&self) -> u64;
}

/// The built-in workloads, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// [`Fragment`]: mixed orders, types and lifetimes holding ~70% of memory.
    Fragment,
}

impl WorkloadKind {
    /// Every built-in workload.
    pub const ALL: [WorkloadKind; 1] = [WorkloadKind::Fragment];

    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            WorkloadKind::Fragment => "fragment",
        }
    }

    /// Look a workload up by its command-line name.
    pub fn from_name(name: &str) -> Option<WorkloadKind> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Build the workload for `zone`, seeded with `seed`.
    pub fn build(self, zone: &Zone, seed: u64) -> Box<dyn Workload> {
        match self {
            WorkloadKind::Fragment => Box::new(Fragment::new(zone.managed_pages(), seed)),
        }
    }
}
