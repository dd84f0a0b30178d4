//! Reclaim from the LRU lists (`shrink_lruvec`, `get_scan_count`, `shrink_active_list`,
//! `shrink_inactive_list`, `inactive_is_low`, `shrink_slab`), the classic two-list LRU
//! (not MGLRU).
//!
//! How much of each list a pass scans: `size >> priority` (priority 12 → 1/4096 of the list,
//! each retry at a lower priority doubles it), split between anonymous and file memory by
//! `vm.swappiness` weighted against what reclaiming each type has cost lately — swap-out
//! I/O and refaults make a type expensive (`lru_note_cost`), and each side keeps part of the
//! pressure however costly it gets. While the inactive file list is large and no file page
//! refaulted into activation since the last reclaim invocation ended, only the page cache is
//! trimmed (`cache_trim_mode`); with almost no page cache left only anon is scanned
//! (`file_is_tiny`), and at priority 0 both lists equally (`SCAN_EQUAL`).

use super::lru::{LruKind, LruList, Lruvec};
use super::swap_io::SwapDevice;
use super::{
    DirtyWriteback, PassCounts, ScanControl, Unmap, DEF_PRIORITY, SWAP_CLUSTER_MAX, SWAP_CLUSTER_MAX_SKIPPED,
};

/// `vm.swappiness` default.
pub const DEFAULT_SWAPPINESS: u64 = 60;

/// The reclaim cost state of an lruvec (`lruvec->anon_cost`, `file_cost`, the workingset
/// activation counts and their snapshot `lruvec->refaults`).
#[derive(Clone, Debug, Default)]
pub struct ReclaimCost {
    /// Recent cost of reclaiming anonymous pages.
    pub anon_cost: u64,
    /// Recent cost of reclaiming file pages.
    pub file_cost: u64,
    /// Refaults that activated the page (`WORKINGSET_ACTIVATE_ANON`, `_FILE`): it was evicted
    /// while still part of the workingset.
    pub workingset_activate: [u64; 2],
    /// `workingset_activate` at the end of the last reclaim invocation (`snapshot_refaults`).
    refaults: [u64; 2],
}

/// Index of `kind` in [`ReclaimCost::workingset_activate`] (`WORKINGSET_ANON`, `_FILE`).
fn workingset_index(kind: LruKind) -> usize {
    usize::from(kind != LruKind::Anon)
}

impl ReclaimCost {
    /// `lru_note_cost()`: `io` pages written (swap-out) and `rotated` pages kept cost
    /// `io * SWAP_CLUSTER_MAX + rotated`; old costs decay by half once they exceed a quarter
    /// of the LRU.
    pub fn note(&mut self, kind: LruKind, io: u64, rotated: u64, lru_pages: u64) {
        let cost = io * SWAP_CLUSTER_MAX + rotated;
        match kind {
            LruKind::Anon => self.anon_cost += cost,
            LruKind::File => self.file_cost += cost,
            LruKind::Slab => return,
        }
        if self.anon_cost + self.file_cost > lru_pages / 4 {
            self.anon_cost /= 2;
            self.file_cost /= 2;
        }
    }

    /// `workingset_refault()`: a reclaimed page was needed again; `activated` if it was
    /// evicted while still part of the workingset (`WORKINGSET_ACTIVATE`). Only a page that
    /// was active before its eviction (`workingset`, `WORKINGSET_RESTORE`) makes its kind
    /// costlier (`lru_note_cost_refault`): reclaim took a page it had seen in use.
    pub fn note_refault(
        &mut self,
        kind: LruKind,
        pages: u64,
        activated: bool,
        workingset: bool,
        lru_pages: u64,
    ) {
        if kind == LruKind::Slab || !activated {
            return;
        }
        self.workingset_activate[workingset_index(kind)] += pages;
        if workingset {
            self.note(kind, pages, 0, lru_pages);
        }
    }

    /// `snapshot_refaults()`: at the end of a reclaim invocation (`do_try_to_free_pages`,
    /// `balance_pgdat`), remember the activations seen so far; the next invocations judge
    /// whether the workingset is refaulting against this.
    pub fn snapshot_refaults(&mut self) {
        self.refaults = self.workingset_activate;
    }

    /// Pages of `kind` refaulted into activation since the last snapshot.
    fn refaulting(&self, kind: LruKind) -> bool {
        let i = workingset_index(kind);
        self.workingset_activate[i] != self.refaults[i]
    }
}

/// What the node tells a reclaim pass about its free memory (for `file_is_tiny`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeFree {
    /// Free pages of the node (`NR_FREE_PAGES`).
    pub free: u64,
    /// The sum of its managed zones' high watermarks.
    pub high_wmark: u64,
}

impl NodeFree {
    /// What `node` has free, and its managed zones' high watermarks.
    pub fn of(node: &crate::node::NodeShared) -> NodeFree {
        let managed = || node.zones().iter().filter(|z| z.managed_pages() > 0);
        NodeFree {
            free: node.nr_free_pages(),
            high_wmark: managed().map(|z| z.wmark_pages(crate::zone::watermark::WatermarkLevel::High)).sum(),
        }
    }
}

/// `struct scan_control`'s balance fields, prepared once per pass (`prepare_scan_control`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScanBalanceInput {
    /// `may_deactivate`: the active anonymous and file lists may be aged (indexed by
    /// `workingset_index`).
    may_deactivate: [bool; 2],
    /// Only the page cache is trimmed: plenty of inactive file, none of it refaulting.
    cache_trim_mode: bool,
    /// So little page cache is left, with free memory under the high watermarks, that
    /// anonymous memory must go (`file_is_tiny`).
    file_is_tiny: bool,
    /// Anonymous pages can be reclaimed: there is swap space (`can_reclaim_anon_pages`).
    /// Without it the anonymous lists are neither scanned nor aged.
    can_reclaim_anon: bool,
}

/// `prepare_scan_control()`: an active list may be deactivated when pages of its kind
/// refaulted into activation since the last reclaim invocation's snapshot (a new workingset
/// is forming: age the stale one out) or its inactive list is low — or always, when a reclaim
/// that found nothing to take retries with `force_deactivate`. Cache-trim mode needs a file
/// list that may not be deactivated.
fn prepare_scan_control(
    lru: &Lruvec,
    cost: &ReclaimCost,
    sc: &ScanControl,
    node: NodeFree,
    can_reclaim_anon: bool,
) -> ScanBalanceInput {
    let may_deactivate = |kind| sc.force_deactivate || cost.refaulting(kind) || inactive_is_low(lru, kind);
    let deactivate_anon = may_deactivate(LruKind::Anon);
    let deactivate_file = may_deactivate(LruKind::File);
    let inactive_file = lru.size(LruList::InactiveFile);
    let file = inactive_file + lru.size(LruList::ActiveFile);
    ScanBalanceInput {
        may_deactivate: [deactivate_anon, deactivate_file],
        cache_trim_mode: inactive_file >> sc.priority > 0 && !deactivate_file && !sc.no_cache_trim_mode,
        file_is_tiny: file + node.free <= node.high_wmark
            && !deactivate_anon
            && lru.size(LruList::InactiveAnon) >> sc.priority > 0,
        can_reclaim_anon,
    }
}

/// `inactive_is_low()`: the inactive list is too short against the active one (the target
/// ratio grows with the square root of the list's size in GiB).
pub fn inactive_is_low(lru: &Lruvec, kind: LruKind) -> bool {
    let inactive = lru.size(LruList::inactive(kind));
    let active = lru.size(LruList::active(kind));
    let gb = (inactive + active) >> (30 - 12);
    let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
    inactive * ratio < active
}

/// The evictable lists in the order a pass visits them (`for_each_evictable_lru`).
const EVICTABLE: [LruList; 4] =
    [LruList::InactiveAnon, LruList::ActiveAnon, LruList::InactiveFile, LruList::ActiveFile];

/// Where a pass's victims go: their owner ([`Unmap`]), the allocator (`free`), and the swap
/// device anonymous pages are written to.
pub struct PageOut<'a> {
    /// Told of every page reclaim takes.
    pub unmap: &'a dyn Unmap,
    /// Frees a reclaimed block (pfn, order).
    pub free: &'a mut dyn FnMut(u64, u32),
    /// Where anonymous pages are written.
    pub swap: &'a mut SwapDevice,
    /// The reclaimer's clock: when this pass's writes are submitted, in microseconds.
    pub now_us: u64,
    /// `PGDAT_WRITEBACK`: kswapd found only pages under writeback in a recent pass.
    pub pgdat_writeback: bool,
}

/// `shrink_node()` for one pass at `sc.priority`: the LRU lists (`shrink_lruvec`), then the
/// slab. Reclaimed pages are unmapped (their owner forgets them) and freed, or — anonymous
/// pages on an asynchronous swap device — written and freed by a later pass.
pub fn shrink_node(
    lru: &mut Lruvec,
    cost: &mut ReclaimCost,
    sc: &mut ScanControl,
    node: NodeFree,
    out: &mut PageOut<'_>,
) {
    sc.nr = PassCounts::default();
    let input = prepare_scan_control(lru, cost, sc, node, out.swap.can_reclaim_anon());
    let nr = get_scan_count(lru, cost, sc, input);
    let before = sc.nr_reclaimed;
    shrink_lruvec(lru, cost, sc, input, nr, out);
    shrink_slab(lru, sc, out);
    // Trimming page cache alone took nothing: kswapd may start its run over without it.
    if input.cache_trim_mode && sc.nr_reclaimed == before {
        sc.cache_trim_mode_failed = true;
    }
}

/// `shrink_lruvec()`: scan each list its share in [`SWAP_CLUSTER_MAX`] batches (an active
/// list only ages if it may be deactivated). Once the pass has reclaimed `sc.nr_to_reclaim`,
/// the kind with less left to scan stops and the other is cut to the same fraction of its
/// target — except a direct reclaimer at [`DEF_PRIORITY`], which finishes its batch (direct
/// reclaim at all means kswapd is behind). Then an anon list whose inactive part is low is
/// aged a batch, to keep candidates for the next pass (`can_age_anon_pages`: with swap).
fn shrink_lruvec(
    lru: &mut Lruvec,
    cost: &mut ReclaimCost,
    sc: &mut ScanControl,
    input: ScanBalanceInput,
    mut nr: [u64; 4],
    out: &mut PageOut<'_>,
) {
    let targets = nr;
    let proportional_reclaim = !sc.kswapd && sc.priority == DEF_PRIORITY;
    let start = sc.nr_reclaimed;
    while nr[0] > 0 || nr[2] > 0 || nr[3] > 0 {
        for (i, list) in EVICTABLE.into_iter().enumerate() {
            if nr[i] == 0 {
                continue;
            }
            let batch = nr[i].min(SWAP_CLUSTER_MAX);
            nr[i] -= batch;
            let kind = list.kind();
            if list == LruList::inactive(kind) {
                shrink_inactive_list(lru, cost, sc, kind, batch, out);
            } else if input.may_deactivate[workingset_index(kind)] {
                shrink_active_list(lru, sc, kind, batch);
            } else {
                sc.skipped_deactivate = true;
            }
        }
        if sc.nr_reclaimed - start < sc.nr_to_reclaim || proportional_reclaim {
            continue;
        }
        let (nr_anon, nr_file) = (nr[0] + nr[1], nr[2] + nr[3]);
        if nr_anon == 0 || nr_file == 0 {
            break;
        }
        // Stop the kind with less left; scan the other only as far as the stopped one got.
        let (stop, other, left) = if nr_file > nr_anon { (0, 2, nr_anon) } else { (2, 0, nr_file) };
        let percentage = left * 100 / (targets[stop] + targets[stop + 1] + 1);
        nr[stop] = 0;
        nr[stop + 1] = 0;
        for l in [other, other + 1] {
            let scanned = targets[l] - nr[l];
            nr[l] = (targets[l] * (100 - percentage) / 100).saturating_sub(scanned);
        }
    }
    if input.can_reclaim_anon && inactive_is_low(lru, LruKind::Anon) {
        shrink_active_list(lru, sc, LruKind::Anon, SWAP_CLUSTER_MAX);
    }
}

/// `get_scan_count()`: pages to scan on each list of [`EVICTABLE`], `size >> priority`
/// split by kind. Without swap (no swap space, or `may_swap` off), only file; near OOM
/// (priority 0) both equally; with almost
/// no page cache left, only anon; in cache-trim mode only file; otherwise each kind in
/// proportion to swappiness over its cost.
fn get_scan_count(lru: &Lruvec, cost: &ReclaimCost, sc: &ScanControl, input: ScanBalanceInput) -> [u64; 4] {
    let size = |kind| lru.size(LruList::inactive(kind)) + lru.size(LruList::active(kind));
    // [anon, file] weights out of a denominator.
    let ([anon_w, file_w], den) = if !sc.may_swap || !input.can_reclaim_anon || size(LruKind::Anon) == 0 {
        ([0, 1], 1)
    } else if sc.priority == 0 && DEFAULT_SWAPPINESS > 0 {
        ([1, 1], 1)
    } else if input.file_is_tiny || size(LruKind::File) == 0 {
        ([1, 0], 1)
    } else if input.cache_trim_mode {
        ([0, 1], 1)
    } else {
        let [ap, fp] = pressure_fractions(cost.anon_cost, cost.file_cost, DEFAULT_SWAPPINESS);
        ([ap, fp], ap + fp)
    };
    // A list smaller than 2^priority pages is not scanned at this priority: 6.18 keeps a
    // floor of SWAP_CLUSTER_MAX only for the lists of a memory cgroup already deleted.
    EVICTABLE.map(|list| {
        let w = if list.kind() == LruKind::Anon { anon_w } else { file_w };
        (lru.size(list) >> sc.priority) * w / den
    })
}

/// `MAX_SWAPPINESS`: swappiness weighs anon against file out of this.
const MAX_SWAPPINESS: u64 = 200;

/// The anon and file shares of the scan (`calculate_pressure_balance`). Each side's cost is
/// smoothed by adding the total, so the cheaper side never takes all the pressure: however
/// costly one side gets, its share against the other's stays at least half of what
/// swappiness alone gives (a third of the scan at swappiness 100).
fn pressure_fractions(anon_cost: u64, file_cost: u64, swappiness: u64) -> [u64; 2] {
    let total = anon_cost + file_cost;
    let anon_cost = total + anon_cost;
    let file_cost = total + file_cost;
    let total = anon_cost + file_cost + 1;
    [swappiness * total / (anon_cost + 1), (MAX_SWAPPINESS - swappiness) * total / (file_cost + 1)]
}

/// `shrink_active_list()`: age `nr` pages from the active tail onto the inactive list
/// (their referenced bit is spent; a page used again gets another chance there).
fn shrink_active_list(lru: &mut Lruvec, sc: &mut ScanControl, kind: LruKind, nr: u64) {
    // `isolate_lru_folios` counts pages: a large folio is its pages' worth of the batch.
    let mut scanned = 0;
    while scanned < nr {
        let Some((pfn, page)) = lru.pop_tail(LruList::active(kind)) else {
            break;
        };
        scanned += 1 << page.order;
        // Deactivated, it is part of the workingset (`PG_workingset`).
        let page = super::lru::LruPage { referenced: false, young: false, workingset: true, ..page };
        lru.put(pfn, page, LruList::inactive(kind), page.zone as usize);
        sc.stat.pgdeactivate += 1 << page.order;
    }
}

/// `shrink_inactive_list()` (`shrink_folio_list`): from the inactive tail, keep a mapped
/// page its first look finds young from its fault, activate what was used since the last
/// look, what is still under writeback (kswapd meeting a marked page
/// again while the node is flagged counts it `nr_immediate`) and dirty page cache, which only
/// the owner's flusher can write (both marked `PG_reclaim`; a batch of nothing but dirty
/// pages not yet queued wakes the flusher); free what was written; evict the rest — file
/// pages are dropped, anonymous pages swapped out: freed at once on a synchronous device,
/// else written in one request and kept (`pswpout` counts the write). The pages scanned but
/// not freed count as rotated in the kind's cost.
fn shrink_inactive_list(
    lru: &mut Lruvec,
    cost: &mut ReclaimCost,
    sc: &mut ScanControl,
    kind: LruKind,
    nr: u64,
    out: &mut PageOut<'_>,
) {
    let list = LruList::inactive(kind);
    let (mut scanned, mut folios, mut reclaimed, mut io) = (0, 0, 0, 0);
    let mut writes = Vec::new();
    // `isolate_lru_folios`: the batch is `nr` pages, a large folio counting all of its
    // pages (one order-9 folio fills a batch of 32 and more); a folio of a zone the request
    // cannot use is set aside without counting (`pgskip`), until SWAP_CLUSTER_MAX_SKIPPED
    // folios have been, after which the zone test no longer applies.
    let mut taken = 0;
    let mut skipped = Vec::new();
    let mut unqueued_dirty = 0;
    while taken < nr {
        let Some((pfn, page)) = lru.pop_tail(list) else {
            break;
        };
        let pages = 1u64 << page.order;
        if page.zone as usize > sc.reclaim_idx && (skipped.len() as u64) < SWAP_CLUSTER_MAX_SKIPPED {
            skipped.push((pfn, page));
            continue;
        }
        taken += pages;
        scanned += pages;
        folios += 1;
        let state = if kind == LruKind::File {
            out.unmap.folio_check_dirty_writeback(pfn)
        } else {
            DirtyWriteback { dirty: false, writeback: page.writeback }
        };
        if state.writeback {
            if sc.kswapd && out.pgdat_writeback && (page.reclaim || page.writeback) {
                sc.nr.immediate += pages;
            } else {
                sc.nr.writeback += pages;
            }
        } else if state.dirty {
            unqueued_dirty += pages;
        }
        // `folio_check_references`: a page young for the first time since it was mapped (the
        // fault's own reference) is marked and kept for another trip round the inactive list
        // (`FOLIOREF_KEEP`); young and marked, it was used again: activated below. Not young,
        // it goes whatever its mark (a file page's mark only spares it from being written).
        let k = workingset_index(kind);
        if page.young && !page.referenced && !state.writeback {
            let page = super::lru::LruPage { young: false, referenced: true, ..page };
            lru.put(pfn, page, list, page.zone as usize);
            sc.stat.nr_ref_keep[k] += pages;
            continue;
        }
        // Under writeback, or page cache reclaim cannot write (`NR_VMSCAN_IMMEDIATE`):
        // activated with `PG_reclaim`, so the write's end brings it back to the inactive
        // tail. A used page is activated as it is.
        let mark = state.writeback || state.dirty;
        if (page.young && page.referenced) || mark {
            let reclaim = page.reclaim || (mark && kind == LruKind::File);
            let page = super::lru::LruPage { referenced: false, young: false, reclaim, ..page };
            lru.put(pfn, page, LruList::active(kind), page.zone as usize);
            sc.stat.pgactivate += pages;
            sc.stat.nr_activate[k] += pages;
            continue;
        }
        if !page.swapcache && !out.unmap.try_to_unmap(pfn, page.order, kind, page.workingset) {
            lru.put(pfn, page, LruList::active(kind), page.zone as usize);
            sc.stat.nr_activate[k] += pages;
            continue;
        }
        if kind == LruKind::Anon && !page.swapcache {
            io += pages;
            if out.swap.is_async() {
                writes.push((pfn, page.order));
                let page = super::lru::LruPage { writeback: true, swapcache: true, ..page };
                lru.put(pfn, page, list, page.zone as usize);
                continue;
            }
        }
        (out.free)(pfn, page.order);
        reclaimed += pages;
    }
    // Back at the list's head, the last set aside nearest it (`list_splice`).
    for (pfn, page) in skipped {
        lru.put(pfn, page, list, page.zone as usize);
    }
    if scanned > 0 && unqueued_dirty == scanned {
        // Flushers are behind: nudge them (`WB_REASON_VMSCAN`).
        out.unmap.wakeup_flusher_threads(out.now_us + sc.elapsed_us());
    }
    sc.nr.taken += scanned;
    sc.stat.priority_pages += scanned * u64::from(sc.priority);
    sc.nr_scanned += scanned;
    sc.nr_folios_scanned += folios;
    sc.throttled_us += out.swap.submit(out.now_us + sc.elapsed_us(), &writes);
    sc.nr_reclaimed += reclaimed;
    match kind {
        LruKind::Anon => {
            sc.stat.pgscan_anon += scanned;
            sc.stat.pgsteal_anon += reclaimed;
            sc.stat.pswpout += io;
        }
        LruKind::File | LruKind::Slab => {
            sc.stat.pgscan_file += scanned;
            sc.stat.pgsteal_file += reclaimed;
        }
    }
    cost.note(kind, io, scanned - reclaimed, lru.lru_pages());
}

/// `shrink_slab()`: shrinkers free `(freeable >> priority) * 4 / DEFAULT_SEEKS` objects;
/// a slab page goes when its objects do (a referenced one is rotated once).
fn shrink_slab(lru: &mut Lruvec, sc: &mut ScanControl, out: &mut PageOut<'_>) {
    let freeable = lru.size(LruList::Slab);
    let mut nr = (freeable >> sc.priority) * 2;
    if nr == 0 && freeable > 0 && sc.priority < super::DEF_PRIORITY {
        nr = freeable.min(SWAP_CLUSTER_MAX);
    }
    let mut taken = 0;
    while taken < nr {
        let Some((pfn, page)) = lru.pop_tail(LruList::Slab) else {
            break;
        };
        taken += 1;
        sc.stat.slabs_scanned += 1;
        if page.zone as usize > sc.reclaim_idx
            || page.referenced
            || !out.unmap.try_to_unmap(pfn, page.order, LruKind::Slab, false)
        {
            let page = super::lru::LruPage { referenced: false, ..page };
            lru.put(pfn, page, LruList::Slab, page.zone as usize);
            continue;
        }
        (out.free)(pfn, page.order);
        sc.nr_reclaimed += 1 << page.order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vmscan::DEF_PRIORITY;

    /// `anon` inactive anonymous and `file` inactive file pages, with plenty of free memory.
    fn lists(anon: u64, file: u64) -> Lruvec {
        let mut lru = Lruvec::default();
        for pfn in 0..anon {
            lru.add(pfn, 0, 0, LruList::InactiveAnon, false);
        }
        for pfn in anon..anon + file {
            lru.add(pfn, 0, 0, LruList::InactiveFile, false);
        }
        lru
    }

    /// [`get_scan_count`] by kind, as a pass prepares it.
    fn scan(lru: &Lruvec, cost: &ReclaimCost, sc: &ScanControl, node: NodeFree) -> [u64; 2] {
        let nr = get_scan_count(lru, cost, sc, prepare_scan_control(lru, cost, sc, node, true));
        [nr[0] + nr[1], nr[2] + nr[3]]
    }

    const ROOMY: NodeFree = NodeFree { free: 1 << 20, high_wmark: 1024 };

    fn sc(priority: u32) -> ScanControl {
        ScanControl { priority, ..ScanControl::new(SWAP_CLUSTER_MAX, 0, 0, true) }
    }

    /// A file page refaulted into activation: cache-trim is off until the next snapshot.
    fn refaulting() -> ReclaimCost {
        let mut cost = ReclaimCost::default();
        cost.note_refault(LruKind::File, 1, true, true, 1 << 30);
        cost.file_cost = 0;
        cost
    }

    #[test]
    fn anon_keeps_about_a_sixth_of_the_scan_after_heavy_swap() {
        // 1000 swapped pages cost 1000 * SWAP_CLUSTER_MAX; file reclaim cost nothing.
        let lru = lists(1 << 16, 1 << 16);
        let cost = ReclaimCost { anon_cost: 1000 * SWAP_CLUSTER_MAX, ..refaulting() };
        let [anon, file] = scan(&lru, &cost, &sc(4), ROOMY);
        // Smoothed: anon' = 2 * 32000, file' = 32000, so anon gets 60 * 96000 / 64000 = 90
        // against file's 140 * 96000 / 32000 = 420: 90 / 510 of the scan, about 17.6%.
        let share = anon as f64 / (anon + file) as f64;
        assert!((0.17..0.18).contains(&share), "anon {anon}, file {file}: share {share}");
    }

    #[test]
    fn an_activating_refault_blocks_cache_trim_for_the_whole_reclaim_cycle() {
        // Enough anon to be scanned at priority 12 (a list under 2^priority pages is not).
        let lru = lists(1 << 16, 1 << 16);
        let mut cost = refaulting();
        for pass in 0..3 {
            let [anon, _] = scan(&lru, &cost, &sc(DEF_PRIORITY - pass), ROOMY);
            assert!(anon > 0, "pass {pass}: cache-trim despite the refault");
        }
        cost.snapshot_refaults();
        let [anon, file] = scan(&lru, &cost, &sc(DEF_PRIORITY), ROOMY);
        assert_eq!(anon, 0, "the next cycle trims the cache again");
        assert!(file > 0);
    }

    #[test]
    fn refaults_that_do_not_activate_leave_cache_trim_on() {
        let lru = lists(1 << 12, 1 << 16);
        let mut cost = ReclaimCost::default();
        cost.note_refault(LruKind::File, 100, false, false, 1 << 30);
        let [anon, file] = scan(&lru, &cost, &sc(DEF_PRIORITY), ROOMY);
        assert_eq!((anon, cost.workingset_activate), (0, [0, 0]));
        assert!(file > 0);
    }

    #[test]
    fn only_a_refault_of_a_page_once_active_makes_its_kind_costlier() {
        let mut cost = ReclaimCost::default();
        cost.note_refault(LruKind::Anon, 8, true, false, 1 << 30);
        assert_eq!((cost.anon_cost, cost.workingset_activate), (0, [8, 0]), "never active: no cost");
        cost.note_refault(LruKind::Anon, 8, false, true, 1 << 30);
        assert_eq!(cost.anon_cost, 0, "too far to activate: no cost");
        cost.note_refault(LruKind::Anon, 8, true, true, 1 << 30);
        assert_eq!(cost.anon_cost, 8 * SWAP_CLUSTER_MAX, "restored workingset");
    }

    #[test]
    fn priority_zero_scans_both_lists_whole() {
        let lru = lists(1 << 12, 1 << 12);
        let cost = ReclaimCost { anon_cost: 1 << 20, ..refaulting() };
        assert_eq!(scan(&lru, &cost, &sc(0), ROOMY), [1 << 12, 1 << 12]);
    }

    /// Regression (stop 45): a list too small to be scanned at the priority got a floor of
    /// 32 pages, which 6.18 keeps only for the lists of a deleted memory cgroup. On B5 every
    /// kswapd pass at priority 12 then took 32 pages of a few thousand of page cache and the
    /// node was soon balanced, where the real kswapd, its page cache lists too small and its
    /// anonymous pages young, went down to priority 4.4 on average.
    #[test]
    fn a_list_below_two_to_the_priority_is_not_scanned() {
        let lru = lists(1 << 16, 4000);
        let [anon, file] = scan(&lru, &ReclaimCost::default(), &sc(DEF_PRIORITY), ROOMY);
        assert_eq!(file, 0, "4,000 pages >> 12 is nothing to scan");
        assert!(anon > 0);
        let [_, file] = scan(&lru, &ReclaimCost::default(), &sc(8), ROOMY);
        assert!(file > 0, "at priority 8 the page cache is scanned");
    }

    #[test]
    fn a_tiny_page_cache_under_the_high_watermark_leaves_only_anon() {
        let lru = lists(1 << 12, 8);
        let tight = NodeFree { free: 100, high_wmark: 200 };
        let [anon, file] = scan(&lru, &ReclaimCost::default(), &sc(2), tight);
        assert_eq!((anon, file), (1 << 10, 0));
        let [_, file] = scan(&lru, &ReclaimCost::default(), &sc(2), ROOMY);
        assert!(file > 0, "with free memory above high the cache is scanned too");
    }

    /// Every page may go; freeing is the caller's business.
    struct Everything;

    impl Unmap for Everything {
        fn try_to_unmap(&self, _pfn: u64, _order: u32, _kind: LruKind, _workingset: bool) -> bool {
            true
        }
    }

    fn pass(lru: &mut Lruvec, cost: &mut ReclaimCost, sc: &mut ScanControl) {
        pass_with(lru, cost, sc, &mut SwapDevice::synchronous(), false);
    }

    fn pass_with(
        lru: &mut Lruvec,
        cost: &mut ReclaimCost,
        sc: &mut ScanControl,
        swap: &mut SwapDevice,
        pgdat_writeback: bool,
    ) {
        let mut out = PageOut { unmap: &Everything, free: &mut |_, _| {}, swap, now_us: 0, pgdat_writeback };
        shrink_node(lru, cost, sc, ROOMY, &mut out);
    }

    #[test]
    fn swapped_pages_stay_under_writeback_until_written_then_the_next_scan_frees_them() {
        let mut lru = lists(64, 0);
        let mut dev = SwapDevice::block(crate::vmscan::SwapLatency::default());
        let mut cost = ReclaimCost::default();
        let mut first = ScanControl { priority: 0, ..ScanControl::new(1 << 10, 0, 0, true) };
        pass_with(&mut lru, &mut cost, &mut first, &mut dev, false);
        assert_eq!((first.stat.pswpout, first.nr_reclaimed), (64, 0), "written, not freed");
        assert_eq!(lru.size(LruList::InactiveAnon), 64, "kept on the inactive list");
        // Met again before the write completed: activated (kswapd on a flagged node: immediate).
        let mut again = ScanControl { priority: 0, ..ScanControl::new(1 << 10, 0, 0, true) };
        pass_with(&mut lru, &mut cost, &mut again, &mut dev, true);
        assert_eq!((again.nr.immediate, again.nr.taken, again.stat.pswpout), (64, 64, 0));
        assert_eq!((again.stat.pgactivate, again.nr_reclaimed), (64, 0));
        // Written: back on the inactive list by aging, the scan frees them without new I/O.
        for pfn in dev.complete(u64::MAX) {
            lru.end_writeback(pfn);
        }
        let mut aged = ScanControl { priority: 0, ..ScanControl::new(1 << 10, 0, 0, true) };
        pass_with(&mut lru, &mut cost, &mut aged, &mut dev, false);
        pass_with(&mut lru, &mut cost, &mut aged, &mut dev, false);
        assert_eq!((aged.nr_reclaimed, aged.stat.pswpout), (64, 0));
    }

    #[test]
    fn a_completed_write_rotates_the_page_to_the_inactive_tail() {
        let mut lru = lists(2, 0);
        let mut dev = SwapDevice::block(crate::vmscan::SwapLatency::default());
        let mut sc1 = ScanControl { priority: 0, nr_to_reclaim: 1, ..ScanControl::new(1, 0, 0, false) };
        shrink_inactive_list(
            &mut lru,
            &mut ReclaimCost::default(),
            &mut sc1,
            LruKind::Anon,
            1,
            &mut PageOut {
                unmap: &Everything,
                free: &mut |_, _| {},
                swap: &mut dev,
                now_us: 0,
                pgdat_writeback: false,
            },
        );
        assert_eq!(lru.get(0).map(|p| p.writeback), Some(true), "the tail page went to the head");
        lru.end_writeback(0);
        assert_eq!(lru.pop_tail(LruList::InactiveAnon).map(|(pfn, p)| (pfn, p.swapcache)), Some((0, true)));
    }

    /// One batch of `nr` pages off the inactive list of `kind` in `lru`, every page free to
    /// go (swap is synchronous); the pfns freed.
    fn batch(lru: &mut Lruvec, sc: &mut ScanControl, kind: LruKind, nr: u64) -> Vec<(u64, u32)> {
        let mut freed = Vec::new();
        let mut dev = SwapDevice::synchronous();
        let mut out = PageOut {
            unmap: &Everything,
            free: &mut |pfn, order| freed.push((pfn, order)),
            swap: &mut dev,
            now_us: 0,
            pgdat_writeback: false,
        };
        shrink_inactive_list(lru, &mut ReclaimCost::default(), sc, kind, nr, &mut out);
        freed
    }

    /// Anonymous pages 0-2 mapped by their faults (young), page 3 added unmapped, at the tail.
    fn three_mapped_one_not() -> Lruvec {
        let mut lru = Lruvec::default();
        for pfn in 0..3 {
            lru.add(pfn, 0, 0, LruList::InactiveAnon, true);
        }
        lru.add(3, 0, 0, LruList::InactiveAnon, false);
        lru
    }

    /// `folio_check_references`: a page a fault mapped is young from that fault, so the
    /// first look only marks it and keeps it on the inactive list; the second look, with no
    /// use in between, takes it; a page used again after the mark is activated. A page added
    /// unmapped goes at the first look. (Before, the instantiating fault's reference was not
    /// modelled: B5's real kswapd kept 96% of the anonymous pages it scanned on their first
    /// look, `nr_ref_keep` in `mm_vmscan_lru_shrink_inactive`, where the replay swapped them.)
    #[test]
    fn a_mapped_page_is_kept_at_its_first_look_and_taken_at_its_second() {
        let mut lru = three_mapped_one_not();
        let mut first = ScanControl { priority: 0, ..ScanControl::new(1 << 10, 0, 0, true) };
        assert_eq!(
            batch(&mut lru, &mut first, LruKind::Anon, 4),
            vec![(3, 0)],
            "only the unmapped page goes"
        );
        assert_eq!((first.nr_scanned, first.nr_reclaimed, first.stat.pgactivate), (4, 1, 0));
        for pfn in 0..3 {
            let page = lru.get(pfn).unwrap();
            assert!(
                page.list == LruList::InactiveAnon && page.referenced && !page.young,
                "{pfn}: kept, marked"
            );
        }
        lru.mark_accessed(1);
        let mut second = ScanControl { priority: 0, ..ScanControl::new(1 << 10, 0, 0, true) };
        assert_eq!(batch(&mut lru, &mut second, LruKind::Anon, 3), vec![(0, 0), (2, 0)]);
        assert_eq!(lru.get(1).map(|p| p.list), Some(LruList::ActiveAnon), "used again: activated");
    }

    /// The looks are counted as the kernel's tracepoint counts them: kept young
    /// (`nr_ref_keep`), activated (`nr_activate_*`), and the scan weighted by its priority.
    #[test]
    fn the_looks_are_counted_as_the_tracepoint_counts_them() {
        let mut lru = three_mapped_one_not();
        let mut first = ScanControl { priority: 2, ..ScanControl::new(1 << 10, 0, 0, true) };
        batch(&mut lru, &mut first, LruKind::Anon, 4);
        assert_eq!((first.stat.nr_ref_keep, first.stat.nr_activate), ([3, 0], [0, 0]));
        assert_eq!(first.stat.priority_pages, 4 * 2);
        lru.mark_accessed(1);
        let mut second = ScanControl { priority: 1, ..ScanControl::new(1 << 10, 0, 0, true) };
        batch(&mut lru, &mut second, LruKind::Anon, 3);
        assert_eq!((second.stat.nr_ref_keep, second.stat.nr_activate), ([0, 0], [1, 0]));
        assert_eq!(second.stat.priority_pages, 3);
    }

    /// Regression: a batch counted folios, not pages, so a batch of 32 over huge page cache
    /// folios freed 32 of them (16,384 pages) where 6.18 frees one (`isolate_lru_folios`
    /// adds each folio's pages to `scan`). Direct reclaim for a huge page took 11,000 pages
    /// in a pass where the kernel's took 2,567 (5 folios of 512 and 7 base pages).
    #[test]
    fn a_batch_counts_a_large_folio_by_its_pages() {
        let mut lru = Lruvec::default();
        for i in 0..64 {
            lru.add(i << 9, 9, 0, LruList::InactiveFile, false);
        }
        for pfn in 1 << 20..(1 << 20) + 40 {
            lru.add(pfn, 0, 0, LruList::InactiveFile, false);
        }
        let mut sc = ScanControl { priority: 0, ..ScanControl::new(1 << 20, 0, 0, false) };
        // The first added is the tail: the huge folios come first.
        let freed = batch(&mut lru, &mut sc, LruKind::File, SWAP_CLUSTER_MAX);
        assert_eq!(freed, vec![(0, 9)], "one huge folio fills the batch");
        assert_eq!((sc.nr_scanned, sc.nr_reclaimed), (512, 512));
        // The active list ages by pages too.
        for i in 0..4 {
            lru.add((1 << 21) + (i << 9), 9, 0, LruList::ActiveFile, false);
        }
        shrink_active_list(&mut lru, &mut sc, LruKind::File, SWAP_CLUSTER_MAX);
        assert_eq!(lru.size(LruList::ActiveFile), 3 << 9, "one folio deactivated");
    }

    /// Folios of zones the request cannot use are set aside without filling the batch, and
    /// stay on the list.
    #[test]
    fn folios_of_zones_out_of_reach_do_not_fill_the_batch() {
        let mut lru = Lruvec::default();
        for pfn in 0..64 {
            lru.add(pfn, 0, 2, LruList::InactiveFile, false);
        }
        for pfn in 64..128 {
            lru.add(pfn, 0, 1, LruList::InactiveFile, false);
        }
        let mut sc = ScanControl { priority: 0, ..ScanControl::new(1 << 20, 0, 1, false) };
        let freed = batch(&mut lru, &mut sc, LruKind::File, SWAP_CLUSTER_MAX);
        assert_eq!(freed, (64..96).map(|p| (p, 0)).collect::<Vec<_>>());
        assert_eq!(lru.size(LruList::InactiveFile), 96, "the 64 out of reach are kept");
        assert!((0..64).all(|pfn| lru.get(pfn).is_some()));
    }

    #[test]
    fn a_refaulting_workingset_ages_the_active_file_list() {
        // Half as much active as inactive file: the inactive list is not low.
        let mut lru = lists(1 << 10, 1 << 14);
        for pfn in 1 << 20..(1 << 20) + (1 << 13) {
            lru.add(pfn, 0, 0, LruList::ActiveFile, false);
        }
        let mut quiet = ReclaimCost::default();
        let mut sc0 = sc(DEF_PRIORITY - 2);
        pass(&mut lru, &mut quiet, &mut sc0);
        assert_eq!(sc0.stat.pgdeactivate, 0, "a settled workingset stays active");
        let mut sc1 = sc(DEF_PRIORITY - 2);
        pass(&mut lru, &mut refaulting(), &mut sc1);
        assert!(sc1.stat.pgdeactivate > 0, "refaults since the snapshot age the active list");
    }

    #[test]
    fn kswapd_stops_in_proportion_once_it_reclaimed_enough_direct_reclaim_at_def_priority_does_not() {
        let (anon, file) = (1 << 16, 1 << 16);
        let targets = |priority| {
            let nr = get_scan_count(&lists(anon, file), &refaulting(), &sc(priority), {
                prepare_scan_control(&lists(anon, file), &refaulting(), &sc(priority), ROOMY, true)
            });
            nr.iter().sum::<u64>()
        };
        let mut kswapd = sc(6);
        pass(&mut lists(anon, file), &mut refaulting(), &mut kswapd);
        assert!(
            kswapd.nr_scanned < targets(6) / 2,
            "kswapd scanned {} of its {} target",
            kswapd.nr_scanned,
            targets(6)
        );
        let mut direct = ScanControl::new(SWAP_CLUSTER_MAX, 0, 0, false);
        let (anon, file) = (1 << 19, 1 << 19);
        let mut lru = lists(anon, file);
        let nr = get_scan_count(
            &lru,
            &refaulting(),
            &direct,
            prepare_scan_control(&lru, &refaulting(), &direct, ROOMY, true),
        );
        pass(&mut lru, &mut refaulting(), &mut direct);
        assert!(nr.iter().sum::<u64>() > 2 * SWAP_CLUSTER_MAX, "more than one round of batches");
        assert_eq!(
            direct.nr_scanned,
            nr.iter().sum::<u64>(),
            "direct reclaim at DEF_PRIORITY scans its batch"
        );
    }
}
