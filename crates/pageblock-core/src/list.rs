//! Index-linked doubly linked lists threaded through the [`crate::memmap::Memmap`] (the kernel's
//! `list_head` embedded in `struct page`).
//!
//! A list is two `u32`s; its nodes are memmap records, so adding, removing and moving a page
//! never allocates, and removing an arbitrary page (a buddy found during a merge) is O(1).
//! Position matters to the allocator: allocation takes the head, frees go to the head unless a
//! heuristic sends them to the tail, and moved or bulk-refilled pages go to the tail.
//!
//! # Invariants
//!
//! * `head == NIL` ⇔ `tail == NIL` ⇔ the list is empty.
//! * For every node `n` on the list: `next(prev(n)) == n` and `prev(next(n)) == n`, with the
//!   list's own `head`/`tail` standing in for `NIL` neighbours.
//! * A page is on at most one list at a time.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::memmap::pagemap::PageMap;
use crate::memmap::NIL;

/// Head and tail of one list. The two words are relaxed atomics, written only by the holder
/// of the lock that owns the list and readable by anyone (a lock-free reader may see a list
/// mid-update; it only ever asks "is it empty?").
pub struct ListHead {
    head: AtomicU32,
    tail: AtomicU32,
}

impl Default for ListHead {
    fn default() -> Self {
        ListHead::new()
    }
}

impl fmt::Debug for ListHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ListHead({:?}..{:?})", self.first(), self.last())
    }
}

impl ListHead {
    /// An empty list.
    pub const fn new() -> ListHead {
        ListHead { head: AtomicU32::new(NIL), tail: AtomicU32::new(NIL) }
    }

    #[inline]
    fn head(&self) -> u32 {
        self.head.load(Relaxed)
    }

    #[inline]
    fn tail(&self) -> u32 {
        self.tail.load(Relaxed)
    }

    /// True if the list has no pages.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head() == NIL
    }

    /// The first page, if any.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        let h = self.head();
        (h != NIL).then_some(h)
    }

    /// The last page, if any.
    #[inline]
    pub fn last(&self) -> Option<u32> {
        let t = self.tail();
        (t != NIL).then_some(t)
    }

    /// Link `idx` in front of the first page (`list_add`).
    #[inline]
    pub fn add_head<M: PageMap>(&self, mm: M, idx: u32) {
        let head = self.head();
        mm.set_prev(idx, NIL);
        mm.set_next(idx, head);
        if head == NIL {
            self.tail.store(idx, Relaxed);
        } else {
            mm.set_prev(head, idx);
        }
        self.head.store(idx, Relaxed);
    }

    /// Link `idx` after the last page (`list_add_tail`).
    #[inline]
    pub fn add_tail<M: PageMap>(&self, mm: M, idx: u32) {
        let tail = self.tail();
        mm.set_next(idx, NIL);
        mm.set_prev(idx, tail);
        if tail == NIL {
            self.head.store(idx, Relaxed);
        } else {
            mm.set_next(tail, idx);
        }
        self.tail.store(idx, Relaxed);
    }

    /// Unlink `idx`, which must be on this list (`list_del`).
    #[inline]
    pub fn del<M: PageMap>(&self, mm: M, idx: u32) {
        let (prev, next) = (mm.prev(idx), mm.next(idx));
        if prev == NIL {
            debug_assert_eq!(self.head(), idx, "page {idx} is not on this list");
            self.head.store(next, Relaxed);
        } else {
            mm.set_next(prev, next);
        }
        if next == NIL {
            debug_assert_eq!(self.tail(), idx, "page {idx} is not on this list");
            self.tail.store(prev, Relaxed);
        } else {
            mm.set_prev(next, prev);
        }
    }

    /// Iterate from head to tail. The list must not change while iterating.
    pub fn iter<M: PageMap>(&self, mm: M) -> ListIter<M> {
        ListIter { mm, cur: self.head(), back: false }
    }

    /// Iterate from tail to head (`list_for_each_entry_reverse`). The list must not change
    /// while iterating.
    pub fn iter_rev<M: PageMap>(&self, mm: M) -> ListIter<M> {
        ListIter { mm, cur: self.tail(), back: true }
    }

    /// Rotate the list so that `idx`, which must be on it, comes first; the pages that were
    /// before it go, in order, to the tail (compaction's `move_freelist_head`). O(1).
    pub fn rotate_to_head<M: PageMap>(&self, mm: M, idx: u32) {
        let prev = mm.prev(idx);
        if prev == NIL {
            return;
        }
        let (head, tail) = (self.head(), self.tail());
        mm.set_next(tail, head);
        mm.set_prev(head, tail);
        mm.set_next(prev, NIL);
        mm.set_prev(idx, NIL);
        self.head.store(idx, Relaxed);
        self.tail.store(prev, Relaxed);
    }

    /// Rotate the list so that `idx`, which must be on it, comes last; the pages that were
    /// after it come first (compaction's `move_freelist_tail`). O(1).
    pub fn rotate_to_tail<M: PageMap>(&self, mm: M, idx: u32) {
        let next = mm.next(idx);
        if next != NIL {
            self.rotate_to_head(mm, next);
        }
    }
}

/// Iterator over the page indices of a list, head first (or tail first, from
/// [`ListHead::iter_rev`]).
pub struct ListIter<M> {
    mm: M,
    cur: u32,
    back: bool,
}

impl<M: PageMap> Iterator for ListIter<M> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.cur == NIL {
            return None;
        }
        let idx = self.cur;
        self.cur = if self.back { self.mm.prev(idx) } else { self.mm.next(idx) };
        Some(idx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MemmapLayout;
    use crate::memmap::pagemap::Pages;
    use crate::memmap::Memmap;

    fn collect(l: &ListHead, mm: Pages<'_>) -> Vec<u32> {
        l.iter(mm).collect()
    }

    #[test]
    fn head_tail_and_delete_keep_order_in_every_layout() {
        for layout in [MemmapLayout::Split, MemmapLayout::Records(12), MemmapLayout::Records(64)] {
            let memmap = Memmap::with_layout(8, layout, 0);
            let mm = memmap.pages();
            let l = ListHead::new();
            assert!(l.is_empty());
            l.add_head(mm, 3);
            l.add_tail(mm, 5);
            l.add_head(mm, 1);
            l.add_tail(mm, 7);
            assert_eq!(collect(&l, mm), vec![1, 3, 5, 7], "{layout:?}");
            l.del(mm, 3);
            assert_eq!(collect(&l, mm), vec![1, 5, 7]);
            l.del(mm, 1);
            l.del(mm, 7);
            assert_eq!(collect(&l, mm), vec![5]);
            assert_eq!(l.first(), Some(5));
            assert_eq!(l.last(), Some(5));
            l.del(mm, 5);
            assert!(l.is_empty());
            assert_eq!(l.last(), None);
        }
    }

    #[test]
    fn rotations_keep_the_cyclic_order() {
        let memmap = Memmap::with_layout(8, MemmapLayout::Split, 0);
        let mm = memmap.pages();
        let l = ListHead::new();
        for i in 1..=5 {
            l.add_tail(mm, i);
        }
        l.rotate_to_head(mm, 3);
        assert_eq!(collect(&l, mm), vec![3, 4, 5, 1, 2]);
        assert_eq!(l.iter_rev(mm).collect::<Vec<_>>(), vec![2, 1, 5, 4, 3]);
        l.rotate_to_tail(mm, 4);
        assert_eq!(collect(&l, mm), vec![5, 1, 2, 3, 4]);
        l.rotate_to_tail(mm, 4);
        l.rotate_to_head(mm, 5);
        assert_eq!(collect(&l, mm), vec![5, 1, 2, 3, 4], "already in place: unchanged");
        assert_eq!((l.first(), l.last()), (Some(5), Some(4)));
        l.del(mm, 4);
        l.add_tail(mm, 6);
        assert_eq!(collect(&l, mm), vec![5, 1, 2, 3, 6], "links stay consistent");
    }
}
