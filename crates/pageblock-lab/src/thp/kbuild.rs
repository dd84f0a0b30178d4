//! `kbuild-thp`: a kernel build on a memory-constrained node with bursts of huge page faults
//! beside it — the workload of seed 004's results.
//!
//! Calibration (from `pageblock trace stats` on `../shared/traces/linux-6.18-clone-tar-python-thp`,
//! 729,121 allocations): 48% are anonymous faults (`GFP_HIGHUSER_MOVABLE|__GFP_ZERO`), 37%
//! page cache (`GFP_NOFS|__GFP_MOVABLE…`, `…|__GFP_WRITE`, `GFP_HIGHUSER_MOVABLE|__GFP_COMP`),
//! 10.4% `GFP_HIGHUSER|__GFP_ACCOUNT` (unmovable, short-lived: pipe buffers), 1.8% page
//! tables (`GFP_KERNEL_ACCOUNT|__GFP_ZERO`), 0.8% reclaimable slab, 1.1% atomic or
//! non-blocking (`GFP_ATOMIC`, `GFP_NOWAIT`) of orders 0–3 (order 0: 85%, 1: 7%, 2: 5%,
//! 3: 3% of the unmovable and reclaimable high-order requests); 98% of requests are order 0.
//! Lifetimes there: median 0.53 s, 90th percentile 3.5 s, and 35% outlive the 21.6 s trace —
//! page cache and kernel caches. Here the operation mix follows those shares, page tables and
//! anonymous memory live as long as their compile job, pipe buffers and atomic buffers for
//! tens to hundreds of operations, and slab and a small kernel "leak" (inode-like caches) for
//! the whole life of the node, which is what pollutes pageblocks run after run.
//!
//! One run is one build: `jobs` compile jobs, `parallel` at a time, each faulting anonymous
//! memory up to a size drawn from the node's size, reading its source files and shared
//! headers (the file set is larger than memory, so the page cache grows until reclaimed),
//! then exiting. A THP burst process faults a tenth of memory in huge pages (`MADV_HUGEPAGE`)
//! sixteen times a build, holds it a while and unmaps it. Most of the page cache it creates
//! is written, so dirty until the flusher writes it back ([`KBUILD_PAGE_STATES`]). Runs follow each other on the same
//! node, as the seed's 15 consecutive builds did.

use std::collections::VecDeque;

use pageblock_core::thp::ThpDefrag;
use pageblock_core::{Gfp, Node, Pfn};

use super::mm::{Mm, Touch};
use super::page_states::PageStateShares;
use super::{RunStats, ThpWorkload};
use crate::prng::Prng;

/// Page cache allocations (`GFP_HIGHUSER_MOVABLE|__GFP_WRITE`… reduced to their mobility).
const GFP_FILE: Gfp = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::WRITE.0);
/// Page tables.
const GFP_PGTABLE: Gfp = Gfp(Gfp::KERNEL_ACCOUNT.0 | Gfp::ZERO.0);
/// Pipe buffers and other short-lived unmovable user-accounted pages.
const GFP_PIPE: Gfp = Gfp(Gfp::HIGHUSER.0 | Gfp::ACCOUNT.0);
/// Reclaimable slab.
const GFP_SLAB: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0 | Gfp::COMP.0);
/// Network buffers.
const GFP_NET: Gfp = Gfp(Gfp::ATOMIC.0 | Gfp::NOWARN.0 | Gfp::COMP.0);

/// The operation mix, in the trace's shares (per mille of operations).
const MIX: [(Op, u32); 8] = [
    (Op::Anon, 480),
    (Op::File, 370),
    (Op::Pipe, 104),
    (Op::PageTable, 18),
    (Op::Slab, 8),
    (Op::Atomic, 11),
    (Op::Touch, 40),
    (Op::Leak, 3),
];

/// The states of a build's pages ([`KbuildThp::set_page_states`] changes them). From the
/// calibration trace's vmstat (before → after) and the kernel's defaults:
///
/// * dirty: `nr_dirtied` grew by 223,927 pages against ~269,800 page cache allocations (37%
///   of 729,121), so 830‰ of new page cache is written (object files, the clone's and tar's
///   output). ext4 and xfs have `migrate_folio`: dirty pages move without being written.
/// * writeback: the kernel's defaults, 30 s expiry checked every 5 s; the background
///   threshold the trace's machine reports (`nr_dirty_background_threshold` 590,334 of
///   1,563,187 managed pages: 378‰); 20 ms a write (a 4 MiB `MAX_WRITEBACK_PAGES` batch at
///   ~200 MB/s). The trace wrote back almost nothing in its 21.6 s (`nr_written` +105).
/// * pinned: none. make, the compilers and the linker take no GUP pins (no O_DIRECT, RDMA,
///   vfio or io_uring fixed buffers; pipes copy).
/// * unevictable: none. The build mlocks nothing; the trace's 3,600 mlocked pages belong to
///   the machine's daemons, which the lab does not model (and 6.18's compaction moves
///   mlocked pages: `compact_unevictable_allowed` is 1).
pub const KBUILD_PAGE_STATES: PageStateShares = PageStateShares {
    dirty_file: 830,
    pinned: 0,
    unevictable: 0,
    migrate_folio: true,
    dirty_background_permille: 378,
    ..PageStateShares::NONE
};

/// A packet storm allocates managed / this many atomic buffers.
const STORM_DIVISOR: u64 = 64;

/// THP bursts per build.
const BURSTS_PER_RUN: u64 = 16;

/// [`MIX`]'s weights alone.
const MIX_WEIGHTS: [u32; MIX.len()] = {
    let mut w = [0; MIX.len()];
    let mut i = 0;
    while i < MIX.len() {
        w[i] = MIX[i].1;
        i += 1;
    }
    w
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Anon,
    File,
    Pipe,
    PageTable,
    Slab,
    Atomic,
    Touch,
    Leak,
}

/// A compile job.
#[derive(Debug, Default)]
struct Job {
    anon: Vec<u32>,
    target: usize,
    page_tables: Vec<Pfn>,
    /// Its own source files: the next file page to read.
    next_file: u32,
    files_end: u32,
}

/// The build and its neighbours.
pub struct KbuildThp {
    rng: Prng,
    managed: u64,
    hpage_order: u32,
    defrag: ThpDefrag,
    parallel: usize,
    jobs_per_run: usize,
    jobs: Vec<Job>,
    jobs_started: usize,
    /// The source tree (file page ids): headers first, then every job's sources.
    files_first: u32,
    nr_files: u32,
    headers: u32,
    short_lived: VecDeque<(u64, Pfn, u32)>,
    slab: Vec<u32>,
    leak: Vec<Pfn>,
    leak_cap: usize,
    burst: Vec<u32>,
    burst_release: u64,
    burst_every: u64,
    op: u64,
}

impl KbuildThp {
    /// A build sized for a node of `managed` pages.
    pub fn new(
        mm: &Mm,
        managed: u64,
        hpage_order: u32,
        defrag: ThpDefrag,
        quick: bool,
        seed: u64,
    ) -> KbuildThp {
        // Half again as much source as memory: the page cache never holds it all.
        let nr_files = (managed * 3 / 2) as u32;
        let files_first = mm.add_files(nr_files);
        let jobs_per_run = if quick { 60 } else { 100 };
        mm.set_page_states(KBUILD_PAGE_STATES, managed);
        KbuildThp {
            rng: Prng::new(seed),
            managed,
            hpage_order,
            defrag,
            parallel: 8,
            jobs_per_run,
            jobs: Vec::new(),
            jobs_started: 0,
            files_first,
            nr_files,
            headers: nr_files / 20,
            short_lived: VecDeque::new(),
            slab: Vec::new(),
            leak: Vec::new(),
            leak_cap: (managed / 50) as usize,
            burst: Vec::new(),
            burst_release: 0,
            burst_every: 0,
            op: 0,
        }
    }

    fn start_job(&mut self) {
        let lo = (self.managed / 100).max(16);
        let target = self.rng.range(lo, lo * 5) as usize;
        // Each job's own sources: a slice of the tree past the headers, wrapping around.
        let span = ((self.nr_files - self.headers) / self.jobs_per_run as u32).max(1);
        let k = (self.jobs_started % self.jobs_per_run) as u32;
        let start = self.files_first + self.headers + k * span;
        self.jobs.push(Job { target, next_file: start, files_end: start + span, ..Job::default() });
        self.jobs_started += 1;
    }

    fn end_job(&mut self, mm: &Mm, node: &Node, i: usize, cpu: usize) {
        let job = self.jobs.swap_remove(i);
        for id in job.anon {
            mm.unmap_anon(node, cpu, id);
        }
        for pfn in job.page_tables {
            let _ = node.free_pages(cpu, pfn, 0);
        }
    }

    /// Free what is due.
    fn expire(&mut self, node: &Node, cpu: usize) {
        while self.short_lived.front().is_some_and(|&(due, _, _)| due <= self.op) {
            if let Some((_, pfn, order)) = self.short_lived.pop_front() {
                let _ = node.free_pages(cpu, pfn, order);
            }
        }
    }

    fn short(&mut self, pfn: Pfn, order: u32, life: u64) {
        let due = self.op + life;
        // Keep the queue ordered by due time (lifetimes are short: insert from the back).
        let pos = self.short_lived.iter().rposition(|&(d, _, _)| d <= due).map_or(0, |p| p + 1);
        self.short_lived.insert(pos, (due, pfn, order));
    }

    fn burst(&mut self, mm: &Mm, node: &Node, cpu: usize, stats: &mut RunStats) {
        if !self.burst.is_empty() {
            if self.op >= self.burst_release {
                for id in std::mem::take(&mut self.burst) {
                    mm.unmap_anon(node, cpu, id);
                }
            }
            return;
        }
        if self.burst_every == 0 || self.op % self.burst_every != self.burst_every / 2 {
            return;
        }
        let n = (self.managed / 10) >> self.hpage_order;
        for _ in 0..n {
            let before = super::work_units(node);
            let fault = mm.fault_thp(node, cpu, self.defrag, true);
            stats.hugealloc_work.push(super::work_units(node) - before);
            if let Some((id, _)) = fault {
                self.burst.push(id);
            }
        }
        self.burst_release = self.op + self.burst_every / 2;
    }
}

impl KbuildThp {
    /// Give the build's new pages the states of `shares` instead of
    /// [`KBUILD_PAGE_STATES`].
    pub fn set_page_states(&mut self, mm: &Mm, shares: PageStateShares) {
        mm.set_page_states(shares, self.managed);
    }

    /// A receive storm: many atomic buffers at once, between the THP bursts.
    fn packet_storm(&mut self, node: &Node, cpu: usize, stats: &mut RunStats) {
        if self.burst_every == 0 || self.op % self.burst_every != 0 {
            return;
        }
        for _ in 0..self.managed / STORM_DIVISOR {
            self.atomic(node, cpu, stats, (100, 2000));
        }
    }

    /// One network buffer (`GFP_ATOMIC`, orders 0-3 in the trace's proportions), freed after a
    /// lifetime drawn from `life` operations; a failure is counted.
    fn atomic(&mut self, node: &Node, cpu: usize, stats: &mut RunStats, life: (u64, u64)) {
        let order = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3][self.rng.below(20) as usize];
        stats.atomic_requests += 1;
        match node.alloc_pages(cpu, order, GFP_NET) {
            Ok(pfn) => {
                let life = self.rng.range(life.0, life.1);
                self.short(pfn, order, life);
            }
            Err(_) => stats.atomic_failures += 1,
        }
    }
}

impl ThpWorkload for KbuildThp {
    fn start_run(&mut self) {
        self.jobs_started = 0;
        // A build's length in operations: every job's anonymous faults (a job's target
        // averages three times the smallest), at the mix's share of anonymous faults.
        let lo = (self.managed / 100).max(16);
        let ops = self.jobs_per_run as u64 * 3 * lo * 1000 / MIX[0].1 as u64;
        self.burst_every = (ops / BURSTS_PER_RUN).max(1);
    }

    fn step(&mut self, mm: &Mm, node: &Node, stats: &mut RunStats) -> bool {
        self.op += 1;
        let cpu = (self.op % node.shared().nr_cpus() as u64) as usize;
        mm.flush_dirty(node);
        self.expire(node, cpu);
        self.burst(mm, node, cpu, stats);
        self.packet_storm(node, cpu, stats);
        while self.jobs.len() < self.parallel && self.jobs_started < self.jobs_per_run {
            self.start_job();
        }
        if self.jobs.is_empty() {
            // The build is over: release what its neighbours still hold.
            for id in std::mem::take(&mut self.burst) {
                mm.unmap_anon(node, cpu, id);
            }
            while let Some((_, pfn, order)) = self.short_lived.pop_front() {
                let _ = node.free_pages(cpu, pfn, order);
            }
            return false;
        }
        let j = self.rng.below(self.jobs.len() as u64) as usize;
        match MIX[self.rng.weighted(&MIX_WEIGHTS)].0 {
            Op::Anon => {
                if let Some(id) = mm.fault_anon(node, cpu) {
                    self.jobs[j].anon.push(id);
                }
                if self.jobs[j].anon.len() >= self.jobs[j].target {
                    self.end_job(mm, node, j, cpu);
                }
            }
            Op::File => {
                // A third of reads hit shared headers, the rest the job's own sources.
                let id = if self.rng.below(3) == 0 {
                    self.files_first + self.rng.below(u64::from(self.headers.max(1))) as u32
                } else {
                    let job = &mut self.jobs[j];
                    let id = job.next_file;
                    if job.next_file + 1 < job.files_end {
                        job.next_file += 1;
                    }
                    id
                };
                let _ = mm.read_file(node, cpu, id, GFP_FILE);
            }
            Op::Pipe => {
                if let Ok(pfn) = node.alloc_pages(cpu, 0, GFP_PIPE) {
                    let life = self.rng.range(10, 1000);
                    self.short(pfn, 0, life);
                }
            }
            Op::PageTable => {
                if let Ok(pfn) = node.alloc_pages(cpu, 0, GFP_PGTABLE) {
                    self.jobs[j].page_tables.push(pfn);
                }
            }
            Op::Slab => {
                let order = [0, 0, 0, 0, 0, 0, 1, 2, 3][self.rng.below(9) as usize];
                if let Some(id) = mm.alloc_slab(node, cpu, order, GFP_SLAB) {
                    self.slab.push(id);
                }
                if !self.slab.is_empty() {
                    let k = self.rng.below(self.slab.len() as u64) as usize;
                    mm.touch_slab(node, self.slab[k]);
                }
            }
            Op::Atomic => self.atomic(node, cpu, stats, (10, 500)),
            Op::Touch => {
                let job = &self.jobs[j];
                if !job.anon.is_empty() {
                    let id = job.anon[self.rng.below(job.anon.len() as u64) as usize];
                    if mm.touch_anon(node, cpu, id) == Touch::Miss {
                        stats.swapin_failures += 1;
                    }
                }
            }
            Op::Leak => {
                if self.leak.len() < self.leak_cap {
                    if let Ok(pfn) = node.alloc_pages(cpu, 0, Gfp::KERNEL) {
                        self.leak.push(pfn);
                    }
                }
            }
        }
        true
    }
}
