//! Migration can fail: the isolation rules, the retry passes and the put-back, on a zone
//! whose every pageblock is one sixteenth full of movable pages, some of them special.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::super::compact_zone::{compact_zone, CompactControl};
use super::super::{CompactResult, FolioState, MigrateFail, MigrateMode, Mover};
use crate::{Gfp, Node, NodeLocks, Pfn, Policy, Sysctl, VmEvent, ZoneConfig};

/// The pages' owner: each live page's state, and every migration asked of it.
#[derive(Default)]
struct Table {
    pages: BTreeMap<u64, FolioState>,
    /// Per page as first allocated (it keeps its key when it moves): the modes it was asked
    /// to move in.
    asked: BTreeMap<u64, Vec<MigrateMode>>,
    origin: BTreeMap<u64, u64>,
}

#[derive(Clone, Default)]
struct Owner(Rc<RefCell<Table>>);

impl Mover for Owner {
    fn migrate(&self, from: Pfn, to: Pfn, _order: u32, mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut t = self.0.borrow_mut();
        let origin = t.origin[&from.0];
        t.asked.entry(origin).or_default().push(mode);
        let mut f = t.pages[&from.0];
        if f.pinned {
            return Err(MigrateFail::Again);
        }
        if f.writeback {
            if mode != MigrateMode::Sync {
                return Err(MigrateFail::Busy);
            }
            f.writeback = false;
        }
        t.pages.remove(&from.0);
        t.pages.insert(to.0, f);
        t.origin.remove(&from.0);
        t.origin.insert(to.0, origin);
        Ok(())
    }

    fn folio_state(&self, pfn: Pfn, _order: u32) -> FolioState {
        self.0.borrow().pages.get(&pfn.0).copied().unwrap_or_default()
    }
}

const PB: u64 = 512;

/// A 16 MiB zone (8 pageblocks) with one movable page in every 16 allocated, and the page
/// in the middle of each pageblock in state `special`.
fn zone_with(special: FolioState, policy: Policy) -> (Node, Owner) {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(16 << 20) };
    let mut node = Node::single_zone(zone, policy.with_sysctl(Sysctl::MinFreeKbytes, 64).unwrap()).unwrap();
    let owner = Owner::default();
    node.set_mover(Box::new(owner.clone()));
    let start = node.shared().zone(0).config().start_pfn;
    let all = node.fill(Gfp::HIGHUSER_MOVABLE);
    let mut t = owner.0.borrow_mut();
    for Pfn(p) in all {
        if (p - start) % 16 != 0 {
            node.free_pages(0, Pfn(p), 0).unwrap();
            continue;
        }
        let f = if (p - start) % PB == PB / 2 { special } else { FolioState::default() };
        t.pages.insert(p, f);
        t.origin.insert(p, p);
    }
    drop(t);
    node.drain_all_pages();
    (node, owner)
}

/// One order-9 run in `mode` (direct compaction's, or a whole-zone one for `Sync`).
fn compact(node: &Node, mode: MigrateMode) -> CompactResult {
    let mut cc = CompactControl::new(0, 0, (mode != MigrateMode::Sync).then_some(9), mode);
    cc.direct = mode != MigrateMode::Sync;
    cc.whole_zone = mode == MigrateMode::Sync;
    cc.ignore_skip_hint = mode == MigrateMode::Sync;
    compact_zone(node, node.mover().unwrap(), &mut cc)
}

/// The modes each special page was asked to move in.
fn asked_of_special(owner: &Owner) -> Vec<Vec<MigrateMode>> {
    let t = owner.0.borrow();
    t.asked.iter().filter(|(&p, _)| p % PB == PB / 2).map(|(_, m)| m.clone()).collect()
}

fn failed(node: &Node) -> u64 {
    node.shared().event(VmEvent::PgMigrateFail)
}

#[test]
fn a_pinned_anonymous_page_is_not_isolated_and_keeps_its_block_from_being_emptied() {
    let pinned = FolioState { pinned: true, ..FolioState::default() };
    let (node, owner) = zone_with(pinned, Policy::default());
    for mode in [MigrateMode::Async, MigrateMode::SyncLight] {
        assert_ne!(compact(&node, mode), CompactResult::Success, "{mode:?}: every block keeps a pinned page");
    }
    assert!(asked_of_special(&owner).is_empty(), "pinned anonymous pages were isolated");
    assert_eq!(failed(&node), 0);
    node.verify().unwrap();
}

#[test]
fn a_pinned_file_page_is_retried_for_every_pass_then_fails_and_goes_back() {
    let pinned = FolioState { file: true, pinned: true, ..FolioState::default() };
    let (node, owner) = zone_with(pinned, Policy::default());
    assert_ne!(compact(&node, MigrateMode::Async), CompactResult::Success);
    let asked = asked_of_special(&owner);
    assert!(!asked.is_empty(), "file pages are isolated even when pinned");
    for modes in &asked {
        assert_eq!(modes, &vec![MigrateMode::Async; 10], "NR_MAX_MIGRATE_PAGES_RETRY async passes");
    }
    assert_eq!(failed(&node), asked.len() as u64, "each counted once, as it finally failed");
    owner.0.borrow_mut().asked.clear();
    compact(&node, MigrateMode::SyncLight);
    for modes in asked_of_special(&owner) {
        let mut want = vec![MigrateMode::Async; 3];
        want.extend([MigrateMode::SyncLight; 7]);
        assert_eq!(modes, want, "three batched async passes, then seven in the run's mode");
    }
    node.verify().unwrap();
    let t = owner.0.borrow();
    for (&p, &origin) in &t.origin {
        if origin % PB == PB / 2 {
            assert_eq!(p, origin, "a page that failed stays where it was");
            node.shared().zone(0).check_allocated(Pfn(p), 0).unwrap();
        }
    }
}

#[test]
fn writeback_pages_are_left_by_async_and_sync_light_runs_and_waited_for_by_sync_ones() {
    let writeback = FolioState { file: true, writeback: true, ..FolioState::default() };
    let (node, owner) = zone_with(writeback, Policy::default());
    for mode in [MigrateMode::Async, MigrateMode::SyncLight] {
        assert_ne!(compact(&node, mode), CompactResult::Success, "{mode:?}");
    }
    assert!(asked_of_special(&owner).is_empty(), "ISOLATE_ASYNC_MIGRATE skips writeback");
    compact(&node, MigrateMode::Sync);
    let asked = asked_of_special(&owner);
    assert!(!asked.is_empty() && asked.iter().all(|m| m.contains(&MigrateMode::Sync)));
    assert_eq!(failed(&node), 0, "a synchronous run waits for the write and moves the page");
}

#[test]
fn dirty_pages_are_left_by_async_runs_only_when_their_mapping_cannot_migrate_them() {
    let movable_dirty = FolioState { file: true, dirty: true, ..FolioState::default() };
    let (node, owner) = zone_with(movable_dirty, Policy::default());
    assert_eq!(compact(&node, MigrateMode::Async), CompactResult::Success);
    assert!(!asked_of_special(&owner).is_empty(), "migrate_folio moves a dirty page");
    let stuck = FolioState { no_migrate_folio: true, ..movable_dirty };
    let (node, owner) = zone_with(stuck, Policy::default());
    assert_ne!(compact(&node, MigrateMode::Async), CompactResult::Success);
    assert!(asked_of_special(&owner).is_empty());
}

#[test]
fn unevictable_pages_move_unless_compact_unevictable_allowed_is_off() {
    let mlocked = FolioState { unevictable: true, ..FolioState::default() };
    let (node, owner) = zone_with(mlocked, Policy::default());
    assert_eq!(compact(&node, MigrateMode::Async), CompactResult::Success);
    assert!(!asked_of_special(&owner).is_empty());
    let (node, owner) =
        zone_with(mlocked, Policy::default().with_sysctl(Sysctl::CompactUnevictableAllowed, 0).unwrap());
    assert_ne!(compact(&node, MigrateMode::Async), CompactResult::Success);
    assert!(asked_of_special(&owner).is_empty());
}

#[test]
fn a_request_without_gfp_fs_isolates_no_file_page() {
    let file = FolioState { file: true, ..FolioState::default() };
    let (node, owner) = zone_with(file, Policy::default());
    let mut cc = CompactControl::new(0, 0, Some(9), MigrateMode::Async);
    cc.direct = true;
    cc.gfp_fs = false;
    assert_ne!(compact_zone(&node, node.mover().unwrap(), &mut cc), CompactResult::Success);
    assert!(asked_of_special(&owner).is_empty());
}

/// An owner of one large folio among base pages, that may or may not split it.
struct Splitter {
    can_split: bool,
    /// `(pfn, order)` of each split asked.
    splits: RefCell<Vec<(u64, u32)>>,
    /// Base pages moved, by where they were.
    moved: RefCell<Vec<u64>>,
}

impl Mover for Rc<Splitter> {
    fn migrate(&self, from: Pfn, _to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        if order == 0 {
            self.moved.borrow_mut().push(from.0);
        }
        Ok(())
    }

    fn split(&self, from: Pfn, order: u32) -> bool {
        self.splits.borrow_mut().push((from.0, order));
        self.can_split
    }
}

/// A zone of base pages, every other one free (no free block above order 0), with one
/// order-4 folio in its first pageblock; a whole-zone run of kcompactd's mode (SYNC_LIGHT,
/// for order 9). Returns the node, the owner, the folio's pfn and the run's result.
fn folio_among_base_pages(can_split: bool) -> (Node, Rc<Splitter>, u64, CompactResult) {
    let zone = ZoneConfig { nr_cpus: 1, ..ZoneConfig::normal(16 << 20) };
    let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 64).unwrap();
    let mut node = Node::single_zone(zone, policy).unwrap();
    let owner = Rc::new(Splitter { can_split, splits: RefCell::default(), moved: RefCell::default() });
    node.set_mover(Box::new(owner.clone()));
    let start = node.shared().zone(0).config().start_pfn;
    let all = node.fill(Gfp::HIGHUSER_MOVABLE);
    let folio = start + 64;
    for p in folio..folio + 16 {
        node.free_pages(0, Pfn(p), 0).unwrap();
    }
    node.drain_all_pages();
    assert_eq!(node.alloc_pages(0, 4, Gfp::HIGHUSER_MOVABLE).unwrap(), Pfn(folio));
    for Pfn(p) in all {
        if !(folio..folio + 16).contains(&p) && p % 2 == 1 {
            node.free_pages(0, Pfn(p), 0).unwrap();
        }
    }
    node.drain_all_pages();
    let mut cc = CompactControl::new(0, 0, Some(9), MigrateMode::SyncLight);
    cc.whole_zone = true;
    cc.ignore_skip_hint = true;
    let result = compact_zone(&node, node.mover().unwrap(), &mut cc);
    node.verify().unwrap();
    (node, owner, folio, result)
}

/// Regression: a large folio with no free block of its order to move into ended the run
/// (`-ENOMEM`, contended) and went back whole. The kernel splits it
/// (`migrate_pages_batch`: `try_split_folio`) and moves its pages one by one.
#[test]
fn a_large_folio_without_a_destination_of_its_order_is_split_and_its_pages_moved() {
    let (node, owner, folio, result) = folio_among_base_pages(true);
    assert_eq!(owner.splits.borrow().as_slice(), &[(folio, 4)]);
    let moved = owner.moved.borrow();
    let pieces = moved.iter().filter(|&&p| (folio..folio + 16).contains(&p)).count();
    assert_eq!(pieces, 16, "every base page of the folio moved: {result:?}");
    assert_ne!(result, CompactResult::Contended);
    assert_eq!(failed(&node), 0, "the split is the batch's failure, no page's");
    // An owner that cannot split keeps the folio whole: the run ends for want of memory.
    let (node, owner, folio, result) = folio_among_base_pages(false);
    assert_eq!(owner.splits.borrow().len(), 1);
    assert!(!owner.moved.borrow().iter().any(|p| (folio..folio + 16).contains(p)));
    assert_eq!(result, CompactResult::Contended);
    node.shared().zone(0).check_allocated(Pfn(folio), 4).unwrap();
}
