//! `__alloc_pages_slowpath()` in 6.18's order, as explicit steps over a state record.
//!
//! 1. Slow-path flags (`gfp_to_alloc_flags`: min watermark, reserves for `__GFP_HIGH` and
//!    atomic callers, ALLOC_NOFRAGMENT only under `defrag_mode`); wake kswapd; retry.
//! 2. Costly or non-movable high-order requests that may reclaim try async compaction
//!    first; a costly `__GFP_NORETRY` request (THP) gives up if compaction was skipped or
//!    deferred, or if it may use this node only (`__GFP_THISNODE`: the first, compact-only
//!    attempt of a huge page fault, [`crate::thp`]).
//! 3. The retry loop: wake kswapd; `__GFP_MEMALLOC` callers may ignore watermarks; retry;
//!    callers that cannot reclaim stop here; direct reclaim (on progress: retry, then
//!    release a HighAtomic block and drain every CPU's lists, retry once more); direct
//!    compaction.
//! 4. The exits, in this order: `__GFP_NORETRY`; costly orders without
//!    `__GFP_RETRY_MAYFAIL`; then `should_reclaim_retry` (which, once it gives up, releases
//!    one HighAtomic reserve block per pass until none is left); `should_compact_retry`;
//!    `defrag_mode` dropping ALLOC_NOFRAGMENT — only now may a request fragment a foreign
//!    pageblock; the OOM killer.
//!
//! Reclaim and compaction are shared code over the driver's primitives ([`crate::NodeLocks`]):
//! compaction runs when the driver has a [`crate::mover::Mover`]; direct reclaim
//! ([`crate::vmscan`]) scans the driver's LRU lists and shrinkers — a driver without them reclaims nothing, and the steps
//! take the kernel's "no progress" branches. There is no OOM killer: a request
//! that would invoke it is counted (`pgalloc_oom`) and fails. `__GFP_NOFAIL` gets the
//! kernel's last `ALLOC_MIN_RESERVE` attempt, then fails instead of looping forever.

use crate::compaction::{compaction_zonelist_suitable, try_to_compact_pages, CompactPriority, CompactResult};
use crate::fastpath::get_page_from_freelist;
use crate::free_pages::drain_all_pages;
use crate::gfp::{self, AllocFlags, Gfp};
use crate::locks::{lock_zone, NodeLocks};
use crate::migratetype::MigrateType;
use crate::node::AllocContext;
use crate::policy::DefragModeFix;
use crate::stats::VmEvent;
use crate::types::{Pfn, PAGE_ALLOC_COSTLY_ORDER};
use crate::vmscan::kswapd::wakeup_kswapd;
use crate::vmscan::try_to_free_pages;
use crate::zone::watermark::WatermarkLevel;

/// `MAX_RECLAIM_RETRIES`: passes without reclaim progress before `should_reclaim_retry`
/// gives up.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// `MAX_COMPACT_RETRIES`.
pub const MAX_COMPACT_RETRIES: u32 = 16;
/// A bound on retry passes. Every retry reason but reclaim progress is bounded far below
/// it; a request that keeps reclaiming without ever being served (the kernel would loop on)
/// fails here instead.
const MAX_PASSES: u32 = 1_000_000;

/// The slow path's state across retries.
struct SlowPath {
    can_direct_reclaim: bool,
    can_compact: bool,
    costly_order: bool,
    flags: AllocFlags,
    no_progress_loops: u32,
    compaction_retries: u32,
    compact_priority: CompactPriority,
    compact_result: CompactResult,
    did_some_progress: u64,
}

/// Run the slow path for `ac` on CPU `cpu`.
#[cold]
pub(crate) fn alloc_pages_slowpath<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
) -> Option<Pfn> {
    let node = l.node();
    let gfp = ac.gfp;
    // No zone for this request: nothing to wait for.
    node.preferred_zone(ac)?;
    let mut st = SlowPath {
        can_direct_reclaim: gfp.contains(Gfp::DIRECT_RECLAIM),
        can_compact: gfp.contains(Gfp::IO),
        costly_order: ac.order > PAGE_ALLOC_COSTLY_ORDER,
        flags: gfp::gfp_to_alloc_flags(gfp, ac.order, ac.migratetype, node.nofragment_rule(ac)),
        no_progress_loops: 0,
        compaction_retries: 0,
        compact_priority: CompactPriority::DEFAULT,
        compact_result: CompactResult::Skipped,
        did_some_progress: 0,
    };
    if st.flags.contains(AllocFlags::KSWAPD) {
        wake_all_kswapds(l, ac);
    }
    if let Some(pfn) = get_page_from_freelist(l, cpu, ac, st.flags) {
        return Some(pfn);
    }
    match compact_first(l, cpu, ac, &mut st) {
        Step::Got(pfn) => return Some(pfn),
        Step::NoPage => return nopage(l, cpu, ac, &st),
        Step::Retry => {}
    }
    for _ in 0..MAX_PASSES {
        match retry_pass(l, cpu, ac, &mut st) {
            Step::Got(pfn) => return Some(pfn),
            Step::NoPage => return nopage(l, cpu, ac, &st),
            Step::Retry => {}
        }
    }
    nopage(l, cpu, ac, &st)
}

/// The outcome of a step.
enum Step {
    Got(Pfn),
    Retry,
    NoPage,
}

/// Step 2: async compaction before reclaim for costly or non-movable high-order requests.
fn compact_first<L: NodeLocks + ?Sized>(l: &L, cpu: usize, ac: &AllocContext, st: &mut SlowPath) -> Step {
    let order = ac.order;
    let worth_it = order > PAGE_ALLOC_COSTLY_ORDER || (order > 0 && ac.migratetype != MigrateType::Movable);
    if !(st.can_direct_reclaim && st.can_compact && worth_it && !gfp_pfmemalloc_allowed(ac.gfp)) {
        return Step::Retry;
    }
    if let Some(pfn) = direct_compact(l, cpu, ac, st, CompactPriority::INIT) {
        return Step::Got(pfn);
    }
    if st.costly_order && ac.gfp.contains(Gfp::NORETRY) {
        if matches!(st.compact_result, CompactResult::Skipped | CompactResult::Deferred) {
            return Step::NoPage;
        }
        // A huge page fault's first attempt may compact but not reclaim (`alloc_pages_mpol`).
        if ac.gfp.contains(Gfp::THISNODE) {
            return Step::NoPage;
        }
        // Keep to async compaction for the rest of this request.
        st.compact_priority = CompactPriority::INIT;
    }
    Step::Retry
}

/// Step 3 and 4: one pass of the retry loop.
fn retry_pass<L: NodeLocks + ?Sized>(l: &L, cpu: usize, ac: &AllocContext, st: &mut SlowPath) -> Step {
    let node = l.node();
    if st.flags.contains(AllocFlags::KSWAPD) {
        wake_all_kswapds(l, ac);
    }
    if let Some(reserve) = gfp_pfmemalloc_flags(ac.gfp) {
        st.flags = reserve | (st.flags & AllocFlags::KSWAPD);
        if ac.migratetype == MigrateType::Movable {
            st.flags |= AllocFlags::CMA;
        }
    }
    if let Some(pfn) = get_page_from_freelist(l, cpu, ac, st.flags) {
        return Step::Got(pfn);
    }
    if !st.can_direct_reclaim {
        return atomic_fallback(l, ac, st);
    }
    if let Some(pfn) = direct_reclaim(l, cpu, ac, st) {
        return Step::Got(pfn);
    }
    if let Some(pfn) = direct_compact(l, cpu, ac, st, st.compact_priority) {
        return Step::Got(pfn);
    }
    if ac.gfp.contains(Gfp::NORETRY) {
        return Step::NoPage;
    }
    if st.costly_order && (!st.can_compact || !ac.gfp.contains(Gfp::RETRY_MAYFAIL)) {
        return Step::NoPage;
    }
    if should_reclaim_retry(l, cpu, ac, st) {
        return Step::Retry;
    }
    if st.did_some_progress > 0 && st.can_compact && should_compact_retry(l, ac, st) {
        return Step::Retry;
    }
    if node.policy().sysctls.defrag_mode() && st.flags.contains(AllocFlags::NOFRAGMENT) {
        st.flags = st.flags & !AllocFlags::NOFRAGMENT;
        node.count(VmEvent::NoFragmentRelaxed, 1);
        return Step::Retry;
    }
    if let Some(pfn) = may_oom(l, cpu, ac, st) {
        return Step::Got(pfn);
    }
    if st.did_some_progress > 0 {
        st.no_progress_loops = 0;
        return Step::Retry;
    }
    Step::NoPage
}

/// A request that cannot reclaim has nothing left to try. Under `defrag_mode` as merged it
/// fails here with ALLOC_NOFRAGMENT still set, even when free memory sits in other
/// migratetypes' pageblocks. The 2026 fix lets a request that may wake kswapd
/// (`__GFP_KSWAPD_RECLAIM`: GFP_ATOMIC, GFP_NOWAIT) drop it and go round the retry loop once
/// more; one that may not even wake kswapd (`GFP_TRANSHUGE_LIGHT`) still fails.
fn atomic_fallback(l: &(impl NodeLocks + ?Sized), ac: &AllocContext, st: &mut SlowPath) -> Step {
    let policy = l.node().policy();
    if policy.defrag_mode_fix(DefragModeFix::AtomicFallback)
        && st.flags.contains(AllocFlags::NOFRAGMENT)
        && ac.gfp.contains(Gfp::KSWAPD_RECLAIM)
    {
        st.flags = st.flags & !AllocFlags::NOFRAGMENT;
        l.node().count(VmEvent::NoFragmentRelaxed, 1);
        return Step::Retry;
    }
    Step::NoPage
}

/// The order a request must really be served at: under `defrag_mode`, a request that may
/// not fragment and is not movable needs a whole free pageblock to claim (its own type's
/// lists are empty, or it would not be here). With the 2026 fix direct reclaim and direct
/// compaction work for that order (`reclaim_order`, `compact_order`); the request is still
/// served, and captured, at its own order.
fn promoted_order(node: &crate::node::NodeShared, ac: &AllocContext, flags: AllocFlags) -> u32 {
    if node.policy().defrag_mode_fix(DefragModeFix::PageblockCompaction)
        && flags.contains(AllocFlags::NOFRAGMENT)
        && ac.migratetype != MigrateType::Movable
    {
        ac.order.max(node.pageblock_order())
    } else {
        ac.order
    }
}

/// `nopage:` — `__GFP_NOFAIL` requests that may reclaim get one attempt with half the min
/// reserve (the kernel would then loop until memory appears; nothing here would free any).
fn nopage<L: NodeLocks + ?Sized>(l: &L, cpu: usize, ac: &AllocContext, st: &SlowPath) -> Option<Pfn> {
    if ac.gfp.contains(Gfp::NOFAIL) && st.can_direct_reclaim {
        let flags = AllocFlags::MIN_RESERVE | (st.flags & AllocFlags::KSWAPD);
        return get_page_from_freelist(l, cpu, ac, flags);
    }
    None
}

/// `__gfp_pfmemalloc_flags()`: `__GFP_MEMALLOC` callers may ignore the watermarks (task
/// context — PF_MEMALLOC, OOM victims — is not modelled).
fn gfp_pfmemalloc_flags(gfp: Gfp) -> Option<AllocFlags> {
    (gfp.contains(Gfp::MEMALLOC) && !gfp.contains(Gfp::NOMEMALLOC)).then_some(AllocFlags::NO_WATERMARKS)
}

fn gfp_pfmemalloc_allowed(gfp: Gfp) -> bool {
    gfp_pfmemalloc_flags(gfp).is_some()
}

/// `wake_all_kswapds()`: the node's kswapd, for the request's order (at least a pageblock
/// under `defrag_mode`, which wants kswapd to produce whole free blocks).
fn wake_all_kswapds<L: NodeLocks + ?Sized>(l: &L, ac: &AllocContext) {
    let node = l.node();
    if node.preferred_zone(ac).is_none() {
        return;
    }
    let order =
        if node.policy().sysctls.defrag_mode() { ac.order.max(node.pageblock_order()) } else { ac.order };
    wakeup_kswapd(l, ac.gfp, order, ac.highest_zoneidx);
}

/// `__alloc_pages_direct_reclaim()`: reclaim (for a whole pageblock, with the 2026 fix, when
/// the request needs one: [`promoted_order`]), and if that made progress but the retry still
/// fails, release a HighAtomic block (unforced) and drain every CPU's lists, then retry once.
fn direct_reclaim<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    st: &mut SlowPath,
) -> Option<Pfn> {
    let node = l.node();
    node.count_allocstall(ac.highest_zoneidx);
    let reclaim_order = promoted_order(node, ac, st.flags);
    st.did_some_progress = try_to_free_pages(l, cpu, &AllocContext { order: reclaim_order, ..*ac });
    if st.did_some_progress == 0 {
        return None;
    }
    if let Some(pfn) = get_page_from_freelist(l, cpu, ac, st.flags) {
        return Some(pfn);
    }
    unreserve_highatomic_pageblock(l, cpu, ac, false);
    drain_all_pages(l, None);
    get_page_from_freelist(l, cpu, ac, st.flags)
}

/// `__alloc_pages_direct_compact()`: nothing for order 0; a skipped compaction is not a
/// stall; otherwise count the stall, take a captured page or retry the freelists. With the
/// 2026 fix compaction works for a whole pageblock when the request needs one
/// ([`promoted_order`]), while the capture still waits for a block of the requested order.
fn direct_compact<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    st: &mut SlowPath,
    priority: CompactPriority,
) -> Option<Pfn> {
    let node = l.node();
    let compact_order = promoted_order(node, ac, st.flags);
    if compact_order == 0 {
        return None;
    }
    let (result, captured) = try_to_compact_pages(l, cpu, ac, compact_order, st.flags, priority);
    st.compact_result = result;
    if result == CompactResult::Skipped {
        return None;
    }
    node.count(VmEvent::CompactStall, 1);
    let page = captured.or_else(|| get_page_from_freelist(l, cpu, ac, st.flags));
    match page {
        Some(pfn) => {
            crate::compaction::compaction_allocated(l, cpu, pfn, compact_order);
            node.count(VmEvent::CompactSuccess, 1);
        }
        None => node.count(VmEvent::CompactFail, 1),
    }
    page
}

/// `should_reclaim_retry()`: keep going while some zone would pass the min watermark if
/// everything reclaimable were reclaimed, for at most [`MAX_RECLAIM_RETRIES`] passes
/// without progress. Giving up releases one HighAtomic block (forced), which buys another
/// pass: the whole reserve goes before the request fails.
fn should_reclaim_retry<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    st: &mut SlowPath,
) -> bool {
    let node = l.node();
    let order = ac.order;
    // Costly requests may progress without getting any closer: they always count a loop.
    if st.did_some_progress > 0 && order <= PAGE_ALLOC_COSTLY_ORDER {
        st.no_progress_loops = 0;
    } else {
        st.no_progress_loops += 1;
    }
    if st.no_progress_loops <= MAX_RECLAIM_RETRIES {
        for &z in node.zonelist(ac) {
            let zone = node.zone(z as usize);
            let available = l.zone_reclaimable_pages(z as usize) + zone.nr_free_pages();
            let min = zone.wmark_pages(WatermarkLevel::Min);
            let req = crate::zone::watermark::WatermarkRequest { order, ..ac.watermark_request(st.flags) };
            if zone.zone_watermark_ok_with(req, min, available) {
                return true;
            }
        }
    }
    // Before OOM, exhaust the highatomic reserve.
    unreserve_highatomic_pageblock(l, cpu, ac, true)
}

/// `should_compact_retry()`: retry compaction while it keeps reporting success (bounded),
/// then at a harder priority until the hardest allowed one.
fn should_compact_retry<L: NodeLocks + ?Sized>(l: &L, ac: &AllocContext, st: &mut SlowPath) -> bool {
    let order = ac.order;
    if order == 0 {
        return false;
    }
    if st.compact_result == CompactResult::Skipped {
        return compaction_zonelist_suitable(l, &AllocContext { order, ..*ac });
    }
    let costly = order > PAGE_ALLOC_COSTLY_ORDER;
    if st.compact_result == CompactResult::Success {
        let max_retries = if costly { MAX_COMPACT_RETRIES / 4 } else { MAX_COMPACT_RETRIES };
        st.compaction_retries += 1;
        if st.compaction_retries <= max_retries {
            return true;
        }
    }
    let min_priority = if costly { CompactPriority::SyncLight } else { CompactPriority::SyncFull };
    match st.compact_priority.harder() {
        Some(p) if st.compact_priority > min_priority => {
            st.compact_priority = p;
            st.compaction_retries = 0;
            true
        }
        _ => false,
    }
}

/// `__alloc_pages_may_oom()`: a last try at the high watermark without reclaim; then the OOM
/// killer, which is not modelled — requests that would invoke it are counted and fail.
fn may_oom<L: NodeLocks + ?Sized>(l: &L, cpu: usize, ac: &AllocContext, st: &mut SlowPath) -> Option<Pfn> {
    let node = l.node();
    st.did_some_progress = 0;
    let flags = AllocFlags::WMARK_HIGH | AllocFlags::CPUSET;
    if let Some(pfn) = get_page_from_freelist(l, cpu, ac, flags) {
        return Some(pfn);
    }
    let no_oom = st.costly_order
        || ac.gfp.intersects(Gfp::RETRY_MAYFAIL | Gfp::THISNODE)
        || ac.highest_zoneidx < crate::config::ZoneType::Normal;
    if !no_oom {
        node.count(VmEvent::PgAllocOom, 1);
    }
    None
}

/// `unreserve_highatomic_pageblock()` over the request's zonelist: give one reserved
/// pageblock back to the request's type. Unless `force`, each zone keeps one.
pub(crate) fn unreserve_highatomic_pageblock<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    force: bool,
) -> bool {
    let node = l.node();
    let pb = 1u64 << node.pageblock_order();
    for &z in node.zonelist(ac) {
        let reserved = node.zone(z as usize).counters().nr_reserved_highatomic();
        if reserved == 0 || (!force && reserved <= pb) {
            continue;
        }
        if lock_zone(l, z as usize, cpu).unreserve_highatomic_pageblock(ac.migratetype, force) {
            return true;
        }
    }
    false
}
