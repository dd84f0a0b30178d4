//! What the replay tests share: a builder of synthetic traces.
#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;

use pageblock_formats::ftrace::{Timestamp, TraceLine};
use pageblock_formats::gfp::Gfp;
use pageblock_formats::kmem::{KmemEvent, MmPageAlloc, MmPageFree, MmPageFreeBatched};

/// A trace builder: kmem lines on the given CPUs, one microsecond apart, made by the task
/// `comm` (`test` unless [`Trace::by`] says otherwise).
#[derive(Default)]
pub struct Trace {
    pub lines: Vec<String>,
    comm: Option<&'static str>,
}

impl Trace {
    pub fn push(&mut self, cpu: u32, ev: KmemEvent) -> &mut Self {
        let t = Timestamp::from_micros(1_000_000 + self.lines.len() as u64);
        let comm = self.comm.unwrap_or("test");
        self.lines.push(TraceLine::from_kmem(comm, 7, cpu, Some("....."), t, &ev).render());
        self
    }

    /// Any event line (`name: payload`) by task `comm` on CPU 0, a microsecond after the
    /// last line (for events the kmem builders do not make).
    pub fn event(&mut self, comm: &str, event: &str) -> &mut Self {
        self.event_on(0, comm, event)
    }

    /// Any event line by task `comm` on CPU `cpu`, a microsecond after the last line.
    pub fn event_on(&mut self, cpu: u32, comm: &str, event: &str) -> &mut Self {
        let us = 1_000_000 + self.lines.len() as u64;
        self.lines.push(format!(
            "{comm:>16}       [{cpu:03}] ..... {:>5}.{:06}: {event}",
            us / 1_000_000,
            us % 1_000_000
        ));
        self
    }

    /// The following lines are made by task `comm`.
    pub fn by(&mut self, comm: &'static str) -> &mut Self {
        self.comm = Some(comm);
        self
    }

    pub fn alloc(&mut self, cpu: u32, pfn: Option<u64>, order: u32, gfp: Gfp) -> &mut Self {
        let mt = if gfp.contains(Gfp::MOVABLE) { 1 } else { 0 };
        self.push(cpu, KmemEvent::PageAlloc(MmPageAlloc::new(pfn, order, mt, gfp)))
    }

    pub fn free(&mut self, cpu: u32, pfn: u64, order: u32) -> &mut Self {
        self.push(cpu, KmemEvent::PageFree(MmPageFree::new(pfn, order)))
    }

    /// A batched free: `mm_page_free` with the folio's order, then `mm_page_free_batched`.
    pub fn free_batched(&mut self, cpu: u32, pfn: u64, order: u32) -> &mut Self {
        self.free(cpu, pfn, order).push(cpu, KmemEvent::PageFreeBatched(MmPageFreeBatched::new(pfn)))
    }

    pub fn write(&self, name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pageblock-replay-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.txt");
        std::fs::write(&path, self.lines.join("\n") + "\n").unwrap();
        path
    }
}

/// Anonymous base pages at every other pfn of the first 0x1800: 3,072 pages that a machine
/// squeezed by a balloon must reclaim to hold.
pub fn anon_every_other_pfn() -> Trace {
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    for pfn in (0..0x1800u64).step_by(2) {
        t.alloc(0, Some(pfn), 0, anon);
    }
    t
}

/// The pages a balloon could take, read from the refusal of one too big (`... had N pages
/// to give ...`).
pub fn pages_to_give(refusal: &str) -> u64 {
    refusal.split("had ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap()
}

/// The most pages a balloon can take from the machine `vanilla` replays the trace at `path`
/// on (asked for far more, the replay refuses and says).
pub fn most_a_balloon_takes(path: &std::path::Path) -> u64 {
    let policies = [pageblock_core::named_policy::policy_named("vanilla").unwrap()];
    let too_much = pageblock_lab::replay::Options { balloon_pages: 1 << 30, ..Default::default() };
    pages_to_give(&pageblock_lab::replay::run(path, &policies, too_much, &mut |_| {}).unwrap_err())
}
