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
use super::{ScanControl, Unmap, SWAP_CLUSTER_MAX};

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
    /// evicted while still part of the workingset (`WORKINGSET_ACTIVATE`).
    pub fn note_refault(&mut self, kind: LruKind, pages: u64, activated: bool, lru_pages: u64) {
        if kind == LruKind::Slab {
            return;
        }
        if activated {
            self.workingset_activate[workingset_index(kind)] += pages;
        }
        self.note(kind, pages, 0, lru_pages);
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
            high_wmark: managed().map(|z| z.wmark_pages(crate::watermark::WatermarkLevel::High)).sum(),
        }
    }
}

/// `struct scan_control`'s balance fields, prepared once per pass (`prepare_scan_control`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScanBalanceInput {
    /// Only the page cache is trimmed: plenty of inactive file, none of it refaulting.
    cache_trim_mode: bool,
    /// So little page cache is left, with free memory under the high watermarks, that
    /// anonymous memory must go (`file_is_tiny`).
    file_is_tiny: bool,
}

/// `prepare_scan_control()`: the file list may be deactivated (so cache-trim is off) when
/// file pages refaulted into activation since the last reclaim invocation's snapshot or
/// the inactive file list is low; likewise for anon.
fn prepare_scan_control(
    lru: &Lruvec,
    cost: &ReclaimCost,
    sc: &ScanControl,
    node: NodeFree,
) -> ScanBalanceInput {
    let deactivate_file = cost.refaulting(LruKind::File) || inactive_is_low(lru, LruKind::File);
    let deactivate_anon = cost.refaulting(LruKind::Anon) || inactive_is_low(lru, LruKind::Anon);
    let inactive_file = lru.size(LruList::InactiveFile);
    let file = inactive_file + lru.size(LruList::ActiveFile);
    ScanBalanceInput {
        cache_trim_mode: inactive_file >> sc.priority > 0 && !deactivate_file,
        file_is_tiny: file + node.free <= node.high_wmark
            && !deactivate_anon
            && lru.size(LruList::InactiveAnon) >> sc.priority > 0,
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

/// `shrink_lruvec()` + `shrink_slab()` for one pass at `sc.priority`. Reclaimed pages are
/// unmapped by `unmap` (their owner forgets them) and handed to `free`.
pub fn shrink_node(
    lru: &mut Lruvec,
    cost: &mut ReclaimCost,
    sc: &mut ScanControl,
    node: NodeFree,
    unmap: &dyn Unmap,
    free: &mut dyn FnMut(u64, u32),
) {
    let [nr_anon, nr_file] = get_scan_count(lru, cost, sc, node);
    let mut left = [nr_anon, nr_file];
    let kinds = [LruKind::Anon, LruKind::File];
    while left.iter().any(|&n| n > 0) {
        for (i, kind) in kinds.into_iter().enumerate() {
            if left[i] == 0 {
                continue;
            }
            let batch = left[i].min(SWAP_CLUSTER_MAX);
            left[i] -= batch;
            if inactive_is_low(lru, kind) {
                shrink_active_list(lru, sc, kind, batch);
            }
            shrink_inactive_list(lru, cost, sc, kind, batch, unmap, free);
        }
        if sc.nr_reclaimed >= sc.nr_to_reclaim && !sc.kswapd {
            break;
        }
    }
    shrink_slab(lru, sc, unmap, free);
}

/// `get_scan_count()`: pages to scan on the anonymous and the file lists. Without swap,
/// only file; near OOM (priority 0) both equally; with almost no page cache left, only anon;
/// in cache-trim mode only file; otherwise each in proportion to swappiness over its cost.
fn get_scan_count(lru: &Lruvec, cost: &ReclaimCost, sc: &ScanControl, node: NodeFree) -> [u64; 2] {
    let size = |kind| lru.size(LruList::inactive(kind)) + lru.size(LruList::active(kind));
    let anon = size(LruKind::Anon) >> sc.priority;
    let file = size(LruKind::File) >> sc.priority;
    // The smallest lists still get scanned when nothing else would be.
    let floor = |n: u64, total: u64| if n == 0 && total > 0 { total.min(SWAP_CLUSTER_MAX) } else { n };
    if !sc.may_swap || size(LruKind::Anon) == 0 {
        return [0, floor(file, size(LruKind::File))];
    }
    if sc.priority == 0 && DEFAULT_SWAPPINESS > 0 {
        return [anon, file];
    }
    let input = prepare_scan_control(lru, cost, sc, node);
    if input.file_is_tiny || size(LruKind::File) == 0 {
        return [floor(anon, size(LruKind::Anon)), 0];
    }
    if input.cache_trim_mode {
        return [0, floor(file, size(LruKind::File))];
    }
    let [ap, fp] = pressure_fractions(cost.anon_cost, cost.file_cost, DEFAULT_SWAPPINESS);
    let den = ap + fp;
    [
        floor(anon * ap / den, size(LruKind::Anon) * ap / den),
        floor(file * fp / den, size(LruKind::File) * fp / den),
    ]
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
    let mut scanned = 0;
    while scanned < nr {
        let Some((pfn, page)) = lru.pop_tail(LruList::active(kind)) else {
            break;
        };
        scanned += 1;
        let page = super::lru::LruPage { referenced: false, ..page };
        lru.put(pfn, page, LruList::inactive(kind), page.zone as usize);
        sc.stat.pgdeactivate += 1 << page.order;
    }
}

/// `shrink_inactive_list()`: from the inactive tail, activate what was used since the last
/// look, evict the rest (anonymous pages are swapped out, file pages dropped).
fn shrink_inactive_list(
    lru: &mut Lruvec,
    cost: &mut ReclaimCost,
    sc: &mut ScanControl,
    kind: LruKind,
    nr: u64,
    unmap: &dyn Unmap,
    free: &mut dyn FnMut(u64, u32),
) {
    let list = LruList::inactive(kind);
    let (mut scanned, mut reclaimed, mut rotated, mut io) = (0, 0, 0, 0);
    let mut taken = 0;
    while taken < nr {
        let Some((pfn, page)) = lru.pop_tail(list) else {
            break;
        };
        taken += 1;
        let pages = 1u64 << page.order;
        if page.zone as usize > sc.reclaim_idx {
            // A page of a zone the request cannot use (`pgskip`): keep it.
            lru.put(pfn, page, list, page.zone as usize);
            continue;
        }
        scanned += pages;
        if page.referenced {
            let page = super::lru::LruPage { referenced: false, ..page };
            lru.put(pfn, page, LruList::active(kind), page.zone as usize);
            sc.stat.pgactivate += pages;
            rotated += pages;
            continue;
        }
        if !unmap.try_to_unmap(pfn, page.order, kind) {
            lru.put(pfn, page, LruList::active(kind), page.zone as usize);
            rotated += pages;
            continue;
        }
        free(pfn, page.order);
        reclaimed += pages;
        if kind == LruKind::Anon {
            io += pages;
        }
    }
    sc.nr_scanned += scanned;
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
    cost.note(kind, io, rotated, lru.lru_pages());
}

/// `shrink_slab()`: shrinkers free `(freeable >> priority) * 4 / DEFAULT_SEEKS` objects;
/// a slab page goes when its objects do (a referenced one is rotated once).
fn shrink_slab(lru: &mut Lruvec, sc: &mut ScanControl, unmap: &dyn Unmap, free: &mut dyn FnMut(u64, u32)) {
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
            || !unmap.try_to_unmap(pfn, page.order, LruKind::Slab)
        {
            let page = super::lru::LruPage { referenced: false, ..page };
            lru.put(pfn, page, LruList::Slab, page.zone as usize);
            continue;
        }
        free(pfn, page.order);
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
            lru.add(pfn, 0, 0, LruList::InactiveAnon);
        }
        for pfn in anon..anon + file {
            lru.add(pfn, 0, 0, LruList::InactiveFile);
        }
        lru
    }

    const ROOMY: NodeFree = NodeFree { free: 1 << 20, high_wmark: 1024 };

    fn sc(priority: u32) -> ScanControl {
        ScanControl { priority, ..ScanControl::new(SWAP_CLUSTER_MAX, 0, 0, true) }
    }

    /// A file page refaulted into activation: cache-trim is off until the next snapshot.
    fn refaulting() -> ReclaimCost {
        let mut cost = ReclaimCost::default();
        cost.note_refault(LruKind::File, 1, true, 1 << 30);
        cost.file_cost = 0;
        cost
    }

    #[test]
    fn anon_keeps_about_a_sixth_of_the_scan_after_heavy_swap() {
        // 1000 swapped pages cost 1000 * SWAP_CLUSTER_MAX; file reclaim cost nothing.
        let lru = lists(1 << 16, 1 << 16);
        let cost = ReclaimCost { anon_cost: 1000 * SWAP_CLUSTER_MAX, ..refaulting() };
        let [anon, file] = get_scan_count(&lru, &cost, &sc(4), ROOMY);
        // Smoothed: anon' = 2 * 32000, file' = 32000, so anon gets 60 * 96000 / 64000 = 90
        // against file's 140 * 96000 / 32000 = 420: 90 / 510 of the scan, about 17.6%.
        let share = anon as f64 / (anon + file) as f64;
        assert!((0.17..0.18).contains(&share), "anon {anon}, file {file}: share {share}");
    }

    #[test]
    fn an_activating_refault_blocks_cache_trim_for_the_whole_reclaim_cycle() {
        let lru = lists(1 << 12, 1 << 16);
        let mut cost = refaulting();
        for pass in 0..3 {
            let [anon, _] = get_scan_count(&lru, &cost, &sc(DEF_PRIORITY - pass), ROOMY);
            assert!(anon > 0, "pass {pass}: cache-trim despite the refault");
        }
        cost.snapshot_refaults();
        let [anon, file] = get_scan_count(&lru, &cost, &sc(DEF_PRIORITY), ROOMY);
        assert_eq!(anon, 0, "the next cycle trims the cache again");
        assert!(file > 0);
    }

    #[test]
    fn refaults_that_do_not_activate_leave_cache_trim_on() {
        let lru = lists(1 << 12, 1 << 16);
        let mut cost = ReclaimCost::default();
        cost.note_refault(LruKind::File, 100, false, 1 << 30);
        let [anon, file] = get_scan_count(&lru, &cost, &sc(DEF_PRIORITY), ROOMY);
        assert_eq!((anon, cost.workingset_activate), (0, [0, 0]));
        assert!(file > 0);
    }

    #[test]
    fn priority_zero_scans_both_lists_whole() {
        let lru = lists(1 << 12, 1 << 12);
        let cost = ReclaimCost { anon_cost: 1 << 20, ..refaulting() };
        assert_eq!(get_scan_count(&lru, &cost, &sc(0), ROOMY), [1 << 12, 1 << 12]);
    }

    #[test]
    fn a_tiny_page_cache_under_the_high_watermark_leaves_only_anon() {
        let lru = lists(1 << 12, 8);
        let tight = NodeFree { free: 100, high_wmark: 200 };
        let [anon, file] = get_scan_count(&lru, &ReclaimCost::default(), &sc(2), tight);
        assert_eq!((anon, file), (1 << 10, 0));
        let [_, file] = get_scan_count(&lru, &ReclaimCost::default(), &sc(2), ROOMY);
        assert!(file > 0, "with free memory above high the cache is scanned too");
    }
}
