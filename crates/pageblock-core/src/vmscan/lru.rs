//! The node's LRU lists (`struct lruvec`): anonymous and file pages on an active and an
//! inactive list each, plus reclaimable slab (what the shrinkers free), oldest at the tail.
//!
//! A list is a queue of (pfn, generation) entries with lazy deletion: removing or moving a
//! page bumps its generation in the index, and a stale entry is dropped when the scan meets
//! it. Every operation is O(1) amortised. The index is a table by pfn, not a hash map: a
//! scan reads it in LRU order, which is random in pfn, and a table costs one cache miss a
//! page where a hash map costs two.
//!
//! Invariants: a pfn is in the index at most once; `nr_pages[list]` is the sum of the orders'
//! pages of the index entries on `list`, and `zone_pages` splits the same pages by zone.

use std::collections::VecDeque;

use crate::pfn_table::PfnTable;

use crate::config::MAX_NR_ZONES;

/// The kinds of reclaimable memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LruKind {
    /// Anonymous memory: reclaimed by swapping out.
    Anon,
    /// Page cache: clean pages are dropped; reading them again is a refault.
    File,
    /// Reclaimable slab (dentries, inodes): freed by shrinkers.
    Slab,
}

/// One list (`enum lru_list`, with slab as a list of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LruList {
    /// `LRU_INACTIVE_ANON`.
    InactiveAnon,
    /// `LRU_ACTIVE_ANON`.
    ActiveAnon,
    /// `LRU_INACTIVE_FILE`.
    InactiveFile,
    /// `LRU_ACTIVE_FILE`.
    ActiveFile,
    /// Reclaimable slab pages, oldest first.
    Slab,
}

/// Number of [`LruList`]s.
pub const NR_LRU_LISTS: usize = 5;

impl LruList {
    /// The inactive list of `kind` (slab has one list).
    pub const fn inactive(kind: LruKind) -> LruList {
        match kind {
            LruKind::Anon => LruList::InactiveAnon,
            LruKind::File => LruList::InactiveFile,
            LruKind::Slab => LruList::Slab,
        }
    }

    /// The active list of `kind`.
    pub const fn active(kind: LruKind) -> LruList {
        match kind {
            LruKind::Anon => LruList::ActiveAnon,
            LruKind::File => LruList::ActiveFile,
            LruKind::Slab => LruList::Slab,
        }
    }

    /// The kind of page on this list.
    pub const fn kind(self) -> LruKind {
        match self {
            LruList::InactiveAnon | LruList::ActiveAnon => LruKind::Anon,
            LruList::InactiveFile | LruList::ActiveFile => LruKind::File,
            LruList::Slab => LruKind::Slab,
        }
    }
}

/// What the index knows of a page on a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LruPage {
    /// The list it is on.
    pub list: LruList,
    /// Block order (a THP is one order-9 folio).
    pub order: u32,
    /// The zone it lies in.
    pub zone: u8,
    /// `PG_referenced`: the last look found it used (or the owner marked it accessed).
    pub referenced: bool,
    /// Its page table entries are young: it was mapped by a fault, or used through a
    /// mapping, since reclaim last looked (`folio_referenced`). Every mapped page starts
    /// young from the fault that instantiated it, so its first look only marks it.
    pub young: bool,
    /// Was on an active list once (`PG_workingset`, set when it is deactivated): its shadow
    /// entry says so, and only such a page's refault makes its kind costlier.
    pub workingset: bool,
    /// Being written to swap (`PG_writeback`, with `PG_reclaim`): it cannot be freed or
    /// migrated until the write completes, which rotates it to the inactive tail.
    pub writeback: bool,
    /// `PG_reclaim` on a page cache page: reclaim met it dirty or under writeback and
    /// activated it; when its write completes it goes to the inactive tail. (A page written
    /// to swap carries the flag with [`LruPage::writeback`].)
    pub reclaim: bool,
    /// Its owner let go of it for swap (it is only in the swap cache): once written, reclaim
    /// frees it without asking anyone.
    pub swapcache: bool,
    pub(crate) generation: u32,
}

/// The node's LRU lists.
#[derive(Debug, Default)]
pub struct Lruvec {
    lists: [VecDeque<(u64, u32)>; NR_LRU_LISTS],
    index: PfnTable<Option<LruPage>>,
    nr_pages: [u64; NR_LRU_LISTS],
    /// Live entries per list (the queues also hold stale ones).
    nr_entries: [usize; NR_LRU_LISTS],
    zone_pages: [[u64; NR_LRU_LISTS]; MAX_NR_ZONES],
    next_generation: u32,
}

impl Lruvec {
    /// Pages on `list`.
    pub fn size(&self, list: LruList) -> u64 {
        self.nr_pages[list as usize]
    }

    /// Pages on the four LRU lists (slab, which shrinkers free, is not an LRU here).
    pub fn lru_pages(&self) -> u64 {
        [LruList::InactiveAnon, LruList::ActiveAnon, LruList::InactiveFile, LruList::ActiveFile]
            .into_iter()
            .map(|l| self.size(l))
            .sum()
    }

    /// Pages on `list` that lie in zone `zone`.
    pub fn zone_size(&self, zone: usize, list: LruList) -> u64 {
        self.zone_pages[zone][list as usize]
    }

    /// The page at `pfn`, if it is on a list.
    pub fn get(&self, pfn: u64) -> Option<LruPage> {
        self.index.peek(pfn)
    }

    /// `folio_add_lru()`: a new page goes to the head of `list` (`young`: mapped by the fault
    /// that made it). Returns false (changing nothing) if `pfn` is already on a list.
    pub fn add(&mut self, pfn: u64, order: u32, zone: usize, list: LruList, young: bool) -> bool {
        if self.index.get(pfn).is_some() {
            return false;
        }
        let generation = self.bump();
        let page = LruPage {
            list,
            order,
            zone: zone as u8,
            referenced: false,
            young,
            workingset: false,
            writeback: false,
            reclaim: false,
            swapcache: false,
            generation,
        };
        *self.index.entry(pfn) = Some(page);
        self.push(list, pfn, generation);
        self.account(list, zone, order, 1);
        true
    }

    /// Take `pfn` off its list (it is being freed or migrated). Returns what it was.
    pub fn del(&mut self, pfn: u64) -> Option<LruPage> {
        let page = self.index.get_mut(pfn)?.take()?;
        self.account(page.list, page.zone as usize, page.order, -1);
        Some(page)
    }

    /// `folio_mark_accessed()`: the page was used, and is used often enough that the next
    /// look activates it — a page cache page read twice, or a mapped page used again after
    /// a look marked it (young and `PG_referenced` both).
    pub fn mark_accessed(&mut self, pfn: u64) {
        if let Some(Some(p)) = self.index.get_mut(pfn) {
            p.referenced = true;
            p.young = true;
        }
    }

    /// `folio_set_active()`: move the page at `pfn` to the head of its kind's active list.
    pub fn activate(&mut self, pfn: u64) {
        if let Some(page) = self.del(pfn) {
            self.put(pfn, page, LruList::active(page.list.kind()), page.zone as usize);
        }
    }

    /// `workingset_test_recent()`: a page of `kind` that refaults `refault_distance`
    /// evictions and activations after its eviction would have stayed resident had the
    /// active pages of its kind, plus the other kind's pages, made room for it. (Swap is
    /// always available here, so anonymous pages count for file refaults.)
    pub fn workingset_test_recent(&self, kind: LruKind, refault_distance: u64) -> bool {
        let other = if kind == LruKind::Anon { LruKind::File } else { LruKind::Anon };
        let workingset_size = self.size(LruList::active(kind))
            + self.size(LruList::inactive(other))
            + self.size(LruList::active(other));
        kind != LruKind::Slab && refault_distance <= workingset_size
    }

    /// Put `page` (taken off with [`Lruvec::del`] or [`Lruvec::pop_tail`]) at the head of
    /// `list`, at `pfn` (a migrated page keeps its list and age bit).
    pub fn put(&mut self, pfn: u64, page: LruPage, list: LruList, zone: usize) {
        let generation = self.bump();
        let page = LruPage { list, zone: zone as u8, generation, ..page };
        *self.index.entry(pfn) = Some(page);
        self.push(list, pfn, generation);
        self.account(list, zone, page.order, 1);
    }

    /// `folio_end_writeback()`: the write of the page at `pfn` (to swap, or page cache the
    /// owner's flusher wrote) completed. A page reclaim marked — written to swap by reclaim,
    /// or page cache reclaim met dirty or under writeback — is rotated
    /// (`folio_rotate_reclaimable`): off whichever list it is on, active included, to the
    /// tail of its kind's inactive list, so the next scan frees it. An unmarked page stays.
    pub fn end_writeback(&mut self, pfn: u64) {
        let Some(page) = self.get(pfn).filter(|p| p.writeback || p.reclaim) else {
            return;
        };
        self.del(pfn);
        let list = LruList::inactive(page.list.kind());
        let generation = self.bump();
        *self.index.entry(pfn) = Some(LruPage { list, writeback: false, reclaim: false, generation, ..page });
        self.lists[list as usize].push_back((pfn, generation));
        self.account(list, page.zone as usize, page.order, 1);
    }

    /// Take the oldest live page off `list`.
    pub fn pop_tail(&mut self, list: LruList) -> Option<(u64, LruPage)> {
        while let Some((pfn, generation)) = self.lists[list as usize].pop_back() {
            match self.index.get(pfn) {
                Some(p) if p.generation == generation && p.list == list => {
                    let page = self.del(pfn)?;
                    return Some((pfn, page));
                }
                _ => continue,
            }
        }
        None
    }

    /// Queue a live entry; drop the stale ones once they outnumber the live ones.
    fn push(&mut self, list: LruList, pfn: u64, generation: u32) {
        let q = &mut self.lists[list as usize];
        q.push_front((pfn, generation));
        if q.len() > 2 * self.nr_entries[list as usize] + 1024 {
            let index = &self.index;
            q.retain(|(p, g)| index.peek(*p).is_some_and(|e| e.generation == *g && e.list == list));
        }
    }

    fn bump(&mut self) -> u32 {
        self.next_generation = self.next_generation.wrapping_add(1);
        self.next_generation
    }

    fn account(&mut self, list: LruList, zone: usize, order: u32, sign: i64) {
        let pages = 1u64 << order;
        let apply = |v: &mut u64| *v = if sign > 0 { *v + pages } else { *v - pages };
        apply(&mut self.nr_pages[list as usize]);
        let e = &mut self.nr_entries[list as usize];
        *e = if sign > 0 { *e + 1 } else { *e - 1 };
        apply(&mut self.zone_pages[zone][list as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_age_order_and_drop_stale_entries() {
        let mut l = Lruvec::default();
        assert!(l.add(10, 0, 0, LruList::InactiveFile, false));
        assert!(l.add(20, 9, 0, LruList::InactiveFile, false));
        assert!(l.add(30, 0, 1, LruList::InactiveFile, false));
        assert!(!l.add(20, 0, 0, LruList::ActiveAnon, false), "a page is on one list");
        assert_eq!(l.size(LruList::InactiveFile), 514);
        assert_eq!(l.zone_size(1, LruList::InactiveFile), 1);
        let p = l.del(20).unwrap();
        l.put(21, p, LruList::ActiveFile, 0);
        assert_eq!(l.pop_tail(LruList::InactiveFile).map(|(pfn, _)| pfn), Some(10), "oldest first");
        assert_eq!(l.pop_tail(LruList::InactiveFile).map(|(pfn, _)| pfn), Some(30), "stale 20 skipped");
        assert_eq!(l.pop_tail(LruList::InactiveFile), None);
        assert_eq!(l.size(LruList::ActiveFile), 512);
        assert_eq!(l.size(LruList::InactiveFile), 0);
    }

    #[test]
    fn a_refault_activates_only_within_the_workingset() {
        let mut l = Lruvec::default();
        for pfn in 0..10 {
            l.add(pfn, 0, 0, LruList::ActiveFile, false);
        }
        for pfn in 10..15 {
            l.add(pfn, 0, 0, LruList::InactiveAnon, false);
        }
        assert!(l.workingset_test_recent(LruKind::File, 15), "active file + anon make room");
        assert!(!l.workingset_test_recent(LruKind::File, 16));
        assert!(l.workingset_test_recent(LruKind::Anon, 10), "the file pages make room");
        assert!(!l.workingset_test_recent(LruKind::Anon, 11));
        l.add(99, 0, 0, LruList::InactiveFile, false);
        l.activate(99);
        assert_eq!((l.size(LruList::InactiveFile), l.size(LruList::ActiveFile)), (0, 11));
    }
}
