//! Random models survive `parse(render(m)) == m` for every format.

use pageblock_formats::buddyinfo::{BuddyInfo, BuddyInfoZone};
use pageblock_formats::compaction::{
    CompactResult, CompactionEvent, KcompactdWake, MmCompactionBegin, MmCompactionDefer, MmCompactionEnd,
    MmCompactionIsolate, MmCompactionKcompactdSleep, MmCompactionMigratepages, MmCompactionSuitable,
    MmCompactionTryToCompactPages, ZoneType,
};
use pageblock_formats::extfrag::{ExtfragIndex, IndexRow, UnusableIndex};
use pageblock_formats::ftrace::{Line, Tgid, Timestamp, TraceLine};
use pageblock_formats::gfp::Gfp;
use pageblock_formats::kmem::{
    KmemEvent, MmPageAlloc, MmPageAllocExtfrag, MmPageAllocZoneLocked, MmPageFree, MmPageFreeBatched,
    MmPagePcpuDrain, PagePtr,
};
use pageblock_formats::pagetypeinfo::{
    BlockRow, BlockTable, FreeCount, FreeRow, PageTypeInfo, PageTypeInfoNode,
};
use pageblock_formats::vmstat::VmStat;
use pageblock_formats::zoneinfo::{Pageset, PopulatedZone, ZoneInfo, ZoneInfoZone};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_]{0,13}"
}

fn stats() -> impl Strategy<Value = Vec<(String, u64)>> {
    vec((name(), any::<u64>()), 0..8)
}

fn buddyinfo() -> impl Strategy<Value = BuddyInfo> {
    (1usize..13).prop_flat_map(|orders| {
        vec((any::<u32>(), name(), vec(any::<u64>(), orders)), 1..5).prop_map(|zs| BuddyInfo {
            zones: zs
                .into_iter()
                .map(|(node, zone, nr_free)| BuddyInfoZone { node, zone, nr_free })
                .collect(),
        })
    })
}

fn block_table() -> impl Strategy<Value = BlockTable> {
    vec(name(), 1..7).prop_flat_map(|migratetypes| {
        let n = migratetypes.len();
        vec((any::<u32>(), name(), vec(any::<u64>(), n)), 0..4).prop_map(move |rows| BlockTable {
            migratetypes: migratetypes.clone(),
            rows: rows.into_iter().map(|(node, zone, counts)| BlockRow { node, zone, counts }).collect(),
        })
    })
}

fn pagetypeinfo_node() -> impl Strategy<Value = PageTypeInfoNode> {
    (1usize..13).prop_flat_map(|orders| {
        let count = (any::<u64>(), any::<bool>()).prop_map(|(count, overflow)| FreeCount { count, overflow });
        let row = (any::<u32>(), name(), name(), vec(count, orders))
            .prop_map(|(node, zone, migratetype, counts)| FreeRow { node, zone, migratetype, counts });
        (any::<u32>(), any::<u64>(), vec(row, 0..8), block_table(), option::of(block_table())).prop_map(
            move |(pageblock_order, pages_per_block, free, blocks, mixed)| PageTypeInfoNode {
                pageblock_order,
                pages_per_block,
                nr_page_orders: orders,
                free,
                blocks,
                mixed,
            },
        )
    })
}

fn pageset() -> impl Strategy<Value = Pageset> {
    (
        any::<u32>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        option::of(any::<i32>()),
        option::of(any::<i32>()),
        any::<i32>(),
    )
        .prop_map(|(cpu, count, high, batch, high_min, high_max, stat_threshold)| Pageset {
            cpu,
            count,
            high,
            batch,
            high_min,
            high_max,
            stat_threshold,
        })
}

fn populated() -> impl Strategy<Value = PopulatedZone> {
    (stats(), vec(pageset(), 0..4), any::<u32>(), any::<u64>()).prop_map(
        |(stats, pagesets, node_unreclaimable, start_pfn)| PopulatedZone {
            stats,
            pagesets,
            node_unreclaimable,
            start_pfn,
        },
    )
}

fn zoneinfo_zone() -> impl Strategy<Value = ZoneInfoZone> {
    let head = (any::<u32>(), name(), option::of(stats()));
    let marks = (any::<[u64; 5]>(), option::of(any::<u64>()), any::<[u64; 4]>());
    let tail = (vec(any::<i64>(), 0..6), option::of(populated()));
    (head, marks, tail).prop_map(
        |((node, zone, node_stats), ([free, boost, min, low, high], promo, sz), (protection, populated))| {
            ZoneInfoZone {
                node,
                zone,
                node_stats,
                pages_free: free,
                boost,
                min,
                low,
                high,
                promo,
                spanned: sz[0],
                present: sz[1],
                managed: sz[2],
                cma: sz[3],
                protection,
                populated,
            }
        },
    )
}

fn page_ptr() -> impl Strategy<Value = PagePtr> + Clone {
    prop_oneof![
        any::<u64>().prop_map(PagePtr::from_hex16),
        any::<u64>().prop_map(PagePtr::hashed),
        Just(PagePtr::null()),
        "[0-9a-fA-Fx()nil]{1,20}".prop_map(|s| PagePtr::new(&s).expect("non-empty")),
    ]
}

fn kmem_event() -> impl Strategy<Value = KmemEvent> {
    let p = (page_ptr(), any::<u64>());
    prop_oneof![
        (p.clone(), any::<u32>(), any::<i32>(), any::<u64>()).prop_map(
            |((page, pfn), order, migratetype, g)| {
                KmemEvent::PageAlloc(MmPageAlloc { page, pfn, order, migratetype, gfp_flags: Gfp(g) })
            }
        ),
        (p.clone(), any::<u32>()).prop_map(|((page, pfn), order)| KmemEvent::PageFree(MmPageFree {
            page,
            pfn,
            order
        })),
        p.clone().prop_map(|(page, pfn)| KmemEvent::PageFreeBatched(MmPageFreeBatched { page, pfn })),
        (p.clone(), any::<u32>(), any::<i32>(), any::<i32>()).prop_map(
            |((page, pfn), order, migratetype, percpu_refill)| {
                KmemEvent::PageAllocZoneLocked(MmPageAllocZoneLocked {
                    page,
                    pfn,
                    order,
                    migratetype,
                    percpu_refill,
                })
            }
        ),
        (p.clone(), any::<u32>(), any::<i32>()).prop_map(|((page, pfn), order, migratetype)| {
            KmemEvent::PagePcpuDrain(MmPagePcpuDrain { page, pfn, order, migratetype })
        }),
        (p, any::<[i32; 7]>()).prop_map(|((page, pfn), v)| KmemEvent::PageAllocExtfrag(MmPageAllocExtfrag {
            page,
            pfn,
            alloc_order: v[0],
            fallback_order: v[1],
            pageblock_order: v[2],
            alloc_migratetype: v[3],
            fallback_migratetype: v[4],
            fragmenting: v[5],
            change_ownership: v[6],
        })),
    ]
}

/// Any compaction event whose fields the kernel could print (`defer_shift` < 64).
fn compaction_event() -> impl Strategy<Value = CompactionEvent> {
    use CompactionEvent as E;
    let zone = prop_oneof![0u32..5, any::<u32>()].prop_map(ZoneType);
    let result = prop_oneof![-1i32..10, any::<i32>()].prop_map(CompactResult);
    let isolate = any::<[u64; 4]>().prop_map(|v| MmCompactionIsolate {
        start_pfn: v[0],
        end_pfn: v[1],
        nr_scanned: v[2],
        nr_taken: v[3],
    });
    let begin = (any::<[u64; 4]>(), any::<bool>()).prop_map(|(v, sync)| MmCompactionBegin {
        zone_start: v[0],
        migrate_pfn: v[1],
        free_pfn: v[2],
        zone_end: v[3],
        sync,
    });
    let suitable = (any::<[i32; 2]>(), zone.clone(), result.clone())
        .prop_map(|(v, idx, ret)| MmCompactionSuitable { nid: v[0], idx, order: v[1], ret });
    let defer = (any::<[i32; 3]>(), zone.clone(), any::<u32>(), 0u32..64).prop_map(
        |(v, idx, considered, defer_shift)| MmCompactionDefer {
            nid: v[0],
            idx,
            order: v[1],
            order_failed: v[2],
            considered,
            defer_shift,
        },
    );
    let wake = (any::<[i32; 2]>(), zone).prop_map(|(v, z)| KcompactdWake {
        nid: v[0],
        order: v[1],
        highest_zoneidx: z,
    });
    prop_oneof![
        isolate.clone().prop_map(E::IsolateMigratepages),
        isolate.clone().prop_map(E::IsolateFreepages),
        isolate.prop_map(E::FastIsolateFreepages),
        any::<[u64; 2]>()
            .prop_map(|v| E::Migratepages(MmCompactionMigratepages { nr_migrated: v[0], nr_failed: v[1] })),
        begin.clone().prop_map(E::Begin),
        (begin, result).prop_map(|(scanners, status)| E::End(MmCompactionEnd { scanners, status })),
        (any::<i32>(), any::<u64>(), any::<i32>()).prop_map(|(order, g, prio)| {
            E::TryToCompactPages(MmCompactionTryToCompactPages { order, gfp_mask: Gfp(g), prio })
        }),
        suitable.clone().prop_map(E::Finished),
        suitable.prop_map(E::Suitable),
        defer.clone().prop_map(E::Deferred),
        defer.clone().prop_map(E::DeferCompaction),
        defer.prop_map(E::DeferReset),
        any::<i32>().prop_map(|nid| E::KcompactdSleep(MmCompactionKcompactdSleep { nid })),
        wake.clone().prop_map(E::WakeupKcompactd),
        wake.prop_map(E::KcompactdWake),
    ]
}

fn trace_line() -> impl Strategy<Value = TraceLine> {
    let comm = "([!-~é][ -~]{0,14})?";
    let tgid = option::of(prop_oneof![any::<u32>().prop_map(Tgid::Pid), Just(Tgid::Unknown)]);
    let flags = option::of("[.dDNnshHzZbBlLpX0-9a-f]{4,5}");
    let ts = (any::<u64>(), 0u32..1_000_000).prop_map(|(secs, usecs)| Timestamp { secs, usecs });
    ((comm, any::<u32>(), tgid, any::<u32>()), (flags, ts, "[a-z_][a-z0-9_]{0,24}", "[ -~]{0,60}")).prop_map(
        |((comm, pid, tgid, cpu), (flags, timestamp, event, payload))| TraceLine {
            comm,
            pid,
            tgid,
            cpu,
            flags,
            timestamp,
            event,
            payload,
        },
    )
}

proptest! {
    #[test]
    fn buddyinfo_round_trips(m in buddyinfo()) {
        prop_assert_eq!(BuddyInfo::parse(&m.render()), Ok(m));
    }

    #[test]
    fn pagetypeinfo_round_trips(nodes in vec(pagetypeinfo_node(), 1..3)) {
        let m = PageTypeInfo { nodes };
        prop_assert_eq!(PageTypeInfo::parse(&m.render()), Ok(m));
    }

    #[test]
    fn zoneinfo_round_trips(zones in vec(zoneinfo_zone(), 1..6)) {
        let m = ZoneInfo { zones };
        prop_assert_eq!(ZoneInfo::parse(&m.render()), Ok(m));
    }

    #[test]
    fn vmstat_round_trips(items in vec((name(), any::<u64>()), 1..40)) {
        let m = VmStat { items };
        prop_assert_eq!(VmStat::parse(&m.render()), Ok(m));
    }

    #[test]
    fn extfrag_files_round_trip(rows in vec((any::<u32>(), name(), vec(any::<i32>(), 3)), 1..4)) {
        let zones: Vec<IndexRow> = rows.into_iter().map(|(node, zone, values)| IndexRow { node, zone, values }).collect();
        let u = UnusableIndex { zones: zones.clone() };
        prop_assert_eq!(UnusableIndex::parse(&u.render()), Ok(u));
        let e = ExtfragIndex { zones };
        prop_assert_eq!(ExtfragIndex::parse(&e.render()), Ok(e));
    }

    #[test]
    fn kmem_payloads_round_trip(ev in kmem_event()) {
        let payload = ev.render_payload();
        prop_assert_eq!(KmemEvent::parse(ev.name(), &payload), Ok(ev.clone()));
        prop_assert_eq!(KmemEvent::parse_tolerant(ev.name(), &payload), Ok(ev));
    }

    #[test]
    fn compaction_payloads_round_trip(ev in compaction_event()) {
        let payload = ev.render_payload();
        prop_assert_eq!(CompactionEvent::parse(ev.name(), &payload), Ok(ev));
    }

    /// What the strict parser accepts renders back to the same bytes, even after a mutation.
    #[test]
    fn accepted_compaction_payloads_re_render(ev in compaction_event(), pos in any::<prop::sample::Index>(), byte in b' '..=b'~', cut in any::<bool>()) {
        let mut p = ev.render_payload().into_bytes();
        let i = pos.index(p.len().max(1)).min(p.len());
        if cut { p.truncate(i) } else if i < p.len() { p[i] = byte }
        let text = String::from_utf8(p).expect("ASCII");
        if let Ok(back) = CompactionEvent::parse(ev.name(), &text) {
            prop_assert_eq!(back.render_payload(), text);
        }
    }

    #[test]
    fn gfp_round_trips(bits in any::<u64>()) {
        let g = Gfp(bits);
        let s = g.render();
        prop_assert_eq!(Gfp::parse(&s), Ok(g));
    }

    #[test]
    fn gfp_of_table_bits_round_trips(picks in vec(0usize..38, 0..8)) {
        let g = picks.iter().fold(Gfp(0), |g, &i| g | pageblock_formats::gfp::GFP_FLAG_TABLE[i].0);
        let s = g.render();
        prop_assert!(!s.contains("0x"), "{} has leftover bits", s);
        prop_assert_eq!(Gfp::parse(&s), Ok(g));
    }

    #[test]
    fn lost_lines_round_trip(cpu in any::<u32>(), events in option::of(any::<u64>())) {
        let l = Line::Lost { cpu, events };
        prop_assert_eq!(Line::parse(&l.render()), Ok(l));
    }

    #[test]
    fn trace_lines_round_trip(l in trace_line()) {
        let text = l.render();
        prop_assert_eq!(Line::parse(&text), Ok(Line::Event(l.clone())));
        if l.flags.is_none() && l.tgid.is_none() && !l.comm.ends_with(' ') {
            let perf = l.render_perf("kmem", 5, 30);
            prop_assert_eq!(TraceLine::parse_perf(&perf), Ok(l));
        }
    }
}
