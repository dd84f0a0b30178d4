//! kswapd and its hand-off to kcompactd (`wakeup_kswapd`, `pgdat_balanced`,
//! `balance_pgdat`, `kswapd_shrink_node`, `kswapd_try_to_sleep`).
//!
//! An allocation that finds a zone below its low watermark wakes kswapd, which reclaims
//! until some usable zone is above its high watermark at the wanted order ("balanced"). A
//! watermark boost (after a fragmenting fallback) makes kswapd reclaim the boost without
//! swapping, pay the boost back, and wake kcompactd for a pageblock. When kswapd is done it
//! wakes kcompactd for the order it was woken for. Under `defrag_mode` "balanced" counts only
//! free memory in whole free pageblocks (`NR_FREE_PAGES_BLOCKS`) — in 6.18 only while kswapd
//! works for an order above 0; the kernel seed 004 measured did so at every order
//! ([`crate::policy::KernelPeriod`]).
//!
//! kswapd's loop (`kswapd()`, `kswapd_try_to_sleep`, `prepare_kswapd_sleep`): after a
//! `balance_pgdat` run that left the node unbalanced, kswapd runs again at once (it stays
//! woken), until the node is balanced or [`MAX_RECLAIM_RETRIES`] runs in a row reclaimed
//! nothing (then it is hopeless until a direct reclaim frees something). A balanced kswapd
//! first naps [`KSWAPD_NAP_US`]; if the node is unbalanced again when the nap ends, the
//! sleep was premature and kswapd runs again ([`kswapd_nap_over`]).
//!
//! The daemons are not threads here: a driver runs them ([`kswapd_run`], then
//! [`crate::compaction::kcompactd_pass`]) when they are due — the simulator
//! [`KSWAPD_WAKE_DELAY_US`] after the wake-up, so that allocations race with kswapd as they
//! do on a busy machine. A call does one priority pass of a `balance_pgdat` run
//! ([`BalanceRun`]) and keeps kswapd busy for [`kswapd_run_time_us`] of what it scanned;
//! the next pass is due when that time has passed. The real kswapd checks the node's
//! balance before each pass while the workload frees and allocates beside it: a run taken
//! whole, with the workload stopped, went on down to priority 1 while a burst's pages were
//! young from their faults, and swapped them out just before the workload would have
//! unmapped them (on B5, 1.9 M pages swapped against the kernel's 55 k).

use super::{count_reclaim, ScanControl, DEF_PRIORITY, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use crate::compaction::compact_gap;
use crate::config::{ZoneType, MAX_NR_ZONES};
use crate::gfp::{AllocFlags, Gfp};
use crate::locks::{lock_zone, NodeLocks};
use crate::node::NodeShared;
use crate::policy::{KernelPeriod, PageblockSwitch, Policy};
use crate::stats::{VmEvent, ZoneStat};
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};
use crate::zone::ZoneShared;

use crate::scan_control::{scan_time_us, BalanceRun, ReclaimStat};

/// Simulated time from a wake-up to the daemon's run: the scheduling latency and the time a
/// kswapd running beside the allocators takes to get going. A modelling choice, not a kernel
/// constant.
pub const KSWAPD_WAKE_DELAY_US: u64 = 1000;

/// `HZ/10`: the nap a balanced kswapd takes before it goes fully to sleep, in microseconds.
pub const KSWAPD_NAP_US: u64 = 100_000;

/// The least simulated time a `balance_pgdat` pass takes (one `SWAP_CLUSTER_MAX` batch), so
/// that passes which scan nothing still take time and cannot repeat within one instant.
pub const KSWAPD_RUN_MIN_US: u64 = scan_time_us(SWAP_CLUSTER_MAX, SWAP_CLUSTER_MAX);

/// How long a `balance_pgdat` pass that scanned `scanned` pages in `folios` folios and
/// slept `throttled_us` in `reclaim_throttle` keeps kswapd busy.
pub fn kswapd_run_time_us(scanned: u64, folios: u64, throttled_us: u64) -> u64 {
    scan_time_us(scanned, folios).saturating_add(throttled_us).max(KSWAPD_RUN_MIN_US)
}

/// What kswapd does after a `balance_pgdat` run (`kswapd_try_to_sleep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KswapdNext {
    /// The run did not happen (kswapd was not woken).
    Idle,
    /// The run goes on with its next priority pass, or it ended with the node still
    /// unbalanced and kswapd not hopeless: kswapd stays woken and runs again once this step's
    /// time has passed.
    Rerun,
    /// Balanced or hopeless: kcompactd was handed the order; kswapd naps [`KSWAPD_NAP_US`],
    /// then the driver calls [`kswapd_nap_over`] with this order and zone.
    Nap {
        /// The order balance was judged at.
        order: u32,
        /// The highest zone balanced.
        idx: ZoneType,
    },
}

/// One kswapd step: the pages it scanned and the time it slept throttled (what its time is
/// charged on), and what comes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KswapdRun {
    /// Pages scanned by the step's priority pass.
    pub scanned: u64,
    /// The folios those pages were in.
    pub folios: u64,
    /// Microseconds the pass slept in `reclaim_throttle`, waiting for swap writes.
    pub throttled_us: u64,
    /// The highest zone the run balanced (`None`: no run). `balance_pgdat` holds
    /// `ZONE_RECLAIM_ACTIVE` on it and every zone below for as long as it runs.
    pub highest_zoneidx: Option<ZoneType>,
    /// What kswapd does next.
    pub next: KswapdNext,
}

/// Does some zone up to `idx` with managed pages pass its high watermark at `order`,
/// counting `free(zone)` as its free memory? `None` if there is no such zone.
fn some_zone_above_high(
    node: &NodeShared,
    order: u32,
    idx: ZoneType,
    free: impl Fn(&ZoneShared) -> u64,
) -> Option<bool> {
    let mut zones =
        node.zones().iter().filter(|z| z.config().zone_type <= idx && z.managed_pages() > 0).peekable();
    zones.peek()?;
    let req = WatermarkRequest { order, flags: AllocFlags::WMARK_MIN, highest_zoneidx: idx };
    Some(zones.any(|z| z.zone_watermark_ok_with(req, z.wmark_pages(WatermarkLevel::High), free(z))))
}

/// Does `pgdat_balanced()` count only whole free pageblocks at `order`? Under `defrag_mode`:
/// in 6.18 only above order 0 ("mm: vmscan: fix kswapd exit condition in defrag_mode"), so
/// a kswapd that dropped to order 0 is balanced on free pages; in the kernel seed 004
/// measured, at every order.
fn counts_whole_blocks(policy: &Policy, order: u32) -> bool {
    policy.sysctls.defrag_mode()
        && match policy.kernel {
            KernelPeriod::Linux6_18 => order > 0,
            KernelPeriod::Seed004 => true,
        }
}

/// `pgdat_balanced()`: some zone up to `idx` passes its high watermark at `order` (counting
/// only whole free pageblocks where `counts_whole_blocks` says so; with
/// [`PageblockSwitch::KswapdBalanceNodeBlocks`] then the zones' whole free pageblocks together
/// against their high marks together). A node without such zones is balanced.
pub fn pgdat_balanced(node: &NodeShared, order: u32, idx: ZoneType) -> bool {
    let blocks = counts_whole_blocks(node.policy(), order);
    if blocks && node.policy().pageblock_switch(PageblockSwitch::KswapdBalanceNodeBlocks) {
        return node_blocks_balanced(node, idx);
    }
    some_zone_above_high(node, order, idx, |z| {
        if blocks {
            z.counters().zone_stat(ZoneStat::NrFreePagesBlocks)
        } else {
            z.nr_free_pages()
        }
    })
    .unwrap_or(true)
}

/// The node's whole free pageblocks in zones up to `idx` exceed those zones' high watermarks
/// summed (a node without such zones is balanced).
fn node_blocks_balanced(node: &NodeShared, idx: ZoneType) -> bool {
    let zones = node.zones().iter().filter(|z| z.config().zone_type <= idx && z.managed_pages() > 0);
    let (free_blocks, high) = zones.fold((0, 0), |(f, h), z| {
        (f + z.counters().zone_stat(ZoneStat::NrFreePagesBlocks), h + z.wmark_pages(WatermarkLevel::High))
    });
    free_blocks >= high
}

/// Some zone up to `idx` has its free pages (whole blocks or not) above the high watermark.
fn free_pages_balanced(node: &NodeShared, idx: ZoneType) -> bool {
    some_zone_above_high(node, 0, idx, ZoneShared::nr_free_pages).unwrap_or(false)
}

/// `pgdat_watermark_boosted()`.
fn pgdat_watermark_boosted(node: &NodeShared, idx: ZoneType) -> bool {
    node.zones().iter().any(|z| z.config().zone_type <= idx && z.counters().watermark_boost() > 0)
}

/// `wakeup_kswapd()`: ask kswapd to balance the node for `order` up to `idx`. Not woken if
/// the node is balanced already (then a request that cannot compact itself wakes
/// kcompactd), or kswapd has failed too often. The driver then starts what is pending
/// ([`NodeLocks::wake_daemons`]).
pub fn wakeup_kswapd<L: NodeLocks + ?Sized>(l: &L, gfp: Gfp, order: u32, idx: ZoneType) {
    record_kswapd_wakeup(l.node(), gfp, order, idx);
    l.wake_daemons();
}

/// [`wakeup_kswapd`]'s bookkeeping in the node's daemon state.
fn record_kswapd_wakeup(node: &NodeShared, gfp: Gfp, order: u32, idx: ZoneType) {
    let mut d = node.daemons();
    d.kswapd_highest_zoneidx = Some(d.kswapd_highest_zoneidx.map_or(idx, |cur| cur.max(idx)));
    d.kswapd_order = d.kswapd_order.max(order);
    if d.kswapd_woken {
        return;
    }
    if d.kswapd_failures >= MAX_RECLAIM_RETRIES
        || (pgdat_balanced(node, order, idx) && !pgdat_watermark_boosted(node, idx))
    {
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            crate::compaction::wakeup_kcompactd(node, &mut d, order, idx);
        }
        return;
    }
    d.kswapd_woken = true;
}

/// kswapd's work for one step: one priority pass of its `balance_pgdat` run (begun with
/// the order and zone asked since the last run, if none is in progress). A pass that leaves
/// the run going returns [`KswapdNext::Rerun`] and kswapd stays woken. At the run's end: if
/// the node is balanced or kswapd hopeless
/// (`prepare_kswapd_sleep`), clear the compaction skip hints a direct compaction asked to
/// flush, hand the order to kcompactd and nap; otherwise stay woken to run again. Balance is
/// judged at the order the run dropped to if it dropped, else — as kswapd re-reads its order
/// before it tries to sleep — at the order asked of it since the run began. Runs on CPU `cpu`.
pub fn kswapd_run<L: NodeLocks + ?Sized>(l: &L, cpu: usize) -> KswapdRun {
    let node = l.node();
    let mut run = {
        let mut d = node.daemons();
        if !d.kswapd_woken {
            return KswapdRun {
                scanned: 0,
                folios: 0,
                throttled_us: 0,
                highest_zoneidx: None,
                next: KswapdNext::Idle,
            };
        }
        d.kswapd_woken = false;
        match d.kswapd_balancing.take() {
            Some(run) => *run,
            None => {
                let top = node.zones().last().map_or(ZoneType::Normal, |z| z.config().zone_type);
                let idx = d.kswapd_highest_zoneidx.take().unwrap_or(top);
                let order = std::mem::take(&mut d.kswapd_order);
                drop(d);
                balance_start(node, order, idx)
            }
        }
    };
    let order = run.order;
    let (scanned, folios, throttled) = (run.sc.nr_scanned, run.sc.nr_folios_scanned, run.sc.throttled_us);
    let step = balance_step(l, cpu, &mut run);
    let scanned = run.sc.nr_scanned - scanned;
    let folios = run.sc.nr_folios_scanned - folios;
    let throttled_us = run.sc.throttled_us - throttled;
    let idx = run.idx;
    let ran = |next| KswapdRun { scanned, folios, throttled_us, highest_zoneidx: Some(idx), next };
    if let Step::Pass = step {
        let mut d = node.daemons();
        d.kswapd_balancing = Some(Box::new(run));
        d.kswapd_woken = true;
        return ran(KswapdNext::Rerun);
    }
    let reclaim_order = balance_finish(l, cpu, &run);
    let mut d = node.daemons();
    let (alloc_order, check_order) =
        if reclaim_order < order { (order, reclaim_order) } else { (d.kswapd_order, d.kswapd_order) };
    let hopeless = d.kswapd_failures >= MAX_RECLAIM_RETRIES;
    if !hopeless && !pgdat_balanced(node, check_order, idx) {
        d.kswapd_woken = true;
        d.kswapd_highest_zoneidx.get_or_insert(idx);
        return ran(KswapdNext::Rerun);
    }
    if !hopeless {
        // `clear_pgdat_congested`.
        d.pgdat_writeback = false;
    }
    drop(d);
    for z in 0..node.zones().len() {
        let mut zone = lock_zone(l, z, cpu);
        if zone.compact.blockskip_flush {
            zone.reset_isolation_suitable();
        }
    }
    crate::compaction::wakeup_kcompactd(node, &mut node.daemons(), alloc_order, idx);
    ran(KswapdNext::Nap { order: check_order, idx })
}

/// The end of kswapd's nap (`kswapd_try_to_sleep` after `HZ/10`): unless a wake-up came
/// meanwhile, kswapd goes fully to sleep only if the node is still balanced at `order` (or
/// kswapd is hopeless); otherwise the sleep was premature and kswapd is woken to run again.
pub fn kswapd_nap_over(node: &NodeShared, order: u32, idx: ZoneType) {
    let mut d = node.daemons();
    if d.kswapd_woken || d.kswapd_failures >= MAX_RECLAIM_RETRIES || pgdat_balanced(node, order, idx) {
        return;
    }
    d.kswapd_woken = true;
    d.kswapd_highest_zoneidx.get_or_insert(idx);
}

/// What one [`balance_step`] did.
enum Step {
    /// One priority pass; the run goes on.
    Pass,
    /// The run is over.
    Done,
}

/// `balance_pgdat()`'s start: count the run, note the boosts, flag the zones under reclaim.
fn balance_start(node: &NodeShared, order: u32, idx: ZoneType) -> BalanceRun {
    node.count(VmEvent::Pageoutrun, 1);
    let in_scope: Vec<usize> = (0..node.zones().len())
        .filter(|&z| node.zone(z).config().zone_type <= idx && node.zone(z).managed_pages() > 0)
        .collect();
    let mut zone_boosts = [0u64; MAX_NR_ZONES];
    for &z in &in_scope {
        zone_boosts[z] = node.zone(z).counters().watermark_boost();
    }
    let nr_boost: u64 = zone_boosts.iter().sum();
    let reclaim_idx = in_scope.last().copied().unwrap_or(0);
    for &z in &in_scope {
        node.zone(z).flags().set_reclaim_active(true);
    }
    BalanceRun {
        order,
        idx,
        in_scope,
        zone_boosts,
        nr_boost,
        start: 0,
        sc: ScanControl::new(0, order, reclaim_idx, true),
    }
}

/// One pass of `balance_pgdat()`'s loop: stop if the node is balanced at the run's order
/// (a boosted run: once the boost is reclaimed; a real shortage found meanwhile turns it
/// into a normal run from the lightest priority); else one `kswapd_shrink_node` pass, and
/// raise the priority if it scanned too little or reclaimed nothing. A run that went through
/// every priority without reclaiming, some pass failing in cache-trim mode, starts over
/// from the lightest priority with that mode off (6.18's `no_cache_trim_mode` restart).
fn balance_step<L: NodeLocks + ?Sized>(l: &L, cpu: usize, run: &mut BalanceRun) -> Step {
    let node = l.node();
    let sc = &mut run.sc;
    let balanced = pgdat_balanced(node, sc.order, run.idx);
    if !balanced && run.nr_boost > 0 {
        run.nr_boost = 0;
        sc.priority = DEF_PRIORITY;
        run.start = sc.nr_reclaimed;
    }
    if run.nr_boost == 0 && balanced {
        return Step::Done;
    }
    // Boosted reclaim stays light: no swap, no priority rise past 10. pageblock's policy
    // does not swap for whole blocks once free pages are balanced.
    sc.may_swap = run.nr_boost == 0
        && !(node.policy().pageblock_switch(PageblockSwitch::BlocksWithoutSwap)
            && free_pages_balanced(node, run.idx));
    let mut raise_priority = !(run.nr_boost > 0 && sc.priority <= DEF_PRIORITY - 2);
    let before = sc.nr_reclaimed;
    if kswapd_shrink_node(l, cpu, sc, &run.in_scope) {
        raise_priority = false;
    }
    let reclaimed = sc.nr_reclaimed - before;
    // The pass's scanning and reclaim show in the counters as it happens.
    count_reclaim(node, sc);
    sc.stat = ReclaimStat::default();
    run.nr_boost -= run.nr_boost.min(reclaimed);
    let out_of_priorities = (raise_priority || reclaimed == 0) && sc.priority <= 1;
    if (run.nr_boost > 0 && reclaimed == 0) || out_of_priorities {
        if sc.nr_reclaimed == run.start {
            // Every priority went by and cache-trim mode failed: start over without it
            // (anonymous memory may give what page cache would not), once.
            if out_of_priorities && sc.cache_trim_mode_failed && !sc.no_cache_trim_mode {
                sc.no_cache_trim_mode = true;
                sc.priority = DEF_PRIORITY;
                return Step::Pass;
            }
            node.daemons().kswapd_failures += 1;
        }
        return Step::Done;
    }
    if raise_priority || reclaimed == 0 {
        sc.priority -= 1;
    }
    Step::Pass
}

/// `balance_pgdat()`'s end: count the run's reclaim, clear the zones' flags, pay the boost
/// back (and wake kcompactd for a pageblock). Returns the order balance was finally judged at.
fn balance_finish<L: NodeLocks + ?Sized>(l: &L, cpu: usize, run: &BalanceRun) -> u32 {
    let node = l.node();
    if run.sc.nr_reclaimed > 0 {
        node.daemons().kswapd_failures = 0;
    }
    for &z in &run.in_scope {
        node.zone(z).flags().set_reclaim_active(false);
    }
    l.snapshot_refaults();
    if run.boosted() {
        for &z in &run.in_scope {
            let mut zone = lock_zone(l, z, cpu);
            zone.pay_back_boost(run.zone_boosts[z]);
        }
        let mut d = node.daemons();
        crate::compaction::wakeup_kcompactd(node, &mut d, node.pageblock_order(), run.idx);
    }
    run.sc.order
}

/// `kswapd_shrink_node()`: one pass at the current priority for the high watermarks of the
/// zones in scope. Once the `balance_pgdat` run has reclaimed `compact_gap(order)` pages over
/// all its passes (`sc.nr_reclaimed`, as in every kernel since node-based reclaim, the one
/// seed 004 measured included), balance is judged at order 0: kcompactd is expected to make
/// the high-order block. Returns whether it scanned enough (no need to raise the priority).
fn kswapd_shrink_node<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    sc: &mut ScanControl,
    zones: &[usize],
) -> bool {
    let node = l.node();
    sc.nr_to_reclaim =
        zones.iter().map(|&z| node.zone(z).wmark_pages(WatermarkLevel::High).max(SWAP_CLUSTER_MAX)).sum();
    let scanned_before = sc.nr_scanned;
    super::reclaim_compaction::shrink_node(l, cpu, sc);
    if sc.order > 0 && sc.nr_reclaimed >= compact_gap(sc.order) {
        sc.order = 0;
    }
    sc.nr_scanned - scanned_before >= sc.nr_to_reclaim
}
