//! `thpscale`, the mmtests shape: fault an anonymous mapping of base pages over most of
//! memory, punch holes in it and fill them with page cache (so free memory is scattered
//! between movable pages), then fault a second mapping with huge pages (`MADV_HUGEPAGE`) and
//! measure each fault. Every run unmaps its mappings at the end; the page cache stays.

use pageblock_core::thp::ThpDefrag;
use pageblock_core::{Gfp, Node};

use super::mm::Mm;
use super::{RunStats, ThpWorkload};
use crate::prng::Prng;

/// Page cache reads.
const GFP_FILE: Gfp = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::COMP.0);

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Faulting the first mapping.
    Fill,
    /// Unmapping every other page of it and reading a file into the holes.
    Punch,
    /// Faulting the huge page mapping.
    Huge,
    /// Unmapping both mappings.
    Teardown,
}

/// The mmtests thpscale workload.
pub struct Thpscale {
    rng: Prng,
    managed: u64,
    hpage_order: u32,
    defrag: ThpDefrag,
    phase: Phase,
    base: Vec<u32>,
    huge: Vec<u32>,
    cursor: usize,
    files_first: u32,
    nr_files: u32,
    next_file: u32,
}

impl Thpscale {
    /// Sized for a node of `managed` pages.
    pub fn new(mm: &Mm, managed: u64, hpage_order: u32, defrag: ThpDefrag, seed: u64) -> Thpscale {
        let nr_files = managed as u32;
        let files_first = mm.add_files(nr_files);
        Thpscale {
            rng: Prng::new(seed),
            managed,
            hpage_order,
            defrag,
            phase: Phase::Fill,
            base: Vec::new(),
            huge: Vec::new(),
            cursor: 0,
            files_first,
            nr_files,
            next_file: 0,
        }
    }
}

impl ThpWorkload for Thpscale {
    fn start_run(&mut self) {
        self.phase = Phase::Fill;
        self.cursor = 0;
    }

    fn step(&mut self, mm: &Mm, node: &Node, stats: &mut RunStats) -> bool {
        let cpu = self.rng.below(node.shared().nr_cpus() as u64) as usize;
        match self.phase {
            Phase::Fill => {
                // Three quarters of memory in base pages.
                if (self.base.len() as u64) < self.managed * 3 / 4 {
                    if let Some(id) = mm.fault_anon(node, cpu) {
                        self.base.push(id);
                        return true;
                    }
                }
                self.phase = Phase::Punch;
            }
            Phase::Punch => {
                if self.cursor < self.base.len() {
                    mm.unmap_anon(node, cpu, self.base[self.cursor]);
                    let id = self.files_first + self.next_file;
                    self.next_file = (self.next_file + 1) % self.nr_files;
                    let _ = mm.read_file(node, cpu, id, GFP_FILE);
                    self.cursor += 2;
                    return true;
                }
                self.phase = Phase::Huge;
            }
            Phase::Huge => {
                // A third of memory in huge pages.
                if (self.huge.len() as u64) < (self.managed / 3) >> self.hpage_order {
                    let before = super::work_units(node);
                    let fault = mm.fault_thp(node, cpu, self.defrag, true);
                    stats.hugealloc_work.push(super::work_units(node) - before);
                    if let Some((id, _)) = fault {
                        self.huge.push(id);
                    }
                    return true;
                }
                self.phase = Phase::Teardown;
            }
            Phase::Teardown => {
                for id in self.base.drain(..).chain(self.huge.drain(..)) {
                    mm.unmap_anon(node, cpu, id);
                }
                return false;
            }
        }
        true
    }
}
