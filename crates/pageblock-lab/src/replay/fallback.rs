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
//! A fault is the trace's first attempt and, if the traced kernel failed it with a mask that
//! may reclaim (under a THP what-if, the recorded mask: the trace then holds a retry), its
//! retry (the same order without `__GFP_THISNODE`): the next retry on that
//! CPU, whatever else the CPU allocated in between, or on another CPU if none waits on its
//! own (the task moved while it compacted). It counts as served when the simulation served
//! either, as a fallback otherwise; the traced kernel's fallbacks are counted the same way,
//! and come within a few percent of its own `thp_fault_fallback` (the retries that never
//! pair are the rest). Where the kernel failed a first attempt
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

/// Huge page faults that fell back (`thp_fault_fallback`), by whether the fault's mask may
/// reclaim directly, in the simulation and in the traced kernel counted the same way (a
/// fault whose traced attempts all failed). The traced kernel's two add up to its
/// `thp_fault_fallback` (the failed `mm_page_alloc` lines at the pageblock order, one per
/// fault).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThpFallbacks {
    /// Faults that may reclaim (`GFP_TRANSHUGE`: a madvised range under `defrag=madvise`):
    /// the first attempt and the retry failed.
    pub may_reclaim: u64,
    /// Faults that may not (`GFP_TRANSHUGE_LIGHT`): their one attempt failed.
    pub light: u64,
    /// The traced kernel's faults that may reclaim and fell back.
    pub real_may_reclaim: u64,
    /// The traced kernel's light faults that fell back.
    pub real_light: u64,
}

/// A huge page fault in progress: whether the simulation and the traced kernel served it so
/// far, and whether its mask may reclaim (then a retry may follow).
#[derive(Clone, Copy, Debug)]
struct Fault {
    served: bool,
    kernel_served: bool,
    may_reclaim: bool,
}

/// One attempt of a huge page fault as [`ThpFaults::request`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct FaultAttempt {
    /// Who made it.
    pub caller: Caller,
    /// Its mask (the replay's, under a THP what-if): whether the fault may reclaim.
    pub gfp: Gfp,
    /// The traced attempt's mask: whether the trace holds a retry after a failed first
    /// attempt.
    pub traced_gfp: Gfp,
    /// The simulation served it (with its fallbacks).
    pub served: bool,
    /// The traced kernel served it.
    pub kernel_served: bool,
}

/// The huge page faults in progress, per CPU, and their outcome counted on the node.
#[derive(Debug)]
pub struct ThpFaults {
    /// Per CPU: a fault whose retry may follow.
    open: Vec<Option<Fault>>,
    /// The faults that fell back so far, both sides.
    pub fallbacks: ThpFallbacks,
}

impl ThpFaults {
    /// No fault in progress on any of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> ThpFaults {
        ThpFaults { open: vec![None; nr_cpus], fallbacks: ThpFallbacks::default() }
    }

    /// An attempt on `cpu`. A fault whose first attempt the traced kernel failed with a mask
    /// that may reclaim (so the trace holds its retry) waits for that retry, the next huge page retry on that CPU, whatever
    /// else the CPU allocates in between (an interrupt, another task while the faulting one
    /// compacts), or on another CPU if none waits on its own (the task moved); any other
    /// fault ends with its first attempt. A first attempt ends a fault still waiting there
    /// (its retry never came).
    pub fn request(&mut self, node: &Node, cpu: usize, a: FaultAttempt) {
        if cpu >= self.open.len() {
            return;
        }
        let this = Fault { served: a.served, kernel_served: a.kernel_served, may_reclaim: true };
        match a.caller {
            // Its own CPU's waiting fault, else one waiting elsewhere (the task moved while
            // it compacted).
            Caller::ThpRetry => {
                match self.open[cpu].take().or_else(|| self.open.iter_mut().find_map(Option::take)) {
                    // The retry of the fault in progress: one fault, served if either was.
                    Some(first) => self.end(
                        node,
                        Fault {
                            served: first.served || a.served,
                            kernel_served: first.kernel_served || a.kernel_served,
                            ..first
                        },
                    ),
                    None => self.end(node, this),
                }
            }
            Caller::ThpFirst => {
                let slot = &mut self.open[cpu];
                let before = slot.take();
                let fault = Fault { may_reclaim: Caller::thp_retry(a.gfp).is_some(), ..this };
                if !fault.kernel_served && Caller::thp_retry(a.traced_gfp).is_some() {
                    *slot = Some(fault);
                } else {
                    self.end(node, fault);
                }
                if let Some(b) = before {
                    self.end(node, b);
                }
            }
            Caller::LargeFolio | Caller::Other => {}
        }
    }

    /// Whether the simulation served the fault in progress on `cpu` so far (false without
    /// one).
    pub fn served_so_far(&self, cpu: usize) -> bool {
        self.open.get(cpu).copied().flatten().is_some_and(|f| f.served)
    }

    /// The end of the trace: every fault in progress ends.
    pub fn finish(&mut self, node: &Node) {
        for cpu in 0..self.open.len() {
            if let Some(f) = self.open[cpu].take() {
                self.end(node, f);
            }
        }
    }

    /// Count one fault's outcome: `thp_fault_alloc` or `thp_fault_fallback` on the node,
    /// and the fallbacks by kind on both sides.
    fn end(&mut self, node: &Node, f: Fault) {
        let ev = if f.served { VmEvent::ThpFaultAlloc } else { VmEvent::ThpFaultFallback };
        node.shared().count(ev, 1);
        let fb = &mut self.fallbacks;
        let (sim, real) = if f.may_reclaim {
            (&mut fb.may_reclaim, &mut fb.real_may_reclaim)
        } else {
            (&mut fb.light, &mut fb.real_light)
        };
        *sim += u64::from(!f.served);
        *real += u64::from(!f.kernel_served);
    }
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

    /// Regression: a fault ended at the next request on its CPU, so a madvised fault whose
    /// retry came after an interrupt's request, or on the other CPU, counted twice (on A's
    /// run 1 the traced kernel's side came to 334 fallbacks against its 177). A fault the
    /// kernel failed at first now waits for its retry across other requests and CPUs; a
    /// light fault, or one the kernel served at once, ends with its first attempt; each side
    /// counts its fallbacks by kind.
    #[test]
    fn a_fault_waits_for_its_retry_across_other_requests_and_cpus() {
        use pageblock_core::{NodeConfig, Policy, ZoneConfig};
        let zone = ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(16 << 20) };
        let node = Node::new(NodeConfig::single(zone), Policy::default()).unwrap();
        let mut faults = ThpFaults::new(2);
        let at = |caller, gfp, served, kernel_served| FaultAttempt {
            caller,
            gfp,
            traced_gfp: gfp,
            served,
            kernel_served,
        };
        // The kernel failed the first attempt and served the retry, an interrupt's request
        // between them; the simulation served neither.
        faults.request(&node, 0, at(Caller::ThpFirst, FIRST, false, false));
        faults.request(&node, 0, at(Caller::Other, Gfp::ATOMIC, true, true));
        faults.request(&node, 0, at(Caller::ThpRetry, Gfp::TRANSHUGE, false, true));
        // The retry on the other CPU: the kernel failed both, the simulation served it.
        faults.request(&node, 0, at(Caller::ThpFirst, FIRST, false, false));
        faults.request(&node, 1, at(Caller::ThpRetry, Gfp::TRANSHUGE, true, false));
        // A light fault failed on both sides; a madvised one the kernel served at once and
        // the simulation did not.
        faults.request(&node, 1, at(Caller::ThpFirst, LIGHT_FIRST, false, false));
        faults.request(&node, 1, at(Caller::ThpFirst, FIRST, false, true));
        // Under a what-if whose mask makes it a light fault, a madvised first attempt the
        // kernel failed still waits for the trace's retry (not made: it has no retry now),
        // and the two are one light fault.
        let light = FaultAttempt {
            caller: Caller::ThpFirst,
            gfp: LIGHT_FIRST,
            traced_gfp: FIRST,
            served: false,
            kernel_served: false,
        };
        faults.request(&node, 0, light);
        let dropped = FaultAttempt {
            caller: Caller::ThpRetry,
            gfp: Gfp::TRANSHUGE,
            traced_gfp: Gfp::TRANSHUGE,
            served: false,
            kernel_served: false,
        };
        faults.request(&node, 0, dropped);
        faults.finish(&node);
        let count = |ev| node.shared().event(ev);
        assert_eq!((count(VmEvent::ThpFaultAlloc), count(VmEvent::ThpFaultFallback)), (1, 4), "five faults");
        assert_eq!(
            faults.fallbacks,
            ThpFallbacks { may_reclaim: 2, light: 2, real_may_reclaim: 1, real_light: 2 }
        );
    }

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
