//! The `/proc` snapshots beside a trace (`before.*`, `after.*`), as the replay uses them.

use pageblock_core::migratetype::MigrateType;
use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::pagetypeinfo::PageTypeInfo;

use super::start::ZoneTarget;

/// What node 0's zone `zone` held according to a pagetypeinfo snapshot. `None` if the zone
/// is not in it. A count the kernel printed as `>100000` is taken as 100000.
pub fn zone_target(pti: &PageTypeInfo, zone: &str) -> Option<ZoneTarget> {
    let node = pti.nodes.first()?;
    let mut t = ZoneTarget::default();
    let mut found = false;
    for row in node.free.iter().filter(|r| r.node == 0 && r.zone == zone) {
        let Some(mt) = migratetype_named(&row.migratetype) else { continue };
        for (o, c) in row.counts.iter().enumerate().take(t.free[0].len()) {
            t.free[mt.index()][o] = c.count;
        }
        found = true;
    }
    let table = &node.blocks;
    for row in table.rows.iter().filter(|r| r.node == 0 && r.zone == zone) {
        for (name, n) in table.migratetypes.iter().zip(&row.counts) {
            if let Some(mt) = migratetype_named(name) {
                t.blocks[mt.index()] = *n;
            }
        }
        found = true;
    }
    found.then_some(t)
}

/// What node 0's zone `zone` of `blocks` pageblocks held according to a buddyinfo snapshot,
/// which counts free blocks per order but not per type: all of them, and every pageblock,
/// taken as Movable (as after boot). `None` if the zone is not in it.
pub fn zone_target_from_buddyinfo(bi: &BuddyInfo, zone: &str, blocks: u64) -> Option<ZoneTarget> {
    let row = bi.zones.iter().find(|z| z.node == 0 && z.zone == zone)?;
    let mut t = ZoneTarget::default();
    let movable = MigrateType::Movable.index();
    t.blocks[movable] = blocks;
    for (slot, &n) in t.free[movable].iter_mut().zip(&row.nr_free) {
        *slot = n;
    }
    Some(t)
}

/// The migratetype `/proc/pagetypeinfo` calls `name`.
pub fn migratetype_named(name: &str) -> Option<MigrateType> {
    MigrateType::ALL.into_iter().find(|mt| mt.name() == name)
}
