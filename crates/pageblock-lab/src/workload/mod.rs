//! Workloads: deterministic generators of allocation and free requests that drive a zone.
//!
//! A workload owns the blocks it allocated and frees them itself; each [`Workload::step`] is
//! one operation (an allocation attempt or a free) on a CPU the workload picks. Everything
//! random comes from the seed given at construction, so a (workload, seed, machine) triple
//! always produces the same run. Workloads drive [`Pages`]: the one allocation path, through
//! the simulator or through the thread-safe library.

mod fragment;

pub use fragment::Fragment;

use pageblock::Allocator;
use pageblock_core::{AllocError, FreeError, Gfp, Node, Pfn};

use crate::report::RunReport;

/// What a workload asks of an allocator: `alloc_pages` and `__free_pages` on a CPU.
pub trait Pages {
    /// CPUs the workload may run on.
    fn nr_cpus(&self) -> usize;
    /// Pages the allocator manages.
    fn managed_pages(&self) -> u64;
    /// Allocate on `cpu`.
    fn alloc_pages(&self, cpu: usize, order: u32, gfp: Gfp) -> Result<Pfn, AllocError>;
    /// Free on `cpu`.
    fn free_pages(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError>;
}

impl Pages for Node {
    fn nr_cpus(&self) -> usize {
        self.shared().nr_cpus()
    }

    fn managed_pages(&self) -> u64 {
        self.shared().managed_pages()
    }

    fn alloc_pages(&self, cpu: usize, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        Node::alloc_pages(self, cpu, order, gfp)
    }

    fn free_pages(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        Node::free_pages(self, cpu, pfn, order)
    }
}

impl Pages for Allocator {
    fn nr_cpus(&self) -> usize {
        Allocator::nr_cpus(self)
    }

    fn managed_pages(&self) -> u64 {
        Allocator::managed_pages(self)
    }

    fn alloc_pages(&self, cpu: usize, order: u32, gfp: Gfp) -> Result<Pfn, AllocError> {
        self.on_cpu(cpu).expect("a workload picks one of the allocator's CPU slots").alloc_pages(order, gfp)
    }

    fn free_pages(&self, cpu: usize, pfn: Pfn, order: u32) -> Result<(), FreeError> {
        self.on_cpu(cpu).expect("a workload picks one of the allocator's CPU slots").free_pages(pfn, order)
    }
}

/// A generator of allocator operations.
pub trait Workload {
    /// The name used on the command line.
    fn name(&self) -> &'static str;

    /// Perform one operation on `pages`, recording its outcome in `report`.
    fn step(&mut self, pages: &dyn Pages, report: &mut RunReport);

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

    /// Build the workload for a machine of `managed_pages` and `nr_cpus`, seeded with `seed`.
    pub fn build(self, managed_pages: u64, nr_cpus: usize, seed: u64) -> Box<dyn Workload> {
        match self {
            WorkloadKind::Fragment => Box::new(Fragment::new(managed_pages, nr_cpus, seed)),
        }
    }
}
