//! kcompactd (`wakeup_kcompactd`, `kcompactd_node_suitable`, `kcompactd_do_work`, the loop of
//! `kcompactd()`) and proactive compaction (`should_proactive_compact_node`,
//! `fragmentation_score_node`).
//!
//! kswapd hands kcompactd the order it reclaimed for; kcompactd compacts each zone that
//! compaction can help, at `MIGRATE_SYNC_LIGHT`, until a block of that order exists — under
//! `defrag_mode` until whole free pageblocks reach the high watermark.
//!
//! The loop ([`kcompactd_pass`]): kcompactd waits for a wake-up with a timeout of
//! [`PROACTIVE_INTERVAL_US`] (500 ms). When the wait ends with work requested
//! (`kcompactd_max_order > 0`: woken, or asked while it ran or while the node was unsuitable)
//! it does that work and waits the default timeout again — so a kcompactd woken more often
//! than every 500 ms never compacts proactively. Only a wait that timed out with nothing
//! requested compacts proactively, and only while the node's fragmentation score is above its
//! threshold and kswapd is not running; if that run did not lower the score, the next timeout
//! is `500 ms << COMPACT_MAX_DEFER_SHIFT` (32 s). With `compaction_proactiveness` 0 there is
//! no timeout. The driver (the simulator's clock, or the library's thread) keeps the wait.

use super::compact_zone::{compact_zone, CompactControl};
use super::suitable::{compaction_suit_allocation_order, fragmentation_score_zone, SuitQuery};
use super::{CompactResult, MigrateMode};
use crate::config::ZoneType;
use crate::free_pages::drain_all_pages;
use crate::gfp::AllocFlags;
use crate::locks::{lock_zone, NodeLocks};
use crate::node::{Daemons, NodeShared};
use crate::stats::VmEvent;
use crate::zone::defer::COMPACT_MAX_DEFER_SHIFT;

/// `HPAGE_FRAG_CHECK_INTERVAL_MSEC`: kcompactd's wait timeout (`default_timeout`), in
/// microseconds.
pub const PROACTIVE_INTERVAL_US: u64 = 500_000;

/// Simulated time one pfn kcompactd's scanners visit costs, in nanoseconds, measured on this
/// project's 6.18 VM: kcompactd0's CPU time (`/proc/PID/stat` utime + stime) over
/// `compact_daemon_migrate_scanned + compact_daemon_free_scanned` in the four kernel builds
/// under pressure where kcompactd worked, 0.25 s for 2.67 M pfns pooled (per run 47–122 ns;
/// the clock ticks 10 ms). A pfn is cheap because the scanners step over whole compound and
/// free pages and count every pfn they cover.
pub const KCOMPACTD_SCAN_NS_PER_PFN: u64 = 93;

/// The least simulated time a kcompactd pass that compacted takes (one `COMPACT_CLUSTER_MAX`
/// batch), so that passes which scan nothing still take time.
pub const KCOMPACTD_PASS_MIN_US: u64 = scan_time_us(32);

/// The simulated time, in whole microseconds (rounded up), kcompactd takes to scan `pfns`.
const fn scan_time_us(pfns: u64) -> u64 {
    pfns.saturating_mul(KCOMPACTD_SCAN_NS_PER_PFN).div_ceil(1000)
}

/// What a turn of kcompactd's loop did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KcompactdWork {
    /// `kcompactd_do_work`: work was requested.
    Requested,
    /// The wait timed out with nothing requested, and proactive compaction ran.
    Proactive,
    /// The wait timed out with nothing requested; the score did not call for compaction.
    Idle,
}

/// One turn of kcompactd's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KcompactdPass {
    /// What kcompactd did.
    pub work: KcompactdWork,
    /// Pfns its scanners visited (migrate + free).
    pub scanned: u64,
    /// The next wait's timeout in microseconds (`None`: wait until woken).
    pub timeout_us: Option<u64>,
}

impl KcompactdPass {
    /// The simulated time the pass keeps kcompactd busy: [`KCOMPACTD_SCAN_NS_PER_PFN`] per
    /// pfn scanned, at least [`KCOMPACTD_PASS_MIN_US`] if it compacted, nothing if idle.
    pub fn run_time_us(&self) -> u64 {
        match self.work {
            KcompactdWork::Idle => 0,
            _ => scan_time_us(self.scanned).max(KCOMPACTD_PASS_MIN_US),
        }
    }
}

/// kcompactd's watermark: high under `defrag_mode`, min otherwise.
fn kcompactd_flags(node: &NodeShared) -> AllocFlags {
    if node.policy().sysctls.defrag_mode() {
        AllocFlags::WMARK_HIGH
    } else {
        AllocFlags::WMARK_MIN
    }
}

fn query(node: &NodeShared, order: u32, idx: ZoneType) -> SuitQuery<'_> {
    SuitQuery {
        order,
        highest_zoneidx: idx,
        alloc_flags: kcompactd_flags(node),
        asynchronous: false,
        kcompactd: true,
        policy: node.policy(),
    }
}

/// `wakeup_kcompactd()`: ask for a block of `order` in zones up to `idx`; wake kcompactd if
/// compaction could help some zone.
pub fn wakeup_kcompactd(node: &NodeShared, d: &mut Daemons, order: u32, idx: ZoneType) {
    if order == 0 {
        return;
    }
    d.kcompactd_max_order = d.kcompactd_max_order.max(order);
    let idx = d.kcompactd_highest_zoneidx.map_or(idx, |cur| cur.min(idx));
    d.kcompactd_highest_zoneidx = Some(idx);
    if d.kcompactd_woken {
        return;
    }
    let q = query(node, d.kcompactd_max_order, idx);
    let suitable = node
        .zones()
        .iter()
        .filter(|z| z.config().zone_type <= idx && z.managed_pages() > 0)
        .any(|z| compaction_suit_allocation_order(z, q) == CompactResult::Continue);
    if suitable {
        d.kcompactd_woken = true;
    }
}

/// `kcompactd_work_requested()`: an order is asked of kcompactd.
pub fn kcompactd_work_requested(node: &NodeShared) -> bool {
    node.daemons().kcompactd_max_order > 0
}

/// `kcompactd_do_work()`: one requested run of kcompactd on CPU `cpu`; the request is
/// consumed even when no mover is installed (then nothing is compacted).
fn kcompactd_do_work<L: NodeLocks + ?Sized>(l: &L, cpu: usize) {
    let node = l.node();
    let (order, idx) = {
        let mut d = node.daemons();
        d.kcompactd_woken = false;
        if d.kcompactd_max_order == 0 {
            return;
        }
        let top = node.zones().last().map_or(ZoneType::Normal, |z| z.config().zone_type);
        (d.kcompactd_max_order, d.kcompactd_highest_zoneidx.unwrap_or(top))
    };
    if let Some(mover) = l.mover() {
        node.count(VmEvent::CompactDaemonWake, 1);
        for z in 0..node.zones().len() {
            compact_requested_zone(l, mover, cpu, z, order, idx);
        }
    }
    let mut d = node.daemons();
    if d.kcompactd_max_order <= order {
        d.kcompactd_max_order = 0;
    }
    if d.kcompactd_highest_zoneidx.is_some_and(|cur| cur >= idx) {
        d.kcompactd_highest_zoneidx = None;
    }
}

/// `kcompactd_do_work()`'s step for zone `z`: compact it for `order` unless it is above
/// `idx`, deferred or unsuitable by its own index.
fn compact_requested_zone<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn super::Mover,
    cpu: usize,
    z: usize,
    order: u32,
    idx: ZoneType,
) {
    let node = l.node();
    let zone = node.zone(z);
    if zone.config().zone_type > idx || zone.managed_pages() == 0 {
        return;
    }
    if lock_zone(l, z, cpu).compact.compaction_deferred(order) {
        return;
    }
    // Against the zone's own index, as the kernel passes `zoneid` here: a lower zone's
    // lowmem reserve against higher requests does not count (the run itself, below, checks
    // again against `idx`).
    if compaction_suit_allocation_order(zone, query(node, order, zone.config().zone_type))
        != CompactResult::Continue
    {
        return;
    }
    let mut cc = CompactControl::new(z, cpu, Some(order), MigrateMode::SyncLight);
    cc.alloc_flags = kcompactd_flags(node);
    cc.highest_zoneidx = idx;
    match compact_zone(l, mover, &mut cc) {
        CompactResult::Success => lock_zone(l, z, cpu).compact.compaction_defer_reset(order, false),
        CompactResult::Complete | CompactResult::PartialSkipped => {
            drain_all_pages(l, Some(z));
            lock_zone(l, z, cpu).compact.defer_compaction(order);
        }
        _ => {}
    }
    node.count(VmEvent::CompactDaemonMigrateScanned, cc.total_migrate_scanned);
    node.count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
}

/// `fragmentation_score_node()`: the zones' scores weighted by their present pages
/// (`fragmentation_score_zone_weighted`), 0..=100.
pub fn fragmentation_score_node(node: &NodeShared) -> u64 {
    let present = |z: &crate::zone::ZoneShared| z.config().span.present_pages;
    let node_present: u64 = node.zones().iter().map(|z| present(z)).sum();
    node.zones().iter().map(|z| present(z) * fragmentation_score_zone(z) / (node_present + 1)).sum()
}

/// `should_proactive_compact_node()`: proactiveness is on, kswapd is not running, and the
/// node's score is above `min(low + 10, 100)` with `low = max(100 - proactiveness, 5)`.
fn should_proactive_compact_node(node: &NodeShared) -> bool {
    if node.policy().sysctls.compaction_proactiveness() == 0 || node.daemons().kswapd_woken {
        return false;
    }
    let low = super::compact_zone::score_wmark_low(node);
    fragmentation_score_node(node) > (low + 10).min(100)
}

/// One turn of `kcompactd()`'s loop on CPU `cpu`, once its wait ended (a wake-up or the
/// timeout): the requested work if any, else proactive compaction if the score calls for it
/// (each zone compacted until its score is at or below `low`). Returns what it did and the
/// next wait's timeout. Without a mover kcompactd does nothing but wait.
pub fn kcompactd_pass<L: NodeLocks + ?Sized>(l: &L, cpu: usize) -> KcompactdPass {
    let node = l.node();
    let timeout = (node.policy().sysctls.compaction_proactiveness() > 0).then_some(PROACTIVE_INTERVAL_US);
    let scanned =
        || node.event(VmEvent::CompactDaemonMigrateScanned) + node.event(VmEvent::CompactDaemonFreeScanned);
    let before = scanned();
    if kcompactd_work_requested(node) {
        kcompactd_do_work(l, cpu);
        return KcompactdPass {
            work: KcompactdWork::Requested,
            scanned: scanned() - before,
            timeout_us: timeout,
        };
    }
    node.daemons().kcompactd_woken = false;
    if l.mover().is_none() || !should_proactive_compact_node(node) {
        return KcompactdPass { work: KcompactdWork::Idle, scanned: 0, timeout_us: timeout };
    }
    let prev_score = fragmentation_score_node(node);
    super::compact_node(l, cpu, true);
    let stuck = fragmentation_score_node(node) >= prev_score;
    KcompactdPass {
        work: KcompactdWork::Proactive,
        scanned: scanned() - before,
        // A proactive run that did not lower the score stretches the timeout 64-fold (32 s).
        timeout_us: timeout.map(|t| if stuck { t << COMPACT_MAX_DEFER_SHIFT } else { t }),
    }
}
