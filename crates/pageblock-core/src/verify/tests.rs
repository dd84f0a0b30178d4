//! The checker proved: each test builds a small valid node (verify() passes), corrupts
//! exactly one thing through the crate's internals, and expects the [`Invariant`] that names
//! it. The invariants of the library's movable handles are tested in `pageblock`.

use crate::invariant::Invariant;
use crate::memmap::pagemap::PageMap;
use crate::memmap::{PageInfo, PageState};
use crate::migratetype::MigrateType;
use crate::stats::ZoneStat;
use crate::types::PAGE_SIZE;
use crate::zone::free_area::ListEnd;
use crate::zone::zone_state::ZoneLayout;
use crate::zone::Zone;
use crate::{Gfp, Node, NodeLocks, Policy, Sysctl, ZoneConfig};

/// 66 pages of 4-page pageblocks (the last one partial), max order 4: 2 reserved, 64 managed.
fn node() -> Node {
    let zone = ZoneConfig {
        max_order: 4,
        pageblock_order: 2,
        nr_cpus: 1,
        reserved_pages: 2,
        managed_pages: 64,
        ..ZoneConfig::normal(66 * PAGE_SIZE)
    };
    Node::single_zone(zone, Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 16).unwrap()).unwrap()
}

/// Pageblock 0 Movable, 1 Unmovable, 2 HighAtomic, the rest Movable. Free blocks: +0/1
/// (Movable, below pageblock order), +4/0 (Unmovable), +8/2 (HighAtomic), +16/3 (two
/// Movable pageblocks), +32/4; +2 and +3 are reserved; every other page is allocated.
const FREE: [(u64, u32); 5] = [(0, 1), (4, 0), (8, 2), (16, 3), (32, 4)];

/// A valid node in the fixture's layout and its zone's first pfn.
fn valid() -> (Node, u64) {
    let n = node();
    let start = n.zone(0).start_pfn();
    let blocks = n.zone(0).shared.pageblocks().len();
    let mut block_types = vec![MigrateType::Movable; blocks];
    block_types[1] = MigrateType::Unmovable;
    block_types[2] = MigrateType::HighAtomic;
    let free = FREE.iter().map(|&(p, o)| (start + p, o)).collect();
    let layout = ZoneLayout { block_types, free, reserved: vec![(start + 2, 2)] };
    n.lock_zone(0).set_layout(&layout).unwrap();
    n.verify().expect("the fixture is valid");
    (n, start)
}

/// The invariant verify() reports broken.
fn broken(n: &Node) -> Invariant {
    n.verify().expect_err("verify() missed the corruption").invariant
}

fn zone<R>(n: &Node, f: impl FnOnce(&Zone) -> R) -> R {
    f(&n.zone(0))
}

fn info(n: &Node, pfn: u64) -> PageInfo {
    zone(n, |z| z.shared.memmap().info(z.idx(pfn)))
}

fn set_info(n: &Node, pfn: u64, info: PageInfo) {
    zone(n, |z| z.shared.memmap().set_info(z.idx(pfn), info));
}

fn set_state(n: &Node, pfn: u64, state: PageState, order: u32) {
    zone(n, |z| z.shared.memmap().set_head(z.idx(pfn), state, order));
}

/// Move the free block `pfn` from list `(order, mt)` to list `(to_order, to_mt)`, its
/// memmap record and every count left as they were.
fn relist(n: &Node, pfn: u64, (order, mt): (u32, MigrateType), (to_order, to_mt): (u32, MigrateType)) {
    zone(n, |z| {
        let fa = z.shared.free_areas();
        fa.list(order, mt).del(z.pages(), z.idx(pfn));
        fa.list(to_order, to_mt).add_head(z.pages(), z.idx(pfn));
    });
}

// 1. Every pfn in exactly one block, aligned and inside the zone.

#[test]
fn a_tail_page_outside_any_block() {
    let (n, s) = valid();
    set_info(&n, s + 5, PageInfo::TAIL);
    assert_eq!(broken(&n), Invariant::StrayTail);
}

#[test]
fn a_block_above_the_max_order() {
    let (n, s) = valid();
    set_info(&n, s + 48, PageInfo { order: 5, ..info(&n, s + 48) });
    assert_eq!(broken(&n), Invariant::OrderAboveMax);
}

#[test]
fn a_misaligned_block() {
    let (n, s) = valid();
    set_info(&n, s + 5, PageInfo { order: 1, ..info(&n, s + 5) });
    set_info(&n, s + 6, PageInfo::TAIL);
    assert_eq!(broken(&n), Invariant::UnalignedBlock);
}

#[test]
fn a_block_past_the_zone_end() {
    let (n, s) = valid();
    set_info(&n, s + 64, PageInfo { order: 2, ..info(&n, s + 64) });
    set_info(&n, s + 65, PageInfo::TAIL);
    assert_eq!(broken(&n), Invariant::BlockPastZone);
}

#[test]
fn an_allocated_page_inside_a_free_block() {
    let (n, s) = valid();
    set_info(&n, s + 17, info(&n, s + 5));
    assert_eq!(broken(&n), Invariant::HeadInsideBlock);
}

// 2. Free blocks and pageblock types.

#[test]
fn a_large_free_block_over_a_pageblock_of_another_type() {
    let (n, s) = valid();
    // +16/3 covers pageblocks 4 and 5.
    zone(&n, |z| z.shared.pageblocks().set_migratetype(5, MigrateType::Unmovable));
    assert_eq!(info(&n, s + 16).order, 3);
    assert_eq!(broken(&n), Invariant::FreeBlockSpansTypes);
}

#[test]
fn a_buddy_below_pageblock_order_on_the_list_of_another_type() {
    let (n, _) = valid();
    // +0/1 stays on the Movable list of a pageblock now Unmovable.
    zone(&n, |z| z.shared.pageblocks().set_migratetype(0, MigrateType::Unmovable));
    assert_eq!(broken(&n), Invariant::WrongTypeList);
}

// 3. The buddy lists.

#[test]
fn a_bad_back_link() {
    let (n, s) = valid();
    zone(&n, |z| z.pages().set_prev(z.idx(s + 4), z.idx(s)));
    assert_eq!(broken(&n), Invariant::ListLinkage);
}

/// Regression: verify() panicked (an index out of bounds) on a link past the memmap.
#[test]
fn a_forward_link_past_the_memmap() {
    let (n, s) = valid();
    zone(&n, |z| z.pages().set_next(z.idx(s + 4), z.shared.memmap().len() as u32));
    assert_eq!(broken(&n), Invariant::ListLinkage);
}

#[test]
fn a_list_entry_of_the_wrong_order() {
    let (n, s) = valid();
    let ha = MigrateType::HighAtomic;
    relist(&n, s + 8, (2, ha), (1, ha));
    assert_eq!(broken(&n), Invariant::ListEntry);
}

#[test]
fn an_allocated_page_on_a_free_list() {
    let (n, s) = valid();
    zone(&n, |z| z.shared.free_areas().list(0, MigrateType::Unmovable).add_tail(z.pages(), z.idx(s + 5)));
    assert_eq!(broken(&n), Invariant::ListEntry);
}

#[test]
fn a_page_on_two_lists() {
    let (n, s) = valid();
    // +4 stays the only entry of list (0, Unmovable) and becomes that of (1, Unmovable).
    zone(&n, |z| z.shared.free_areas().list(1, MigrateType::Unmovable).add_head(z.pages(), z.idx(s + 4)));
    assert_eq!(broken(&n), Invariant::OnTwoLists);
}

#[test]
fn a_free_head_on_no_list() {
    let (n, s) = valid();
    zone(&n, |z| z.shared.free_areas().list(0, MigrateType::Unmovable).del(z.pages(), z.idx(s + 4)));
    assert_eq!(broken(&n), Invariant::FreeHeadNotListed);
}

// 4. The free-area counts.

#[test]
fn nr_free_off_by_one() {
    let (n, _) = valid();
    zone(&n, |z| z.shared.free_areas().counters(3, MigrateType::Movable).0.add(1));
    assert_eq!(broken(&n), Invariant::NrFree);
}

#[test]
fn mt_nr_free_off_by_one() {
    let (n, _) = valid();
    let per_list = zone(&n, |z| z.shared.free_areas().counters(3, MigrateType::Movable).1.map(|c| c.add(1)));
    assert!(per_list.is_some(), "the default layout counts per list");
    assert_eq!(broken(&n), Invariant::MtNrFree);
}

// 5. The free-page statistics.

fn stat_off_by_one(item: ZoneStat) -> Invariant {
    let (n, _) = valid();
    zone(&n, |z| z.shared.counters().zone_stat[item as usize].add(1));
    broken(&n)
}

#[test]
fn nr_free_pages_off_by_one() {
    assert_eq!(stat_off_by_one(ZoneStat::NrFreePages), Invariant::NrFreePages);
}

#[test]
fn nr_free_cma_pages_off_by_one() {
    assert_eq!(stat_off_by_one(ZoneStat::NrFreeCmaPages), Invariant::NrFreeCmaPages);
}

#[test]
fn nr_free_pages_blocks_off_by_one() {
    assert_eq!(stat_off_by_one(ZoneStat::NrFreePagesBlocks), Invariant::NrFreePagesBlocks);
}

#[test]
fn nr_free_highatomic_off_by_one() {
    let (n, _) = valid();
    zone(&n, |z| z.shared.counters().nr_free_highatomic.sub(1));
    assert_eq!(broken(&n), Invariant::NrFreeHighatomic);
}

// 6. Merging.

#[test]
fn two_free_buddies_below_pageblock_order_not_merged() {
    let (n, s) = valid();
    // +5, buddy of the free +4 in the same Unmovable pageblock, freed without the merge.
    zone(&n, |z| {
        z.shared.memmap().clear(z.idx(s + 5));
        z.add_to_free_list(z.pages(), s + 5, 0, MigrateType::Unmovable, ListEnd::Tail);
        z.account_freepages(1, MigrateType::Unmovable);
    });
    assert_eq!(broken(&n), Invariant::UnmergedBuddies);
}

// 7. The HighAtomic reserve.

#[test]
fn nr_reserved_highatomic_wrong() {
    let (n, _) = valid();
    zone(&n, |z| z.shared.counters().nr_reserved_highatomic.add(z.pageblock_nr_pages()));
    assert_eq!(broken(&n), Invariant::NrReservedHighatomic);
}

// 8. The page census.

#[test]
fn a_reserved_page_of_order_one() {
    let (n, s) = valid();
    set_state(&n, s + 2, PageState::Reserved, 1);
    set_info(&n, s + 3, PageInfo::TAIL);
    assert_eq!(broken(&n), Invariant::ReservedOrOfflineOrder);
}

#[test]
fn a_managed_page_marked_offline() {
    let (n, s) = valid();
    set_state(&n, s + 5, PageState::Offline, 0);
    assert_eq!(broken(&n), Invariant::ManagedPages);
}

#[test]
fn a_reserved_page_marked_offline() {
    let (n, s) = valid();
    set_state(&n, s + 2, PageState::Offline, 0);
    assert_eq!(broken(&n), Invariant::ReservedPages);
}

// 9. The per-CPU lists.

/// The valid node with pages on CPU 0's lists, and one of them.
fn with_pcp_pages() -> (Node, u64) {
    let (n, _) = valid();
    let pfn = n.alloc_pages(0, 0, Gfp::HIGHUSER_MOVABLE).unwrap();
    n.free_pages(0, pfn, 0).unwrap();
    assert_eq!(info(&n, pfn.0).state, PageState::Pcp, "freed to the per-CPU list");
    n.verify().expect("pages on a per-CPU list are valid");
    (n, pfn.0)
}

#[test]
fn a_per_cpu_page_of_the_wrong_order() {
    let (n, pfn) = with_pcp_pages();
    set_state(&n, pfn, PageState::Pcp, 1);
    assert_eq!(broken(&n), Invariant::PcpEntry);
}

#[test]
fn a_per_cpu_count_off_by_one() {
    let (n, _) = with_pcp_pages();
    zone(&n, |z| z.shared.counters().cpus[0].count.add(1));
    assert_eq!(broken(&n), Invariant::PcpCount);
}

#[test]
fn a_per_cpu_page_on_no_cpu_list() {
    let (n, s) = with_pcp_pages();
    assert_eq!(info(&n, s + 5).state, PageState::Allocated);
    set_state(&n, s + 5, PageState::Pcp, 0);
    assert_eq!(broken(&n), Invariant::PcpTotal);
}
