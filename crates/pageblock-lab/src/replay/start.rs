//! The state a replay starts from: a real machine's `/proc/pagetypeinfo` (free blocks per
//! order and type, pageblocks per type) made concrete in a simulated zone.
//!
//! The snapshot says how many, never where. The plan places them so that what the trace
//! tells about the start holds:
//!
//! * pages the trace frees before it ever allocates them were allocated at the start
//!   (*busy*): no free block covers them, so each such free finds its page allocated;
//! * the first free-list or drain event in a pageblock names that pageblock's type at the
//!   time (*votes*): voted types are kept where the counts allow.
//!
//! Order of the plan, per zone: whole free pageblocks (orders ≥ `pageblock_order`) on
//! aligned groups of pageblocks without busy pages; then every other pageblock's type, votes
//! first, the rest interleaved so each type's blocks spread over the zone; then the smaller
//! free blocks, each in a pageblock of its type, at the lowest aligned place that is not
//! busy, not taken and not the buddy of a free block of its order (the kernel would have
//! merged them); last, the zone's reserved pages among what is left, busy pages last of all.
//! The kernel's reservations are scattered through the zone, between free blocks that
//! would otherwise be buddies: a zone whose unreserved pages are all free (a DMA32 nobody
//! used) can only be drawn that way. Whatever does not fit is reported, not forced.

use std::collections::{HashMap, HashSet};

use pageblock_core::migratetype::{MigrateType, MIGRATE_TYPES};
use pageblock_core::types::NR_ORDER_SLOTS;
use pageblock_core::zone::zone_state::ZoneLayout;
use pageblock_core::ZoneConfig;

/// What the snapshot says one zone held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneTarget {
    /// Pageblocks per migratetype (by [`MigrateType::index`]).
    pub blocks: [u64; MIGRATE_TYPES],
    /// Free blocks per migratetype and order.
    pub free: [[u64; NR_ORDER_SLOTS]; MIGRATE_TYPES],
}

/// Pages known to be allocated at the start, as a bitmap over the zone's online pages (also
/// used for "taken" while planning).
#[derive(Clone, Debug)]
pub struct BusyPages {
    start_pfn: u64,
    bits: Vec<u64>,
}

impl BusyPages {
    /// No page busy, for a zone of `cfg`.
    pub fn new(cfg: &ZoneConfig) -> BusyPages {
        BusyPages { start_pfn: cfg.start_pfn, bits: vec![0; cfg.nr_pages().div_ceil(64) as usize] }
    }

    /// Mark `n` pages from `pfn` busy (pages outside the zone are ignored).
    pub fn mark(&mut self, pfn: u64, n: u64) {
        for p in pfn..pfn.saturating_add(n) {
            let Some(i) = p.checked_sub(self.start_pfn) else { continue };
            if let Some(w) = self.bits.get_mut(i as usize / 64) {
                *w |= 1 << (i % 64);
            }
        }
    }

    /// Unmark `n` pages from `pfn`.
    pub fn clear(&mut self, pfn: u64, n: u64) {
        for p in pfn..pfn.saturating_add(n) {
            let Some(i) = p.checked_sub(self.start_pfn) else { continue };
            if let Some(w) = self.bits.get_mut(i as usize / 64) {
                *w &= !(1 << (i % 64));
            }
        }
    }

    /// True if `pfn` is busy (pages outside the zone are).
    pub fn is_busy(&self, pfn: u64) -> bool {
        let Some(i) = pfn.checked_sub(self.start_pfn) else { return true };
        self.bits.get(i as usize / 64).is_none_or(|w| w & (1 << (i % 64)) != 0)
    }

    /// True if any of `n` pages from `pfn` is busy.
    pub fn any(&self, pfn: u64, n: u64) -> bool {
        (pfn..pfn + n).any(|p| self.is_busy(p))
    }

    /// Busy pages.
    pub fn count(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// What did not fit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanShortfall {
    /// Free blocks that found no place, per (type, order).
    pub unplaced: Vec<(MigrateType, u32, u64)>,
    /// Pageblocks whose type had to differ from the snapshot's counts (the snapshot counts
    /// more or fewer blocks than the model has, or whole free blocks forced a type).
    pub blocks_off: u64,
    /// Reserved pages that had to go on busy pages (the trace frees them: those frees will
    /// not match).
    pub reserved_on_busy: u64,
}

/// A zone's pageblock geometry, for planning.
struct Geometry {
    first_block_pfn: u64,
    start: u64,
    end: u64,
    pbo: u32,
    nr_blocks: usize,
}

impl Geometry {
    fn block_pfn(&self, b: usize) -> u64 {
        self.first_block_pfn + ((b as u64) << self.pbo)
    }

    /// True if block `b` lies wholly inside the zone.
    fn whole(&self, b: usize) -> bool {
        let start = self.block_pfn(b);
        start >= self.start && start + (1 << self.pbo) <= self.end
    }
}

/// Plan the layout of a zone of `cfg` with `nr_blocks` pageblocks.
pub fn plan_layout(
    cfg: &ZoneConfig,
    nr_blocks: usize,
    target: &ZoneTarget,
    busy: &BusyPages,
    votes: &HashMap<usize, MigrateType>,
) -> (ZoneLayout, PlanShortfall) {
    let pbo = cfg.pageblock_order;
    // Offline memory at the zone's top takes no part: its blocks stay Movable and empty.
    let end = cfg.end_pfn() - cfg.offline_pages;
    let first_block_pfn = cfg.start_pfn & !((1 << pbo) - 1);
    let online_blocks = ((end - first_block_pfn).div_ceil(1 << pbo) as usize).min(nr_blocks);
    let g = Geometry { first_block_pfn, start: cfg.start_pfn, end, pbo, nr_blocks: online_blocks };
    let mut types: Vec<Option<MigrateType>> = vec![None; g.nr_blocks];
    let mut remaining = target.blocks.map(|n| n as i64);
    let mut free = Vec::new();
    let mut short = PlanShortfall::default();
    whole_free_blocks(
        &g,
        cfg.max_order,
        target,
        busy,
        votes,
        &mut types,
        &mut remaining,
        &mut free,
        &mut short,
    );
    assign_types(&mut types, &mut remaining, votes);
    let mut block_types: Vec<MigrateType> = types.iter().map(|t| t.unwrap_or(MigrateType::Movable)).collect();
    short.blocks_off = remaining.iter().map(|r| r.unsigned_abs()).sum::<u64>() / 2;
    let taken = partial_free_blocks(&g, target, busy, &block_types, &mut free, &mut short);
    let reserved = reserved_runs(&g, cfg.reserved_pages, busy, &taken, &free, &mut short);
    block_types.resize(nr_blocks, MigrateType::Movable);
    (ZoneLayout { block_types, free, reserved }, short)
}

/// Step 4: the reserved pages, lowest first among pages neither free nor busy, then among
/// busy ones that are not free.
fn reserved_runs(
    g: &Geometry,
    count: u64,
    busy: &BusyPages,
    taken: &BusyPages,
    free: &[(u64, u32)],
    short: &mut PlanShortfall,
) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut left = count;
    let take = |p: u64, runs: &mut Vec<(u64, u64)>| match runs.last_mut() {
        Some(r) if r.0 + r.1 == p => r.1 += 1,
        _ => runs.push((p, 1)),
    };
    for p in g.start..g.end {
        if left == 0 {
            break;
        }
        if !taken.is_busy(p) {
            take(p, &mut runs);
            left -= 1;
        }
    }
    if left > 0 {
        let mut free_pages =
            BusyPages { start_pfn: g.start, bits: vec![0; (g.end - g.start).div_ceil(64) as usize] };
        for &(p, o) in free {
            free_pages.mark(p, 1 << o);
        }
        for p in (g.start..g.end).filter(|&p| busy.is_busy(p) && !free_pages.is_busy(p)) {
            if left == 0 {
                break;
            }
            take(p, &mut runs);
            left -= 1;
            short.reserved_on_busy += 1;
        }
    }
    runs.sort_unstable();
    runs
}

/// Step 1: free blocks of pageblock order and up, on aligned groups of whole, unbusy blocks.
#[allow(clippy::too_many_arguments)]
fn whole_free_blocks(
    g: &Geometry,
    max_order: u32,
    target: &ZoneTarget,
    busy: &BusyPages,
    votes: &HashMap<usize, MigrateType>,
    types: &mut [Option<MigrateType>],
    remaining: &mut [i64; MIGRATE_TYPES],
    free: &mut Vec<(u64, u32)>,
    short: &mut PlanShortfall,
) {
    for order in (g.pbo..=max_order).rev() {
        let group = 1usize << (order - g.pbo);
        for mt in MigrateType::ALL {
            let mut need = target.free[mt.index()][order as usize];
            let mut b = 0;
            while need > 0 && b + group <= g.nr_blocks {
                let pfn = g.block_pfn(b);
                let fits = pfn & ((1 << order) - 1) == 0
                    && (b..b + group).all(|i| types[i].is_none() && g.whole(i))
                    && (b..b + group).all(|i| votes.get(&i).is_none_or(|&v| v == mt))
                    && !busy.any(pfn, 1 << order);
                if fits {
                    types[b..b + group].fill(Some(mt));
                    remaining[mt.index()] -= group as i64;
                    free.push((pfn, order));
                    need -= 1;
                    b += group;
                } else {
                    b += 1;
                }
            }
            if need > 0 {
                short.unplaced.push((mt, order, need));
            }
        }
    }
}

/// Step 2: every other block's type: votes first, then the types with the most blocks still
/// to give, so each type spreads over the zone.
fn assign_types(
    types: &mut [Option<MigrateType>],
    remaining: &mut [i64; MIGRATE_TYPES],
    votes: &HashMap<usize, MigrateType>,
) {
    for (b, t) in types.iter_mut().enumerate() {
        if let (None, Some(&v)) = (*t, votes.get(&b)) {
            if remaining[v.index()] > 0 {
                *t = Some(v);
                remaining[v.index()] -= 1;
            }
        }
    }
    for t in types.iter_mut().filter(|t| t.is_none()) {
        let mt = MigrateType::ALL
            .into_iter()
            .filter(|&m| m != MigrateType::Isolate)
            .max_by_key(|m| (remaining[m.index()], std::cmp::Reverse(m.index())))
            .unwrap_or(MigrateType::Movable);
        *t = Some(mt);
        remaining[mt.index()] -= 1;
    }
}

/// Step 3: free blocks below pageblock order, in blocks of their type, spread round-robin
/// over them. Returns the pages now busy or free.
fn partial_free_blocks(
    g: &Geometry,
    target: &ZoneTarget,
    busy: &BusyPages,
    block_types: &[MigrateType],
    free: &mut Vec<(u64, u32)>,
    short: &mut PlanShortfall,
) -> BusyPages {
    let whole: HashSet<u64> = free.iter().map(|&(p, _)| p >> g.pbo).collect();
    let mut taken = busy.clone();
    for &(p, o) in free.iter() {
        taken.mark(p, 1 << o);
    }
    let mut placed: HashSet<(u64, u32)> = HashSet::new();
    for mt in MigrateType::ALL {
        let blocks: Vec<usize> = (0..g.nr_blocks)
            .filter(|&b| block_types[b] == mt && !whole.contains(&(g.block_pfn(b) >> g.pbo)))
            .collect();
        let mut cursor = 0;
        for order in (0..g.pbo).rev() {
            let need = target.free[mt.index()][order as usize];
            let mut unplaced = 0;
            for _ in 0..need {
                match place_one(g, &blocks, &mut cursor, order, &taken, &placed) {
                    Some(pfn) => {
                        taken.mark(pfn, 1 << order);
                        placed.insert((pfn, order));
                        free.push((pfn, order));
                    }
                    None => unplaced += 1,
                }
            }
            if unplaced > 0 {
                short.unplaced.push((mt, order, unplaced));
            }
        }
    }
    taken
}

/// The next place for a free block of `order`, trying `blocks` round-robin from `cursor`.
fn place_one(
    g: &Geometry,
    blocks: &[usize],
    cursor: &mut usize,
    order: u32,
    taken: &BusyPages,
    placed: &HashSet<(u64, u32)>,
) -> Option<u64> {
    let size = 1u64 << order;
    for step in 0..blocks.len() {
        let b = blocks[(*cursor + step) % blocks.len()];
        let start = g.block_pfn(b);
        let slot = (start..start + (1 << g.pbo)).step_by(size as usize).find(|&pfn| {
            pfn >= g.start
                && pfn + size <= g.end
                && !taken.any(pfn, size)
                && !placed.contains(&(pfn ^ size, order))
        });
        if let Some(pfn) = slot {
            *cursor = (*cursor + step + 1) % blocks.len();
            return Some(pfn);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::unstable::ZoneInternals;
    use pageblock_core::{Node, NodeLocks, Policy};
    use pageblock_formats::pagetypeinfo::PageTypeInfo;
    use pageblock_formats::zoneinfo::ZoneInfo;

    const ZONEINFO: &str = include_str!("../../../pageblock-formats/tests/data/snapshots/before.zoneinfo");
    const PAGETYPEINFO: &str =
        include_str!("../../../pageblock-formats/tests/data/snapshots/before.pagetypeinfo");

    /// The acceptance bar of a starting state: the simulated machine prints the real
    /// machine's `/proc/pagetypeinfo`, byte for byte.
    #[test]
    fn the_trace_machine_starts_as_its_snapshot_says() {
        let zi = ZoneInfo::parse(ZONEINFO).unwrap();
        let pti = PageTypeInfo::parse(PAGETYPEINFO).unwrap();
        let node_cfg = crate::machine::node_from_zoneinfo(&zi, &|_| Default::default()).unwrap();
        let node = Node::new(node_cfg, Policy::default()).unwrap();
        for (i, z) in node.shared().zones().iter().enumerate() {
            let target = super::super::snapshot::zone_target(&pti, z.config().zone_type.name()).unwrap();
            let busy = BusyPages::new(z.config());
            let (layout, short) =
                plan_layout(z.config(), z.pageblocks().len(), &target, &busy, &HashMap::new());
            assert_eq!(short, PlanShortfall::default(), "zone {}", z.config().zone_type.name());
            node.lock_zone(i).set_layout(&layout).unwrap();
        }
        node.verify().unwrap();
        let ours =
            pageblock_core::show::pagetypeinfo(&node, pageblock_core::show::PagetypeinfoMode::CountsCapped);
        assert_eq!(ours.render(), PAGETYPEINFO);
    }

    #[test]
    fn busy_pages_are_never_covered_by_a_free_block() {
        let cfg = ZoneConfig { max_order: 4, pageblock_order: 2, ..ZoneConfig::normal(64 * 4096) };
        let mut target = ZoneTarget::default();
        target.blocks[MigrateType::Movable.index()] = 16;
        target.free[MigrateType::Movable.index()][4] = 2;
        target.free[MigrateType::Movable.index()][1] = 3;
        let mut busy = BusyPages::new(&cfg);
        busy.mark(cfg.start_pfn + 1, 1);
        busy.mark(cfg.start_pfn + 17, 1);
        let (layout, short) = plan_layout(&cfg, 16, &target, &busy, &HashMap::new());
        assert_eq!(short, PlanShortfall::default());
        for &(p, o) in &layout.free {
            assert!(!busy.any(p, 1 << o), "{p:#x}/{o} covers a busy page");
        }
        assert_eq!(
            layout.free.iter().filter(|f| f.1 == 4).count(),
            2,
            "two whole groups avoid both busy pages"
        );
    }
}
