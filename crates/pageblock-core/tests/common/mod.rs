//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use pageblock_core::memmap::PageInfo;
use pageblock_core::{MigrateType, VmEvent, Zone, ZoneStat};

/// Everything observable about a zone, for "nothing changed" assertions: counters, the
/// order of every free list, pageblock types and every page's state word.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    counters: Vec<u64>,
    lists: Vec<Vec<u64>>,
    blocks: Vec<MigrateType>,
    pages: Vec<PageInfo>,
}

pub fn fingerprint(zone: &Zone) -> Fingerprint {
    let c = zone.counters();
    let mut counters: Vec<u64> = VmEvent::ALL.iter().map(|&e| c.event(e)).collect();
    counters.extend(ZoneStat::ALL.iter().map(|&s| c.zone_stat(s)));
    counters.push(c.nr_free_highatomic());
    counters.push(c.nr_reserved_highatomic());
    counters.push(c.watermark_boost());
    let mut lists = Vec::new();
    for order in 0..=zone.max_order() {
        let fa = zone.shared().free_areas();
        counters.push(fa.nr_free(order));
        for mt in MigrateType::ALL {
            counters.push(fa.mt_nr_free(order, mt).unwrap_or(u64::MAX));
            lists.push(zone.free_list(order, mt).map(|p| p.0).collect());
        }
    }
    let pb = zone.shared().pageblocks();
    let blocks = (0..pb.len()).map(|b| pb.migratetype(b)).collect();
    let mm = zone.shared().memmap();
    let pages = (0..mm.len() as u32).map(|i| mm.info(i)).collect();
    Fingerprint { counters, lists, blocks, pages }
}

/// Free pages per order, all types (a buddyinfo row).
pub fn buddyinfo(zone: &Zone) -> Vec<u64> {
    (0..=zone.max_order()).map(|o| zone.shared().free_areas().nr_free(o)).collect()
}
