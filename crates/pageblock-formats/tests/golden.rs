//! Golden round trips: every real /proc file re-renders byte for byte, and the sample
//! snapshot's files agree with each other the way the kernel's counters must.

mod common;

use common::{data, SNAPSHOTS};
use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::ZoneInfo;

/// `(file under tests/data, kind)` of every real /proc file we carry.
fn all_files() -> Vec<(String, &'static str)> {
    let mut v: Vec<(String, &str)> = vec![
        ("buddyinfo.txt".into(), "buddyinfo"),
        ("pagetypeinfo.txt".into(), "pagetypeinfo"),
        ("zoneinfo.txt".into(), "zoneinfo"),
        ("vmstat.txt".into(), "vmstat"),
    ];
    for s in SNAPSHOTS {
        for kind in ["buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat"] {
            v.push((format!("snapshots/{s}.{kind}"), kind));
        }
    }
    v
}

fn rerender(kind: &str, text: &str) -> String {
    match kind {
        "buddyinfo" => BuddyInfo::parse(text).map(|m| m.render()),
        "pagetypeinfo" => PageTypeInfo::parse(text).map(|m| m.render()),
        "zoneinfo" => ZoneInfo::parse(text).map(|m| m.render()),
        "vmstat" => VmStat::parse(text).map(|m| m.render()),
        _ => unreachable!(),
    }
    .unwrap_or_else(|e| panic!("{kind}: {e}"))
}

#[test]
fn every_proc_file_round_trips_byte_for_byte() {
    for (file, kind) in all_files() {
        let text = data(&file);
        let out = rerender(kind, &text);
        if out != text {
            let first_diff = out.lines().zip(text.lines()).position(|(a, b)| a != b);
            panic!("{file}: re-render differs (first differing line index {first_diff:?})");
        }
    }
}

/// The machine's own `/proc/swaps` with one swap file on (`swapon` of a 64 MiB file).
#[test]
fn a_real_proc_swaps_reads_as_its_areas() {
    use pageblock_formats::swaps::{SwapArea, Swaps};
    let s = Swaps::parse(&data("swaps.txt")).unwrap();
    let area = SwapArea {
        filename: "/var/tmp/pb-swaps-sample".into(),
        kind: "file".into(),
        size_kib: 65532,
        used_kib: 0,
        priority: -2,
    };
    assert_eq!(s.areas, [area]);
    assert_eq!(s.size_kib(), 65532);
}

#[test]
fn sample_shapes() {
    let b = BuddyInfo::parse(&data("buddyinfo.txt")).unwrap();
    assert_eq!(b.zones.len(), 3);
    assert_eq!(b.zone(0, "Normal").unwrap().nr_free[0], 173);
    let p = PageTypeInfo::parse(&data("pagetypeinfo.txt")).unwrap();
    assert_eq!(p.nodes.len(), 1);
    let n = &p.nodes[0];
    assert_eq!((n.pageblock_order, n.pages_per_block, n.nr_page_orders), (9, 512, 11));
    assert_eq!(n.blocks.migratetypes, ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"]);
    assert_eq!(n.free.len(), 15);
    assert!(n.mixed.is_none());
    let z = ZoneInfo::parse(&data("zoneinfo.txt")).unwrap();
    assert_eq!(z.zones.len(), 5);
    let dma = z.zone(0, "DMA").unwrap();
    assert_eq!(dma.node_stats.as_ref().map(Vec::len), Some(51));
    assert_eq!(dma.protection, [0, 3019, 4299, 4299, 4299]);
    let normal = z.zone(0, "Normal").unwrap();
    assert!(normal.node_stats.is_none());
    assert_eq!((normal.pages_free, normal.min, normal.promo), (268985, 5012, Some(8771)));
    let pz = normal.populated.as_ref().unwrap();
    assert_eq!(pz.pagesets.len(), 2);
    assert_eq!(pz.pagesets[1].count, 3117);
    assert_eq!(pz.pagesets[1].high_max, Some(20480));
    assert_eq!(pz.start_pfn, 1048576);
    assert!(z.zone(0, "Movable").unwrap().populated.is_none());
    let v = VmStat::parse(&data("vmstat.txt")).unwrap();
    assert_eq!(v.items.len(), 192);
    assert_eq!(v.items.last().map(|(n, v)| (n.as_str(), *v)), Some(("nr_unstable", 0)));
}

/// Per zone: Σ over migratetypes of pagetypeinfo free counts at order k == buddyinfo column
/// k, and Σ count << order == zoneinfo `pages free` == `nr_free_pages`.
fn check_invariants(buddy: &str, pti: &str, zi: &str) -> Result<(), String> {
    let b = BuddyInfo::parse(buddy).map_err(|e| e.to_string())?;
    let p = PageTypeInfo::parse(pti).map_err(|e| e.to_string())?;
    let z = ZoneInfo::parse(zi).map_err(|e| e.to_string())?;
    for row in &b.zones {
        let node =
            p.nodes.iter().find(|n| n.free.iter().any(|r| r.node == row.node)).ok_or("node missing")?;
        let sums = node.zone_free_by_order(row.node, &row.zone);
        if sums != row.nr_free {
            return Err(format!("{}: pagetypeinfo sums {sums:?} != buddyinfo {:?}", row.zone, row.nr_free));
        }
        let zone = z.zone(row.node, &row.zone).ok_or("zone missing in zoneinfo")?;
        let free = row.free_pages();
        if zone.pages_free != free || zone.stat("nr_free_pages") != Some(free) {
            return Err(format!("{}: Σ count<<order = {free}, zoneinfo says {}", row.zone, zone.pages_free));
        }
        let blocks: u64 =
            node.blocks.rows.iter().filter(|r| r.zone == row.zone).flat_map(|r| &r.counts).sum();
        if blocks == 0 {
            return Err(format!("{}: no pageblocks counted", row.zone));
        }
    }
    Ok(())
}

#[test]
fn cross_file_invariants_hold_on_the_sample() {
    check_invariants(&data("buddyinfo.txt"), &data("pagetypeinfo.txt"), &data("zoneinfo.txt")).unwrap();
    // The documented totals: Normal has 268985 free pages.
    let z = ZoneInfo::parse(&data("zoneinfo.txt")).unwrap();
    assert_eq!(z.zone(0, "Normal").unwrap().pages_free, 268985);
}

#[test]
fn cross_file_invariants_on_the_snapshots() {
    for s in SNAPSHOTS {
        let r = check_invariants(
            &data(&format!("snapshots/{s}.buddyinfo")),
            &data(&format!("snapshots/{s}.pagetypeinfo")),
            &data(&format!("snapshots/{s}.zoneinfo")),
        );
        // Copied one after another on a live (quiet) machine; they agree exactly too.
        assert_eq!(r, Ok(()), "{s}");
    }
}

#[test]
fn zoneinfo_matches_vmstat_totals_on_the_sample() {
    let z = ZoneInfo::parse(&data("zoneinfo.txt")).unwrap();
    let v = VmStat::parse(&data("vmstat.txt")).unwrap();
    let zone_sum: u64 = z.zones.iter().filter_map(|zone| zone.stat("nr_free_pages")).sum();
    let vm = v.get("nr_free_pages").unwrap();
    // vmstat was read a few ms later than zoneinfo; both must be of the same magnitude.
    assert!(zone_sum.abs_diff(vm) < zone_sum / 100, "zoneinfo {zone_sum} vs vmstat {vm}");
}
