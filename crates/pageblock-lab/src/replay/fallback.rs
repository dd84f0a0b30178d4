//! What a request's caller does when the allocator refuses it, for the requests the traced
//! kernel served and the simulation did not; and the huge page faults, counted as the
//! kernel counts them (`thp_fault_alloc`, `thp_fault_fallback`).
//!
//! The trace shows only what the kernel's allocator did. Where the simulation refuses a
//! request the kernel served, the caller would have gone on, and the replay goes on as it:
//!
//! * **A huge page fault** (an anonymous request of the pageblock order): the first attempt
//!   is made on the local node without reclaim (`__GFP_THISNODE|__GFP_NORETRY`, as
//!   `alloc_pages_mpol` does for a huge page); if the fault may reclaim (`GFP_TRANSHUGE`: a
//!   `madvise`d area under `defrag=madvise`, or `defrag=always`), it retries with neither
//!   flag; if that fails too, the fault falls back to base pages (`do_anonymous_page`:
//!   `GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP`, one per page of the huge page; the workload
//!   touches them all).
//! * **A large folio of anonymous memory or page cache** asked for with `__GFP_NORETRY`
//!   (an mTHP fault, readahead's `page_cache_ra_order`): the caller falls back to base pages
//!   of the same mask (readahead's `do_page_cache_ra`: order-0 folios, still compound).
//!
//!   Base pages are taken until the first the simulation refuses too: readahead stops there,
//!   a fault fails. The request then counts as failed (and a simulation out of memory pays
//!   one failed request per traced one, not one per base page).
//! * Anything else (slab, kernel memory, a request that may not fail quietly) fails: the
//!   report counts it.
//! * Once a request of the replay reached the OOM killer (`pgalloc_oom`), no fallback is
//!   made any more: the kernel would have killed a task and got its memory back, which a
//!   replay cannot do, so the simulation has left the kernel's path for good, and each
//!   fallback would fail after a full round of reclaim. The report counts these.
//!
//! A fault is the trace's first attempt and, when the next request on that CPU is its retry
//! (the same order without `__GFP_THISNODE`), the retry too; it counts as served when the
//! simulation served either, as a fallback otherwise. Where the kernel failed a first attempt
//! the simulation served, the simulation's page is given back at once as for any request the
//! kernel failed (the trace goes on with the kernel's retry or base pages), but the fault
//! counts as served: the count is what the policy would have given the workload.

use pageblock_core::{Gfp, Node, VmEvent};
use serde::Serialize;

use super::closed_loop::MemoryUser;

/// Who made a request, as far as its fallback goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A huge page fault's first attempt (local node, no reclaim).
    ThpFirst,
    /// A huge page fault's retry (any node; reclaim if the mask allows).
    ThpRetry,
    /// A large folio with a base-page fallback.
    LargeFolio,
    /// No fallback.
    Other,
}

impl Caller {
    /// The caller of a request of `order` with `gfp`, on a machine of pageblock order `pbo`.
    pub fn of(order: u32, gfp: Gfp, pbo: u32) -> Caller {
        let user = MemoryUser::of(gfp);
        if order == pbo && user == MemoryUser::Anon {
            if gfp.contains(Gfp::THISNODE) {
                Caller::ThpFirst
            } else {
                Caller::ThpRetry
            }
        } else if order > 0
            && gfp.contains(Gfp::NORETRY)
            && matches!(user, MemoryUser::Anon | MemoryUser::File)
        {
            Caller::LargeFolio
        } else {
            Caller::Other
        }
    }

    /// The mask of the retry a huge page fault makes after its first attempt failed, if it
    /// makes one (only a fault that may reclaim).
    pub fn thp_retry(gfp: Gfp) -> Option<Gfp> {
        gfp.contains(Gfp::DIRECT_RECLAIM).then(|| gfp & !(Gfp::THISNODE | Gfp::NORETRY))
    }

    /// The mask of the base pages the caller falls back to (`None`: no fallback). Folios
    /// are compound at every order (`folio_alloc` and `vma_alloc_folio` add `__GFP_COMP`),
    /// so the base pages carry it as the kernel's do.
    pub fn base_pages(self, gfp: Gfp) -> Option<Gfp> {
        match self {
            Caller::ThpFirst | Caller::ThpRetry => Some(Gfp::HIGHUSER_MOVABLE | Gfp::ZERO | Gfp::COMP),
            Caller::LargeFolio => Some(gfp),
            Caller::Other => None,
        }
    }
}

/// Requests the kernel served that the simulation refused at first, by what came of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Fallbacks {
    /// Huge page faults whose retry the simulation made and served.
    pub thp_retries_served: u64,
    /// Requests made up with base pages instead.
    pub base_page_requests: u64,
    /// The base pages those took.
    pub base_pages: u64,
    /// Of those requests, the ones whose base pages the simulation refused too, before the
    /// last (the caller stops there; the request counts as failed).
    pub base_pages_refused: u64,
    /// Requests not made up because the replay had reached the OOM killer before them
    /// (they count as failed).
    pub after_oom: u64,
}

/// The huge page faults in progress, per CPU, and their outcome counted on the node.
#[derive(Debug)]
pub struct ThpFaults {
    /// Per CPU: a fault whose retry may follow, and whether the simulation served it yet.
    open: Vec<Option<bool>>,
}

impl ThpFaults {
    /// No fault in progress on any of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> ThpFaults {
        ThpFaults { open: vec![None; nr_cpus] }
    }

    /// A request by `caller` on `cpu` the simulation `served` (with its fallbacks): ends the
    /// fault in progress there unless this is its retry, and starts or continues one.
    pub fn request(&mut self, node: &Node, cpu: usize, caller: Caller, served: bool) {
        let Some(slot) = self.open.get_mut(cpu) else { return };
        match (caller, slot.take()) {
            (Caller::ThpRetry, Some(before)) => {
                // The retry of the fault in progress: one fault, served if either was.
                end(node, before || served);
            }
            (Caller::ThpFirst, before) => {
                if let Some(b) = before {
                    end(node, b);
                }
                *slot = Some(served);
            }
            (Caller::ThpRetry, None) => end(node, served),
            (_, before) => {
                if let Some(b) = before {
                    end(node, b);
                }
            }
        }
    }

    /// Whether the simulation served the fault in progress on `cpu` so far (false without
    /// one).
    pub fn served_so_far(&self, cpu: usize) -> bool {
        self.open.get(cpu).copied().flatten().unwrap_or(false)
    }

    /// The end of the trace: every fault in progress ends.
    pub fn finish(&mut self, node: &Node) {
        for b in self.open.iter_mut().filter_map(Option::take) {
            end(node, b);
        }
    }
}

/// Count one fault's outcome.
fn end(node: &Node, served: bool) {
    let ev = if served { VmEvent::ThpFaultAlloc } else { VmEvent::ThpFaultFallback };
    node.shared().count(ev, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Gfp = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    const LIGHT_FIRST: Gfp = Gfp(Gfp::TRANSHUGE_LIGHT.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    /// Readahead's large folio mask, as the recordings show it.
    const READAHEAD: Gfp = Gfp(Gfp::NOFS.0
        | Gfp::HIGHMEM.0
        | Gfp::MOVABLE.0
        | Gfp::NOWARN.0
        | Gfp::NORETRY.0
        | Gfp::COMP.0
        | Gfp::HARDWALL.0);

    #[test]
    fn callers_are_told_by_order_and_mask() {
        assert_eq!(Caller::of(9, FIRST, 9), Caller::ThpFirst);
        assert_eq!(Caller::of(9, LIGHT_FIRST, 9), Caller::ThpFirst);
        assert_eq!(Caller::of(9, Gfp::TRANSHUGE, 9), Caller::ThpRetry);
        assert_eq!(Caller::of(9, READAHEAD, 9), Caller::LargeFolio, "page cache, not a fault");
        assert_eq!(Caller::of(4, READAHEAD, 9), Caller::LargeFolio);
        assert_eq!(Caller::of(0, READAHEAD, 9), Caller::Other, "a base page has nothing smaller");
        assert_eq!(Caller::of(3, Gfp::KERNEL | Gfp::NORETRY | Gfp::COMP, 9), Caller::Other, "slab");
    }

    #[test]
    fn only_a_fault_that_may_reclaim_retries_and_fallbacks_are_compound_base_pages() {
        assert_eq!(Caller::thp_retry(FIRST), Some(Gfp::TRANSHUGE));
        assert_eq!(Caller::thp_retry(LIGHT_FIRST), None);
        // As the recordings show the kernel's anonymous faults and readahead's base pages.
        assert_eq!(Caller::ThpFirst.base_pages(FIRST), Some(Gfp::HIGHUSER_MOVABLE | Gfp::ZERO | Gfp::COMP));
        assert_eq!(Caller::LargeFolio.base_pages(READAHEAD), Some(READAHEAD));
        assert_eq!(Caller::Other.base_pages(Gfp::KERNEL), None);
    }
}
