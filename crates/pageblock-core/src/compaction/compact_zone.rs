//! One compaction run over a zone (`compact_zone`, `__compact_finished`,
//! `compaction_alloc`/`compaction_free` for `migrate_pages`) and its callers: direct compaction for a
//! request (`try_to_compact_pages`) and whole-zone runs (`compact_node`).

use super::fast_search::FastStart;
use super::migrate::idx;
use super::migration::{migrate_pages, MigrateError};
use super::suitable::{compaction_suit_allocation_order, SuitQuery};
use super::{CompactPriority, CompactResult, MigrateMode, Mover};
use crate::config::ZoneType;
use crate::free_pages::{drain_pages_zone, free_pages};
use crate::gfp::{AllocFlags, Gfp};
use crate::locks::{lock_zone, NodeLocks};
use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::node::AllocContext;
use crate::stats::{VmEvent, ZoneStat};
use crate::types::{Pfn, NR_ORDER_SLOTS};
use crate::zone::fallback::Fallback;
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};

/// `struct compact_control`: one run's settings and scanner state.
pub(crate) struct CompactControl {
    pub zone: usize,
    pub cpu: usize,
    /// The order to make, or `None` for "compact everything" (order -1).
    pub order: Option<u32>,
    pub migratetype: MigrateType,
    pub alloc_flags: AllocFlags,
    pub highest_zoneidx: ZoneType,
    pub mode: MigrateMode,
    pub ignore_skip_hint: bool,
    pub ignore_block_suitable: bool,
    pub direct: bool,
    pub proactive: bool,
    pub whole_zone: bool,
    /// The migrate scanner's next pfn.
    pub migrate_pfn: u64,
    /// The free scanner's next pfn (it scans the pageblock below this, downwards).
    pub free_pfn: u64,
    /// Free blocks the free scanner isolated, by order (their heads are `Isolated`).
    pub freepages: [Vec<u64>; NR_ORDER_SLOTS],
    pub nr_freepages: u64,
    /// Allocated blocks the migrate scanner isolated: (pfn, their state before isolation).
    pub migratepages: Vec<(u64, PageInfo)>,
    pub nr_migratepages: u64,
    pub total_migrate_scanned: u64,
    pub total_free_scanned: u64,
    /// Finish the current pageblock even past the isolation limit.
    pub finish_pageblock: bool,
    /// The id of the capture wish this run published, if it did (direct compaction).
    pub capture: Option<u64>,
    /// The run's mover moves only handles' blocks ([`Mover::moves_handles_only`]).
    pub handles_only: bool,
    /// `search_order`: the order the free-list search of the free scanner starts at.
    pub search_order: i32,
    /// `fast_search_fail`: free-list searches that found nothing since one that did.
    pub fast_search_fail: u32,
    /// `fast_start_pfn`: where the migrate scanner resumes once its free-list search fails.
    pub fast_start: FastStart,
    /// `contended`: an async run found the zone lock held; it ends at the next pageblock
    /// boundary.
    pub contended: bool,
    /// The request may enter the file system (`__GFP_FS`): file pages may be isolated.
    pub gfp_fs: bool,
}

impl CompactControl {
    pub(crate) fn new(zone: usize, cpu: usize, order: Option<u32>, mode: MigrateMode) -> CompactControl {
        CompactControl {
            zone,
            cpu,
            order,
            migratetype: MigrateType::Movable,
            alloc_flags: AllocFlags::WMARK_MIN,
            highest_zoneidx: ZoneType::Normal,
            mode,
            ignore_skip_hint: false,
            ignore_block_suitable: false,
            direct: false,
            proactive: false,
            whole_zone: false,
            migrate_pfn: 0,
            free_pfn: 0,
            freepages: Default::default(),
            nr_freepages: 0,
            migratepages: Vec::new(),
            nr_migratepages: 0,
            total_migrate_scanned: 0,
            total_free_scanned: 0,
            finish_pageblock: false,
            capture: None,
            handles_only: false,
            search_order: order.map_or(-1, |o| o as i32),
            fast_search_fail: 0,
            fast_start: FastStart::Unset,
            contended: false,
            gfp_fs: true,
        }
    }

    /// `compact_lock_irqsave()` on the zone lock: an async run only tries it; finding it
    /// held marks the run contended, and then it waits like any other.
    pub(crate) fn lock_zone<'a, L: NodeLocks + ?Sized>(&mut self, l: &'a L) -> L::ZoneGuard<'a> {
        if self.mode == MigrateMode::Async && !self.contended {
            if let Some(mut z) = l.trylock_zone(self.zone) {
                z.set_cpu(self.cpu);
                return z;
            }
            self.contended = true;
        }
        lock_zone(l, self.zone, self.cpu)
    }

    /// `compact_scanners_met()`: the scanners are in the same pageblock or have crossed.
    pub(crate) fn scanners_met(&self, pageblock_order: u32) -> bool {
        self.free_pfn >> pageblock_order <= self.migrate_pfn >> pageblock_order
    }

    /// `Contended` if the run met a held lock, else `r` (the end of `__compact_finished`).
    fn contended_or(&self, r: CompactResult) -> CompactResult {
        if self.contended {
            CompactResult::Contended
        } else {
            r
        }
    }

    fn sync(&self) -> usize {
        usize::from(self.mode != MigrateMode::Async)
    }
}

/// `compact_zone()`.
pub(crate) fn compact_zone<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn Mover,
    cc: &mut CompactControl,
) -> CompactResult {
    let node = l.node();
    let zone = node.zone(cc.zone);
    let pbo = zone.config().pageblock_order;
    cc.handles_only = mover.moves_handles_only();
    if let Some(order) = cc.order {
        let q = SuitQuery {
            order,
            highest_zoneidx: cc.highest_zoneidx,
            alloc_flags: cc.alloc_flags,
            asynchronous: cc.mode == MigrateMode::Async,
            kcompactd: !cc.direct,
            policy: node.policy(),
        };
        let r = compaction_suit_allocation_order(zone, q);
        if r != CompactResult::Continue {
            return r;
        }
    }
    if cc.direct {
        // Where the kernel's `mm_compaction_begin` fires for a request.
        node.count(VmEvent::CompactDirectBegin, 1);
    }
    start_scanners(l, cc);
    let mut update_cached = cc.mode == MigrateMode::Async && {
        let z = lock_zone(l, cc.zone, cc.cpu);
        z.compact.cached_migrate_pfn[0] == z.compact.cached_migrate_pfn[1]
    };
    let zone_start = zone.config().start_pfn;
    let mut last_migrated_pfn = 0;
    // After a failed migration the rest of the pageblock is isolated at once, without
    // the finish check (`goto rescan`).
    let mut rescan = false;
    let ret = loop {
        if !std::mem::take(&mut rescan) {
            let ret = compact_finished(l, cc);
            if ret != CompactResult::Continue {
                break ret;
            }
            let start = cc.migrate_pfn;
            cc.finish_pageblock = last_migrated_pfn >> pbo == start >> pbo;
        }
        match cc.isolate_migratepages(l) {
            super::migrate::Isolated::None => {
                if update_cached {
                    let mut z = lock_zone(l, cc.zone, cc.cpu);
                    z.compact.cached_migrate_pfn[1] = z.compact.cached_migrate_pfn[0];
                }
            }
            super::migrate::Isolated::Some => {
                update_cached = false;
                last_migrated_pfn = zone_start.max(((cc.migrate_pfn - 1) >> pbo) << pbo);
                if let Err(err) = migrate_pages(l, mover, cc) {
                    if err == MigrateError::NoMemory && !cc.scanners_met(pbo) {
                        break CompactResult::Contended;
                    }
                    // A failure inside a pageblock an ASYNC or SYNC_LIGHT run can come back
                    // to: isolate the rest of it now, so that it is marked skipped after.
                    if cc.migrate_pfn & ((1 << pbo) - 1) != 0
                        && !cc.ignore_skip_hint
                        && !cc.finish_pageblock
                        && cc.mode != MigrateMode::Sync
                    {
                        cc.finish_pageblock = true;
                        // Draining the CPU lists cannot make a huge page of a block that
                        // keeps a page (`COMPACTION_HPAGE_ORDER`).
                        if cc.order == Some(pbo) {
                            last_migrated_pfn = 0;
                        }
                        rescan = true;
                        continue;
                    }
                }
                if captured(l, cc).is_some() {
                    break CompactResult::Success;
                }
            }
        }
        // check_drain: the scanner left an order-aligned block it migrated from; flush this
        // CPU's cached frees so that the block can merge (`lru_add_drain_cpu_zone`).
        if let Some(order) = cc.order.filter(|&o| o > 0) {
            let block_start = (cc.migrate_pfn >> order) << order;
            if last_migrated_pfn != 0 && last_migrated_pfn < block_start {
                drain_pages_zone(l, cc.cpu, cc.zone);
                last_migrated_pfn = 0;
            }
        }
    };
    release_freepages(l, cc);
    node.count(VmEvent::CompactMigrateScanned, cc.total_migrate_scanned);
    node.count(VmEvent::CompactFreeScanned, cc.total_free_scanned);
    ret
}

/// Position the scanners: the zone's ends for a whole-zone run, else where the last run
/// stopped (reset if outside the zone). A run due again after the longest deferral first
/// resets the skip hints, if a direct run met the scanners since the last reset.
fn start_scanners<L: NodeLocks + ?Sized>(l: &L, cc: &mut CompactControl) {
    let mut z = lock_zone(l, cc.zone, cc.cpu);
    if let Some(order) = cc.order {
        if z.compact.compaction_restarting(order) {
            z.reset_isolation_suitable();
        }
    }
    let (start, last) = (z.start_pfn(), z.last_pageblock_pfn());
    if cc.whole_zone {
        cc.migrate_pfn = start;
        cc.free_pfn = last;
        return;
    }
    let sync = cc.sync();
    let end = z.end_pfn();
    let c = &mut z.compact;
    if !(start..end).contains(&c.cached_free_pfn) {
        c.cached_free_pfn = last;
    }
    if !(start..end).contains(&c.cached_migrate_pfn[sync]) {
        c.cached_migrate_pfn = [start; 2];
    }
    cc.free_pfn = c.cached_free_pfn;
    cc.migrate_pfn = c.cached_migrate_pfn[sync];
    if cc.migrate_pfn <= c.init_migrate_pfn {
        cc.whole_zone = true;
    }
}

/// `__compact_finished()` (with `compact_finished`'s mapping of `NoSuitablePage` to
/// `Continue`).
fn compact_finished<L: NodeLocks + ?Sized>(l: &L, cc: &mut CompactControl) -> CompactResult {
    let node = l.node();
    let mut z = lock_zone(l, cc.zone, cc.cpu);
    let pbo = z.pageblock_order();
    if cc.scanners_met(pbo) {
        z.reset_cached_positions();
        if cc.direct {
            z.compact.blockskip_flush = true;
        }
        return if cc.whole_zone { CompactResult::Complete } else { CompactResult::PartialSkipped };
    }
    if cc.proactive {
        let done = super::suitable::fragmentation_score_zone(z.shared()) <= score_wmark_low(node);
        return if done { CompactResult::Success } else { cc.contended_or(CompactResult::Continue) };
    }
    let Some(order) = cc.order else {
        return CompactResult::Continue;
    };
    if z.captured_for(cc.capture).is_some() {
        return CompactResult::Success;
    }
    if cc.migrate_pfn & ((1 << pbo) - 1) != 0 {
        return CompactResult::Continue;
    }
    // kcompactd under defrag_mode works until whole free pageblocks reach the high mark.
    if node.policy().sysctls.defrag_mode() && !cc.direct {
        let shared = z.shared();
        let req = WatermarkRequest { order, flags: cc.alloc_flags, highest_zoneidx: cc.highest_zoneidx };
        let blocks = shared.counters().zone_stat(ZoneStat::NrFreePagesBlocks);
        let ok = shared.zone_watermark_ok_with(req, shared.wmark_pages(WatermarkLevel::High), blocks);
        return if ok { CompactResult::Success } else { CompactResult::Continue };
    }
    for o in order..=z.max_order() {
        if !z.free_list_empty(o, cc.migratetype) {
            return CompactResult::Success;
        }
        if cc.migratetype == MigrateType::Movable && !z.free_list_empty(o, MigrateType::Cma) {
            return CompactResult::Success;
        }
        if matches!(z.find_suitable_fallback(o, cc.migratetype, true), Fallback::Found(_)) {
            return CompactResult::Success;
        }
    }
    cc.contended_or(CompactResult::Continue)
}

/// The proactive run's goal: `max(100 - proactiveness, 5)`.
pub(crate) fn score_wmark_low(node: &crate::node::NodeShared) -> u64 {
    100u64.saturating_sub(u64::from(node.policy().sysctls.compaction_proactiveness())).max(5)
}

/// The block a capture took, if any.
fn captured<L: NodeLocks + ?Sized>(l: &L, cc: &CompactControl) -> Option<u64> {
    lock_zone(l, cc.zone, cc.cpu).captured_for(cc.capture)
}

/// `compaction_alloc()`: the smallest isolated free block that fits, split down to the
/// source's order; the free scanner runs once more if none fits (it works until it holds as
/// many pages as still wait to move). The destination is allocated with the source's owner
/// tag.
pub(super) fn compaction_alloc<L: NodeLocks + ?Sized>(
    l: &L,
    cc: &mut CompactControl,
    src: PageInfo,
) -> Option<u64> {
    let order = src.order;
    let fits = |cc: &CompactControl| (order as usize..NR_ORDER_SLOTS).find(|&o| !cc.freepages[o].is_empty());
    let found = match fits(cc) {
        Some(o) => o,
        None => {
            cc.isolate_freepages(l);
            fits(cc)?
        }
    };
    let zone = l.node().zone(cc.zone);
    let mm = zone.memmap();
    let pfn = cc.freepages[found].pop()?;
    // Split: the upper halves stay isolated for later destinations.
    let mut high = found as u32;
    while high > order {
        high -= 1;
        let half = pfn + (1 << high);
        mm.set_head(idx(zone, half), PageState::Isolated, high);
        cc.freepages[high as usize].push(half);
    }
    cc.nr_freepages -= 1 << order;
    cc.nr_migratepages -= 1 << order;
    mm.set_info(idx(zone, pfn), PageInfo { state: PageState::Allocated, order, tag: src.tag });
    Some(pfn)
}

/// `compaction_free()`: a destination that was not used goes back to the run's free pages,
/// and its source waits to move again.
pub(super) fn compaction_free(zone: &crate::zone::ZoneShared, cc: &mut CompactControl, pfn: u64, order: u32) {
    zone.memmap().set_head(idx(zone, pfn), PageState::Isolated, order);
    cc.freepages[order as usize].push(pfn);
    cc.nr_freepages += 1 << order;
    cc.nr_migratepages += 1 << order;
}

/// `release_free_list()`: the free pages the run did not use are freed again (as any page,
/// through this CPU's lists for small orders). The free scanner resumes, next time, no lower
/// than the highest of them.
fn release_freepages<L: NodeLocks + ?Sized>(l: &L, cc: &mut CompactControl) {
    let zone = l.node().zone(cc.zone);
    let mut highest = None;
    for order in 0..NR_ORDER_SLOTS {
        for pfn in std::mem::take(&mut cc.freepages[order]) {
            let info = PageInfo { state: PageState::Allocated, order: order as u32, ..PageInfo::TAIL };
            zone.memmap().set_info(idx(zone, pfn), info);
            let freed = free_pages(l, cc.cpu, Pfn(pfn), order as u32);
            debug_assert!(freed.is_ok(), "isolated free page {pfn:#x} could not be released: {freed:?}");
            highest = highest.max(Some(pfn));
        }
    }
    cc.nr_freepages = 0;
    if let Some(pfn) = highest {
        let mut z = lock_zone(l, cc.zone, cc.cpu);
        let block = pfn & !(z.pageblock_nr_pages() - 1);
        if block > z.compact.cached_free_pfn {
            z.compact.cached_free_pfn = block;
        }
    }
}

/// `compaction_allocated()`: the request compaction ran for got its page — stop deferring
/// compaction at this order in the page's zone.
pub(crate) fn compaction_allocated<L: NodeLocks + ?Sized>(l: &L, cpu: usize, pfn: Pfn, order: u32) {
    if let Some(z) = l.node().zone_of(pfn.0) {
        let mut zone = lock_zone(l, z, cpu);
        zone.compact.blockskip_flush = false;
        zone.compact.compaction_defer_reset(order, true);
    }
}

/// `compact_zone_order()`: a direct compaction of one zone at `order` for a request, with a
/// capture of the request's own order published for its duration.
#[allow(clippy::too_many_arguments)]
fn compact_zone_order<L: NodeLocks + ?Sized>(
    l: &L,
    mover: &dyn Mover,
    cpu: usize,
    z: usize,
    ac: &AllocContext,
    order: u32,
    flags: AllocFlags,
    priority: CompactPriority,
) -> (CompactResult, Option<Pfn>) {
    let mode = if priority == CompactPriority::Async { MigrateMode::Async } else { MigrateMode::SyncLight };
    let mut cc = CompactControl::new(z, cpu, Some(order), mode);
    cc.migratetype = ac.migratetype;
    cc.alloc_flags = flags;
    cc.highest_zoneidx = ac.highest_zoneidx;
    cc.gfp_fs = ac.gfp.contains(Gfp::FS);
    cc.direct = true;
    cc.whole_zone = priority == CompactPriority::SyncFull;
    cc.ignore_skip_hint = priority == CompactPriority::SyncFull;
    cc.ignore_block_suitable = priority == CompactPriority::SyncFull;
    cc.capture = lock_zone(l, z, cpu).publish_capture(cpu, ac.order, ac.migratetype);
    let mut ret = compact_zone(l, mover, &mut cc);
    let page = lock_zone(l, z, cpu).take_capture(cc.capture);
    if page.is_some() {
        ret = CompactResult::Success;
    }
    (ret, page.map(Pfn))
}

/// `try_to_compact_pages()`: direct compaction at `order` (the request's, or the pageblock
/// order a `defrag_mode` request was promoted to) over the request's zonelist, skipping
/// zones where compaction is deferred, stopping at the first success, and — when async —
/// at the first zone after which [`NodeLocks::need_resched`] holds. Returns the best
/// result and a block of the request's order captured for it. Without a mover nothing can
/// move: compaction does not start.
pub fn try_to_compact_pages<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    ac: &AllocContext,
    order: u32,
    flags: AllocFlags,
    priority: CompactPriority,
) -> (CompactResult, Option<Pfn>) {
    let Some(mover) = l.mover() else {
        return (CompactResult::Skipped, None);
    };
    if !ac.gfp.contains(Gfp::IO) {
        return (CompactResult::Skipped, None);
    }
    let node = l.node();
    // Where the kernel's `mm_compaction_try_to_compact_pages` fires.
    node.count(VmEvent::CompactAttempt, 1);
    let mut rc = CompactResult::Skipped;
    for &z in node.zonelist(ac) {
        let z = z as usize;
        if priority > CompactPriority::SyncFull && lock_zone(l, z, cpu).compact.compaction_deferred(order) {
            rc = rc.max(CompactResult::Deferred);
            continue;
        }
        let (status, page) = compact_zone_order(l, mover, cpu, z, ac, order, flags, priority);
        rc = rc.max(status);
        if status == CompactResult::Success {
            lock_zone(l, z, cpu).compact.compaction_defer_reset(order, false);
            return (rc, page);
        }
        if priority != CompactPriority::Async
            && matches!(status, CompactResult::Complete | CompactResult::PartialSkipped)
        {
            lock_zone(l, z, cpu).compact.defer_compaction(order);
        }
        // Async compaction is opportunistic: it yields the CPU rather than try more zones.
        if priority == CompactPriority::Async && l.need_resched(cpu) {
            break;
        }
    }
    (rc, None)
}

/// `compact_node()`: compact every zone of the node whole, at order -1
/// (`/proc/sys/vm/compact_memory` with `MIGRATE_SYNC`; proactive compaction with
/// `SyncLight` until each zone's fragmentation score is low enough). Returns what each
/// zone's run ended with. Without a mover nothing runs.
pub fn compact_node<L: NodeLocks + ?Sized>(l: &L, cpu: usize, proactive: bool) -> Vec<CompactResult> {
    let Some(mover) = l.mover() else {
        return Vec::new();
    };
    let node = l.node();
    let mode = if proactive { MigrateMode::SyncLight } else { MigrateMode::Sync };
    (0..node.zones().len())
        .map(|z| {
            let mut cc = CompactControl::new(z, cpu, None, mode);
            cc.whole_zone = true;
            cc.ignore_skip_hint = true;
            cc.proactive = proactive;
            let r = compact_zone(l, mover, &mut cc);
            if proactive {
                node.count(VmEvent::CompactDaemonMigrateScanned, cc.total_migrate_scanned);
                node.count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
            }
            r
        })
        .collect()
}
