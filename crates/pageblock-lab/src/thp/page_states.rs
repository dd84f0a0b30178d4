//! The states of the memory's pages that decide whether compaction can move them: dirty and
//! under writeback (page cache a workload writes), pinned (GUP) and unevictable (mlocked).
//!
//! A workload sets the shares ([`PageStateShares`]); each new page draws its state from
//! them. Dirty page cache goes through the kernel's writeback life: the flusher starts
//! writing a dirty page back once it is `dirty_expire` old (checked every
//! `dirty_writeback_interval`) or at once while dirty pages exceed the background
//! threshold, oldest first; the write completes `writeback` later and the page is clean.
//! Time is the node's simulated time.
//!
//! Reclaim cannot write page cache (6.18's file systems have no `->writepage`): it asks the
//! page's state (`PageStates::dirty_writeback`), activates what is dirty or under writeback,
//! and wakes the flusher (`PageStates::wakeup_flusher_threads`) when a whole batch was dirty;
//! the node rotates a page reclaim marked once its write ends (`PageStates::flush`).
//!
//! Not modelled: a page dirtied again, and the device's bandwidth (every write takes
//! `writeback_us`, however many are in flight).

use std::collections::VecDeque;

use pageblock_core::compaction::{FolioState, MigrateFail, MigrateMode};
use pageblock_core::vmscan::DirtyWriteback;

use super::mm::Holder;
use crate::prng::Prng;

/// The share of a workload's pages in each state, and the writeback timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageStateShares {
    /// Per mille of new page cache pages the workload writes (dirty from the start).
    pub dirty_file: u32,
    /// Per mille of new anonymous and page cache pages pinned for their life (GUP).
    pub pinned: u32,
    /// Per mille of new anonymous pages mlocked (unevictable).
    pub unevictable: u32,
    /// The file system's mappings have `migrate_folio` (ext4, xfs, btrfs, tmpfs do): a
    /// dirty page moves without being written first.
    pub migrate_folio: bool,
    /// `vm.dirty_expire_centisecs`, in µs.
    pub dirty_expire_us: u64,
    /// `vm.dirty_writeback_centisecs`, in µs: how often the flusher looks for expired pages.
    pub dirty_writeback_interval_us: u64,
    /// The background threshold, per mille of the node's managed pages.
    pub dirty_background_permille: u32,
    /// How long a page stays under writeback, in µs.
    pub writeback_us: u64,
}

impl PageStateShares {
    /// Every page clean, unpinned and evictable.
    pub const NONE: PageStateShares = PageStateShares {
        dirty_file: 0,
        pinned: 0,
        unevictable: 0,
        migrate_folio: true,
        dirty_expire_us: 30_000_000,
        dirty_writeback_interval_us: 5_000_000,
        dirty_background_permille: 100,
        writeback_us: 20_000,
    };
}

/// A page's flags.
const DIRTY: u8 = 1;
const WRITEBACK: u8 = 2;
const PINNED: u8 = 4;
const UNEVICTABLE: u8 = 8;

/// A page cache page's flags, and when it was dirtied or its writeback ends.
#[derive(Clone, Copy, Debug, Default)]
struct FileState {
    flags: u8,
    stamp: u64,
}

/// The states of every page, and the flusher's queues.
#[derive(Debug)]
pub(super) struct PageStates {
    shares: PageStateShares,
    rng: Prng,
    /// Background threshold in pages.
    background: u64,
    anon: Vec<u8>,
    files: Vec<FileState>,
    /// Dirty page cache, oldest first: (file id, dirtied at). Stale entries are skipped.
    dirty: VecDeque<(u32, u64)>,
    nr_dirty: u64,
    /// Page cache under writeback, in completion order: (file id, ends at).
    writeback: VecDeque<(u32, u64)>,
    nr_writeback: u64,
    next_flush_us: u64,
    now_us: u64,
}

impl Default for PageStates {
    fn default() -> Self {
        PageStates::new(PageStateShares::NONE, 0)
    }
}

impl PageStates {
    pub(super) fn new(shares: PageStateShares, managed: u64) -> PageStates {
        PageStates {
            shares,
            rng: Prng::new(0x5eed_d1e7),
            background: managed * u64::from(shares.dirty_background_permille) / 1000,
            anon: Vec::new(),
            files: Vec::new(),
            dirty: VecDeque::new(),
            nr_dirty: 0,
            writeback: VecDeque::new(),
            nr_writeback: 0,
            next_flush_us: shares.dirty_writeback_interval_us,
            now_us: 0,
        }
    }

    fn draw(&mut self, permille: u32, flag: u8) -> u8 {
        if permille > 0 && self.rng.below(1000) < u64::from(permille) {
            flag
        } else {
            0
        }
    }

    /// Anonymous page `id` was mapped.
    pub(super) fn anon_mapped(&mut self, id: u32) {
        let flags = self.draw(self.shares.pinned, PINNED) | self.draw(self.shares.unevictable, UNEVICTABLE);
        let i = id as usize;
        if self.anon.len() <= i {
            self.anon.resize(i + 1, 0);
        }
        self.anon[i] = flags;
    }

    /// Page cache page `id` was read in (or written: then it is dirty).
    pub(super) fn file_cached(&mut self, id: u32) {
        let flags = self.draw(self.shares.pinned, PINNED) | self.draw(self.shares.dirty_file, DIRTY);
        let i = id as usize;
        if self.files.len() <= i {
            self.files.resize(i + 1, FileState::default());
        }
        self.forget_file(id);
        self.files[i] = FileState { flags, stamp: self.now_us };
        if flags & DIRTY != 0 {
            self.dirty.push_back((id, self.now_us));
            self.nr_dirty += 1;
        }
    }

    fn flags(&self, h: Holder) -> u8 {
        match h {
            Holder::Anon(id) | Holder::AnonPart(id, _) => self.anon.get(id as usize).copied().unwrap_or(0),
            Holder::File(id) => self.files.get(id as usize).map_or(0, |f| f.flags),
            Holder::Slab(_) => 0,
        }
    }

    /// Page cache page `id` left the cache: it has no state any more.
    fn forget_file(&mut self, id: u32) {
        if let Some(f) = self.files.get_mut(id as usize) {
            if f.flags & DIRTY != 0 {
                self.nr_dirty -= 1;
            }
            if f.flags & WRITEBACK != 0 {
                self.nr_writeback -= 1;
            }
            *f = FileState::default();
        }
    }

    /// What compaction's migrate scanner sees of the page `h`.
    pub(super) fn folio(&self, h: Holder) -> FolioState {
        let flags = self.flags(h);
        let file = matches!(h, Holder::File(_));
        FolioState {
            file,
            pinned: flags & PINNED != 0,
            unevictable: flags & UNEVICTABLE != 0,
            writeback: flags & WRITEBACK != 0,
            dirty: flags & DIRTY != 0,
            no_migrate_folio: file && !self.shares.migrate_folio,
        }
    }

    /// What reclaim's `folio_check_dirty_writeback()` finds of page cache page `id`.
    pub(super) fn dirty_writeback(&self, id: u32) -> DirtyWriteback {
        let flags = self.flags(Holder::File(id));
        DirtyWriteback { dirty: flags & DIRTY != 0, writeback: flags & WRITEBACK != 0 }
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)` at `now_us`: every dirty page starts
    /// writeback, oldest first.
    pub(super) fn wakeup_flusher_threads(&mut self, now_us: u64) {
        self.now_us = self.now_us.max(now_us);
        while let Some((id, at)) = self.dirty.pop_front() {
            if self.is_dirty(id, at) {
                self.start_writeback(id);
            }
        }
    }

    /// Page cache pages dirty or under writeback (`NR_ZONE_WRITE_PENDING`).
    pub(super) fn write_pending(&self) -> u64 {
        self.nr_dirty + self.nr_writeback
    }

    /// When the next `pages` pages under writeback complete, in order.
    pub(super) fn writeback_ends_us(&self, pages: u64) -> Vec<u64> {
        self.writeback
            .iter()
            .filter(|&&(id, end)| self.is_writing(id, end))
            .map(|&(_, end)| end)
            .take(pages as usize)
            .collect()
    }

    /// Whether the dirty queue's entry (`id`, dirtied `at`) is live.
    fn is_dirty(&self, id: u32, at: u64) -> bool {
        let f = self.files[id as usize];
        f.flags & DIRTY != 0 && f.stamp == at
    }

    /// Whether the writeback queue's entry (`id`, `end`) is live.
    fn is_writing(&self, id: u32, end: u64) -> bool {
        let f = self.files[id as usize];
        f.flags & WRITEBACK != 0 && f.stamp == end
    }

    /// Whether reclaim may take the page `h`: not while pinned or mlocked.
    pub(super) fn may_reclaim(&self, h: Holder) -> bool {
        self.flags(h) & (PINNED | UNEVICTABLE) == 0
    }

    /// Reclaim took the page `h`.
    pub(super) fn reclaimed(&mut self, h: Holder) {
        if let Holder::File(id) = h {
            self.forget_file(id);
        }
    }

    /// Whether the page `h` can move now in `mode` (`migrate_folio_unmap` and
    /// `move_to_new_folio`): a pin is an extra reference (`-EAGAIN`); a synchronous run
    /// waits for writeback (here it completes), others give up (`-EBUSY`); a dirty page
    /// whose mapping cannot move it is written out first (`-EAGAIN` once started) by a
    /// synchronous run only.
    pub(super) fn may_migrate(&mut self, h: Holder, mode: MigrateMode) -> Result<(), MigrateFail> {
        let flags = self.flags(h);
        if flags & PINNED != 0 {
            return Err(MigrateFail::Again);
        }
        let Holder::File(id) = h else {
            return Ok(());
        };
        let sync = mode == MigrateMode::Sync;
        if flags & WRITEBACK != 0 {
            if !sync {
                return Err(MigrateFail::Busy);
            }
            self.files[id as usize].flags &= !WRITEBACK;
            self.nr_writeback -= 1;
        }
        if flags & DIRTY != 0 && !self.shares.migrate_folio {
            if !sync {
                return Err(MigrateFail::Busy);
            }
            self.start_writeback(id);
            return Err(MigrateFail::Again);
        }
        Ok(())
    }

    fn start_writeback(&mut self, id: u32) {
        let end = self.now_us + self.shares.writeback_us;
        let f = &mut self.files[id as usize];
        f.flags = (f.flags & !DIRTY) | WRITEBACK;
        f.stamp = end;
        self.nr_dirty -= 1;
        self.nr_writeback += 1;
        self.writeback.push_back((id, end));
    }

    /// The flusher at `now_us` (never earlier than it was): writes that completed end —
    /// their ids are returned — then expired dirty pages (at each flusher wake) and dirty
    /// pages over the background threshold start writeback.
    pub(super) fn flush(&mut self, now_us: u64) -> Vec<u32> {
        let now_us = self.now_us.max(now_us);
        self.now_us = now_us;
        let mut ended = Vec::new();
        while let Some(&(id, end)) = self.writeback.front() {
            if end > now_us {
                break;
            }
            self.writeback.pop_front();
            if self.is_writing(id, end) {
                self.files[id as usize].flags &= !WRITEBACK;
                self.nr_writeback -= 1;
                ended.push(id);
            }
        }
        let wake = now_us >= self.next_flush_us;
        if wake {
            self.next_flush_us = now_us + self.shares.dirty_writeback_interval_us;
        }
        while let Some(&(id, at)) = self.dirty.front() {
            if !self.is_dirty(id, at) {
                self.dirty.pop_front();
                continue;
            }
            let expired = wake && now_us.saturating_sub(at) >= self.shares.dirty_expire_us;
            if !expired && self.nr_dirty <= self.background {
                break;
            }
            self.dirty.pop_front();
            self.start_writeback(id);
        }
        ended
    }

    /// Pages dirty and under writeback now.
    #[cfg(test)]
    fn counts(&self) -> (u64, usize) {
        let wb = self.files.iter().filter(|f| f.flags & WRITEBACK != 0).count();
        assert_eq!(self.write_pending(), self.nr_dirty + wb as u64, "write pending is dirty plus writeback");
        (self.nr_dirty, wb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(background_permille: u32) -> PageStates {
        let shares = PageStateShares {
            dirty_file: 1000,
            dirty_background_permille: background_permille,
            ..PageStateShares::NONE
        };
        PageStates::new(shares, 1000)
    }

    #[test]
    fn writeback_starts_over_the_background_threshold_and_ends_after_its_latency() {
        let mut s = written(100);
        for id in 0..150 {
            s.file_cached(id);
        }
        assert_eq!(s.counts(), (150, 0));
        s.flush(1);
        assert_eq!(s.counts(), (100, 50), "the oldest 50 above the threshold are written");
        assert!(s.folio(Holder::File(0)).writeback && !s.folio(Holder::File(0)).dirty);
        assert!(s.folio(Holder::File(149)).dirty);
        assert_eq!(s.may_migrate(Holder::File(0), MigrateMode::SyncLight), Err(MigrateFail::Busy));
        s.flush(1 + PageStateShares::NONE.writeback_us);
        assert_eq!(s.counts(), (100, 0), "writeback is transient");
        assert_eq!(s.folio(Holder::File(0)), FolioState { file: true, ..FolioState::default() });
    }

    #[test]
    fn expired_dirty_pages_are_written_at_the_flusher_wake() {
        let mut s = written(1000);
        s.file_cached(7);
        let expire = PageStateShares::NONE.dirty_expire_us;
        s.flush(expire - 1);
        assert_eq!(s.counts(), (1, 0), "not expired yet");
        s.flush(expire);
        assert_eq!(s.counts(), (1, 0), "expired, but the flusher is asleep until its next wake");
        s.flush(expire + PageStateShares::NONE.dirty_writeback_interval_us);
        assert_eq!(s.counts(), (0, 1));
    }

    #[test]
    fn the_flusher_reclaim_wakes_writes_every_dirty_page_and_reports_each_end() {
        let mut s = written(1000);
        for id in 0..3 {
            s.file_cached(id);
        }
        assert!(s.dirty_writeback(0).dirty && s.writeback_ends_us(8).is_empty());
        s.wakeup_flusher_threads(10);
        assert_eq!(s.counts(), (0, 3));
        assert_eq!(s.dirty_writeback(2), DirtyWriteback { dirty: false, writeback: true });
        let end = 10 + PageStateShares::NONE.writeback_us;
        assert_eq!(s.writeback_ends_us(2), vec![end, end]);
        assert!(s.flush(end - 1).is_empty());
        assert_eq!(s.flush(end), vec![0, 1, 2], "the node rotates these");
        assert!(s.flush(end - 5).is_empty(), "the flusher's clock never goes back");
    }

    /// Regression (audit C12): the lab's pages never refused to move, so a huge page fault
    /// compacted its way through blocks the kernel could not empty.
    #[test]
    fn pinned_pages_keep_a_fragmented_node_from_making_huge_pages() {
        use pageblock_core::thp::ThpDefrag;
        use pageblock_core::{Node, Policy, Sysctl, VmEvent, ZoneConfig, ZoneStat};

        use crate::thp::mm::Mm;

        let huge_after_fragmenting = |shares: PageStateShares| {
            let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(32 << 20) };
            let mut node =
                Node::single_zone(zone, Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 128).unwrap())
                    .expect("node boots");
            let mm = Mm::attach(&mut node);
            mm.set_page_states(shares, node.shared().managed_pages());
            // Fill to below half a pageblock of free memory, short of reclaim's watermarks.
            let free = || node.shared().zone(0).counters().zone_stat(ZoneStat::NrFreePages);
            let mut ids = Vec::new();
            while free() > 256 {
                ids.push(mm.fault_anon(&node, 0).expect("memory is free"));
            }
            for (i, id) in ids.into_iter().enumerate() {
                if i % 16 != 0 {
                    mm.unmap_anon(&node, 0, id);
                }
            }
            node.drain_all_pages();
            let (_, order) = mm.fault_thp(&node, 0, ThpDefrag::Madvise, true).expect("a base page at least");
            let stalls = node.shared().event(VmEvent::CompactStall);
            assert!(stalls > 0, "the fault compacted");
            order > 0
        };
        assert!(huge_after_fragmenting(PageStateShares::NONE), "movable pages make room");
        let pinned = PageStateShares { pinned: 1000, ..PageStateShares::NONE };
        assert!(!huge_after_fragmenting(pinned), "no block can be emptied of pinned pages");
    }

    #[test]
    fn a_pin_is_retried_and_a_synchronous_run_waits_for_writeback() {
        let mut s = PageStates::new(PageStateShares { pinned: 1000, ..PageStateShares::NONE }, 1000);
        s.anon_mapped(3);
        assert!(s.folio(Holder::Anon(3)).pinned);
        assert!(!s.may_reclaim(Holder::Anon(3)));
        assert_eq!(s.may_migrate(Holder::Anon(3), MigrateMode::Sync), Err(MigrateFail::Again));
        let mut w = written(0);
        w.file_cached(1);
        w.flush(1);
        assert!(w.folio(Holder::File(1)).writeback);
        assert_eq!(w.counts(), (0, 1));
        assert_eq!(w.may_migrate(Holder::File(1), MigrateMode::Sync), Ok(()));
        assert!(!w.folio(Holder::File(1)).writeback);
        assert_eq!(w.counts(), (0, 0), "the synchronous run waited for the write");
        w.file_cached(1);
        assert_eq!(w.counts(), (1, 0), "read again and written: dirty");
    }
}
