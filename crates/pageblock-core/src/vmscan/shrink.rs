//! Reclaim from the LRU lists (`shrink_lruvec`, `get_scan_count`, `shrink_active_list`,
//! `shrink_inactive_list`, `inactive_is_low`, `shrink_slab`), the classic two-list LRU
//! (not MGLRU).
//!
//! How much of each list a pass scans: `size >> priority` (priority 12 → 1/4096 of the list,
//! each retry at a lower priority doubles it), split between anonymous and file memory by
//! `vm.swappiness` weighted against what reclaiming each type has cost lately — swap-out
//! I/O and refaults make a type expensive (`lru_note_cost`). While the inactive file list is
//! large and files are not refaulting, only the page cache is trimmed (`cache_trim_mode`).

use super::lru::{LruKind, LruList, Lruvec};
use super::{ScanControl, Unmap, SWAP_CLUSTER_MAX};

/// `vm.swappiness` default.
pub const DEFAULT_SWAPPINESS: u64 = 60;

/// The reclaim cost state of an lruvec (`lruvec->anon_cost`, `file_cost`, refault stamps).
#[derive(Clone, Debug, Default)]
pub struct ReclaimCost {
    /// Recent cost of reclaiming anonymous pages.
    pub anon_cost: u64,
    /// Recent cost of reclaiming file pages.
    pub file_cost: u64,
    /// File refaults counted so far, and the count at the last reclaim cycle.
    pub file_refaults: u64,
    file_refaults_seen: u64,
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

    /// `lru_note_cost_refault()`: a reclaimed page was needed again.
    pub fn note_refault(&mut self, kind: LruKind, pages: u64, lru_pages: u64) {
        if kind == LruKind::File {
            self.file_refaults += pages;
        }
        self.note(kind, pages, 0, lru_pages);
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
    unmap: &dyn Unmap,
    free: &mut dyn FnMut(u64, u32),
) {
    let [nr_anon, nr_file] = get_scan_count(lru, cost, sc);
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

/// `get_scan_count()`: pages to scan on the anonymous and the file inactive lists.
fn get_scan_count(lru: &Lruvec, cost: &mut ReclaimCost, sc: &mut ScanControl) -> [u64; 2] {
    let size = |kind| lru.size(LruList::inactive(kind)) + lru.size(LruList::active(kind));
    let anon = size(LruKind::Anon) >> sc.priority;
    let file = size(LruKind::File) >> sc.priority;
    // The smallest lists still get scanned when nothing else would be.
    let floor = |n: u64, total: u64| if n == 0 && total > 0 { total.min(SWAP_CLUSTER_MAX) } else { n };
    let refaulting = cost.file_refaults != cost.file_refaults_seen;
    cost.file_refaults_seen = cost.file_refaults;
    let inactive_file = lru.size(LruList::InactiveFile);
    let cache_trim = inactive_file >> sc.priority > 0 && !refaulting && !inactive_is_low(lru, LruKind::File);
    if !sc.may_swap || size(LruKind::Anon) == 0 || cache_trim {
        return [0, floor(file, size(LruKind::File))];
    }
    if size(LruKind::File) == 0 {
        return [floor(anon, size(LruKind::Anon)), 0];
    }
    let total = cost.anon_cost + cost.file_cost + 1;
    let ap = DEFAULT_SWAPPINESS * total / (cost.anon_cost + 1);
    let fp = (200 - DEFAULT_SWAPPINESS) * total / (cost.file_cost + 1);
    let den = ap + fp;
    [
        floor(anon * ap / den, size(LruKind::Anon) * ap / den),
        floor(file * fp / den, size(LruKind::File) * fp / den),
    ]
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
