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
//! sixteen times a build, one fault per operation while the build runs on, holds it a while
//! and unmaps it. Most of the page cache it creates is written, so dirty until the flusher
//! writes it back ([`KBUILD_PAGE_STATES`]). Runs follow each other on the same node, as the
//! seed's 15 consecutive builds did.
//!
//! Under `transparent_hugepage/enabled=always` the build's own anonymous memory faults in
//! huge pages too, with the mask `defrag` gives a range that is not madvised
//! (`GFP_TRANSHUGE_LIGHT`: no reclaim and no compaction; under `lab thp`'s default
//! `defer+madvise` a fault that falls back wakes kswapd and kcompactd, under the kernel's
//! default `madvise` it wakes nothing, so only blocks the daemons made free on their own
//! serve it). A job's huge pages are order-9
//! movable folios that order-9 compaction does not move. The share of anonymous memory in
//! huge pages, [`THP_ANON_PER_MILLE`], is the trace's: 934 order-9 movable allocations
//! (772 of them `GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE`, a madvised fault's first
//! attempt) against 347,723 anonymous base pages — 58% of anonymous memory. A huge page
//! fault that falls back maps one base page; the job faults the rest of its range in base
//! pages. A job touches as many pages, as many operations long, under either setting: only
//! the faults differ. Seed 004 counts ~68.6k huge page faults per build (46.7k served, 21.9k fallbacks)
//! with only ~204 compaction stalls and ~2.4k allocation stalls: most of its faults could
//! neither compact nor reclaim, which is `always`, not madvised bursts alone — hence
//! `always` is the lab's default. Its vanilla kcompactd scans ~8.4M pfns a build; under
//! `defrag=madvise` little but proactive compaction and boosted kswapd runs would ask kcompactd
//! for work, under `defer+madvise` every build fault that falls back does — hence
//! `defer+madvise` is the lab's default defrag setting (docs/pressure-fidelity.md compares
//! the two).
//!
//! Simulated time: a run lasts as long as the seed's build ([`KBUILD_REAL_TIME_US`], "Kbuild
//! Real time 197.47" s), spread evenly over the operations a run is sized for — about 62 µs
//! an operation on the 2 GiB node (3.2 M operations), 400 µs on the quick one. The model's
//! build is smaller than the real one (its allocator calls are sized by the node, not by the
//! roughly 57 M events a build keeping 6.3 CPUs busy — 1240 s user time in 197 s — makes at
//! the trace's busiest CPU's 46,000 events a second), so one operation stands for
//! several real allocator events: at the trace's 13.7 µs a node-wide event
//! ([`crate::sim::OP_INTERVAL_US`]), 62 µs is ~4.5 events.

use std::collections::VecDeque;

use pageblock_core::thp::{ThpDefrag, ThpEnabled};
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

/// Under `enabled=always`, the share of a job's anonymous memory (per mille of its pages)
/// that faults in huge pages: the trace's 934 huge pages against 347,723 base pages.
pub const THP_ANON_PER_MILLE: u64 = 579;

/// One anonymous fault in this many is a huge page fault, so that [`THP_ANON_PER_MILLE`] of
/// the pages come in huge pages (of 512 base pages each).
const THP_FAULT_ODDS: u64 = (512_000 - 511 * THP_ANON_PER_MILLE) / THP_ANON_PER_MILLE;

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

/// Compile jobs per build by default (on the quick node, fewer).
pub const fn default_jobs(quick: bool) -> usize {
    if quick {
        60
    } else {
        100
    }
}

/// THP bursts per build.
const BURSTS_PER_RUN: u64 = 16;

/// Seed 004's kernel build wall time, vanilla ("Kbuild Real time 197.47"), in microseconds.
pub const KBUILD_REAL_TIME_US: u64 = 197_470_000;

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
    /// Anonymous pages it faulted in (a huge page counts all its base pages).
    pages: usize,
    /// Anonymous pages it touched: the job's clock, the same under every THP setting (a
    /// touch inside a huge page mapped before faults nothing).
    touched: usize,
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
    thp: ThpEnabled,
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
    /// Huge page faults of the current burst still to come, one per operation.
    burst_pending: u64,
    burst_release: u64,
    burst_every: u64,
    op: u64,
    /// Simulated time of one operation of this run.
    op_ns: u64,
}

impl KbuildThp {
    /// A build sized for a node of `managed` pages, with THP `thp` and `defrag`.
    pub fn new(
        mm: &Mm,
        managed: u64,
        hpage_order: u32,
        (thp, defrag): (ThpEnabled, ThpDefrag),
        jobs_per_run: usize,
        seed: u64,
    ) -> KbuildThp {
        // Half again as much source as memory: the page cache never holds it all.
        let nr_files = (managed * 3 / 2) as u32;
        let files_first = mm.add_files(nr_files);
        mm.set_page_states(KBUILD_PAGE_STATES, managed);
        KbuildThp {
            rng: Prng::new(seed),
            managed,
            hpage_order,
            thp,
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
            burst_pending: 0,
            burst_release: 0,
            burst_every: 0,
            op: 0,
            op_ns: crate::sim::OP_INTERVAL_US * 1000,
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

    /// The burst process: it starts a burst every `burst_every` operations, faults its huge
    /// pages one per operation (daemons and the build run between them), and unmaps them
    /// half a period after the start.
    fn burst(&mut self, mm: &Mm, node: &Node, cpu: usize, stats: &mut RunStats) {
        if self.burst_pending > 0 {
            self.burst_pending -= 1;
            let before = super::work_units(node);
            let fault = mm.fault_thp(node, cpu, self.defrag, true);
            stats.hugealloc_work.push(super::work_units(node) - before);
            if let Some((id, _)) = fault {
                self.burst.push(id);
            }
            return;
        }
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
        self.burst_pending = (self.managed / 10) >> self.hpage_order;
        self.burst_release = self.op + self.burst_every / 2;
        self.burst(mm, node, cpu, stats);
    }

    /// Job `j` touches a new anonymous page. Inside a huge page it mapped before, that
    /// faults nothing; otherwise, under `enabled=always`, one fault in [`THP_FAULT_ODDS`] is
    /// a huge page fault (when the job still needs a whole huge page), and a fallback maps
    /// one base page.
    fn touch_new_anon(&mut self, mm: &Mm, node: &Node, cpu: usize, j: usize) {
        let huge_pages = 1usize << self.hpage_order;
        let job = &mut self.jobs[j];
        job.touched += 1;
        if job.touched <= job.pages {
            return;
        }
        let room = job.target.saturating_sub(job.pages) >= huge_pages;
        let huge = self.thp.huge(false) && room && self.rng.below(THP_FAULT_ODDS) == 0;
        let fault = if huge {
            mm.fault_thp(node, cpu, self.defrag, false)
        } else {
            mm.fault_anon(node, cpu).map(|id| (id, 0))
        };
        if let Some((id, order)) = fault {
            let job = &mut self.jobs[j];
            job.anon.push(id);
            job.pages += 1 << order;
        }
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
        // A build's length in operations: every job's anonymous pages (a job's target
        // averages three times the smallest), at the mix's share of anonymous touches.
        let lo = (self.managed / 100).max(16);
        let ops = self.jobs_per_run as u64 * 3 * lo * 1000 / MIX[0].1 as u64;
        self.burst_every = (ops / BURSTS_PER_RUN).max(1);
        self.op_ns = (KBUILD_REAL_TIME_US * 1000 / ops.max(1)).max(1);
    }

    fn op_interval_ns(&self) -> u64 {
        self.op_ns
    }

    fn step(&mut self, mm: &Mm, node: &Node, stats: &mut RunStats) -> bool {
        self.op += 1;
        let cpu = (self.op % node.shared().nr_cpus() as u64) as usize;
        self.expire(node, cpu);
        self.burst(mm, node, cpu, stats);
        self.packet_storm(node, cpu, stats);
        while self.jobs.len() < self.parallel && self.jobs_started < self.jobs_per_run {
            self.start_job();
        }
        if self.jobs.is_empty() {
            // The build is over: release what its neighbours still hold.
            self.burst_pending = 0;
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
                self.touch_new_anon(mm, node, cpu, j);
                if self.jobs[j].touched >= self.jobs[j].target {
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

#[cfg(test)]
mod tests {
    use pageblock_core::{KernelPeriod, NodeConfig, Policy, VmEvent};

    use super::*;
    use crate::thp::{run_policy, ThpLabConfig, ThpWorkloadKind};

    /// A 128 MiB machine and a build on it with `thp` (defrag `madvise`).
    fn build(thp: ThpEnabled) -> (Node, Mm, KbuildThp) {
        let mut node = Node::new(NodeConfig::x86_64(128 << 20, 4), Policy::default()).unwrap();
        let mm = Mm::attach(&mut node);
        let managed = node.shared().managed_pages();
        let hpage = node.shared().pageblock_order();
        let mut wl = KbuildThp::new(&mm, managed, hpage, (thp, ThpDefrag::Madvise), default_jobs(true), 1);
        wl.start_run();
        (node, mm, wl)
    }

    /// Regression: the operation's time was whole microseconds, so a build denser than one
    /// operation every 2 µs (`--jobs` in the thousands) was cut to 1 µs an operation and
    /// lasted ~112 s of simulated time instead of 197 s.
    #[test]
    fn a_dense_build_still_lasts_the_seeds_real_time() {
        let mut node = Node::new(NodeConfig::x86_64(2 << 30, 4), Policy::default()).unwrap();
        let mm = Mm::attach(&mut node);
        let managed = node.shared().managed_pages();
        let hpage = node.shared().pageblock_order();
        let mut wl = KbuildThp::new(&mm, managed, hpage, (ThpEnabled::Always, ThpDefrag::Madvise), 3300, 1);
        wl.start_run();
        let lo = managed / 100;
        let ops = 3300 * 3 * lo * 1000 / MIX[0].1 as u64;
        let lasts_us = wl.op_interval_ns() * ops / 1000;
        assert!(lasts_us.abs_diff(KBUILD_REAL_TIME_US) < KBUILD_REAL_TIME_US / 100, "{lasts_us} µs");
    }

    fn thp_faults(node: &Node) -> u64 {
        node.shared().event(VmEvent::ThpFaultAlloc) + node.shared().event(VmEvent::ThpFaultFallback)
    }

    /// Item 3: a burst's huge page faults come one per operation, with the build's
    /// operations (and the daemons' time) between them, not all inside one operation.
    #[test]
    fn a_burst_faults_one_huge_page_per_operation() {
        let (node, mm, mut wl) = build(ThpEnabled::Madvise);
        let mut stats = RunStats::default();
        let per_burst = (wl.managed / 10) >> wl.hpage_order;
        assert!(per_burst > 1);
        let mut steps_with_faults = Vec::new();
        while steps_with_faults.len() < per_burst as usize {
            let before = thp_faults(&node);
            assert!(wl.step(&mm, &node, &mut stats), "the build ended before its first burst");
            let made = thp_faults(&node) - before;
            assert!(made <= 1, "{made} huge page faults in one operation");
            if made == 1 {
                steps_with_faults.push(wl.op);
            }
        }
        let span = steps_with_faults.last().unwrap() - steps_with_faults[0] + 1;
        assert_eq!(span, per_burst, "one per operation, back to back: {steps_with_faults:?}");
        assert_eq!(stats.hugealloc_work.len() as u64, per_burst);
    }

    /// T3: under `enabled=always` the build's own anonymous memory faults in huge pages
    /// (`GFP_TRANSHUGE_LIGHT`) besides the bursts; under `madvise` only the bursts do.
    #[test]
    fn enabled_always_faults_the_builds_own_memory_in_huge_pages() {
        let mut beyond_bursts = Vec::new();
        for thp in ThpEnabled::ALL {
            let (mut node, mm, mut wl) = build(thp);
            let mut stats = RunStats::default();
            // The clock moves as in a lab run: the flusher cleans page cache only with time.
            let mut now_ns = 0;
            while {
                now_ns += wl.op_interval_ns();
                node.advance_to(now_ns / 1000);
                wl.step(&mm, &node, &mut stats)
            } {}
            beyond_bursts.push(thp_faults(&node) - stats.hugealloc_work.len() as u64);
            node.verify().unwrap();
        }
        let [always, madvise] = [beyond_bursts[0], beyond_bursts[1]];
        assert_eq!(madvise, 0);
        assert!(always > 10, "the build faulted {always} huge pages of its own");
    }

    /// One quick vanilla kbuild-thp run with these THP settings, in this kernel period.
    fn quick_vanilla_run(thp: ThpEnabled, defrag: ThpDefrag, kernel: KernelPeriod) -> crate::thp::PolicyRuns {
        quick_vanilla_build(thp, defrag, kernel, None)
    }

    /// The same with `jobs` compile jobs.
    fn quick_vanilla_build(
        thp: ThpEnabled,
        defrag: ThpDefrag,
        kernel: KernelPeriod,
        jobs: Option<usize>,
    ) -> crate::thp::PolicyRuns {
        let policy = pageblock_core::named_policy::policy_named("vanilla").expect("a named policy");
        let cfg = ThpLabConfig {
            workload: ThpWorkloadKind::KbuildThp,
            policies: vec![policy.clone()],
            runs: 1,
            quick: true,
            seed: 1,
            thp,
            defrag,
            kernel,
            jobs,
        };
        run_policy(&cfg, &policy, &mut |_| {}).unwrap()
    }

    /// A quick build lasts as long as seed 004's real one, and the report counts kcompactd's
    /// wake-ups.
    #[test]
    fn a_build_lasts_the_seeds_real_time() {
        let runs = quick_vanilla_run(ThpEnabled::Madvise, ThpDefrag::Madvise, KernelPeriod::Seed004);
        let real = KBUILD_REAL_TIME_US as f64 / 1e6;
        let sim = runs.runs[0].sim_seconds;
        assert!((sim - real).abs() < real * 0.05, "{sim} simulated seconds for a {real} s build");
        let report = crate::thp::ThpReport {
            workload: "kbuild-thp",
            node_mib: 512,
            thp: "madvise",
            defrag: "madvise",
            kernel: "seed-004",
            policies: vec![runs],
        };
        let wakes = report.policies[0].runs[0].get(pageblock_core::VmEvent::CompactDaemonWake);
        assert!(wakes > 0, "kcompactd is woken during a build");
        let text = report.render();
        assert!(text.contains("    Compact daemon wake      "), "{text}");
        assert!(text.contains("    Simulated run time (s)   "), "{text}");
    }

    /// `--jobs`: twice the compile jobs fit in the same simulated build time, denser; the
    /// build faults about twice its own huge pages (the bursts' faults do not change).
    #[test]
    fn more_jobs_make_a_denser_build_of_the_same_length() {
        let build = |jobs| {
            let runs = quick_vanilla_build(
                ThpEnabled::Always,
                ThpDefrag::DeferMadvise,
                KernelPeriod::Linux6_18,
                jobs,
            );
            let r = &runs.runs[0];
            (r.sim_seconds, r.ops, r.get(VmEvent::ThpFaultAlloc) + r.get(VmEvent::ThpFaultFallback))
        };
        let (t1, ops1, faults1) = build(None);
        let (t2, ops2, faults2) = build(Some(2 * default_jobs(true)));
        let real = KBUILD_REAL_TIME_US as f64 / 1e6;
        for t in [t1, t2] {
            assert!((t - real).abs() < real * 0.1, "{t} simulated seconds for a {real} s build");
        }
        assert!(ops2 > ops1 * 17 / 10, "{ops1} against {ops2} operations");
        assert!(faults2 > faults1 * 5 / 4, "{faults1} against {faults2} huge page faults (the bursts' stay)");
    }
}
