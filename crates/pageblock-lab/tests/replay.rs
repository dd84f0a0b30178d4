//! `replay`: synthetic traces that exercise every way a traced free maps onto the
//! simulation, and the real shared trace end to end.

mod common;

use std::path::Path;

use common::Trace;
use pageblock_core::named_policy::policy_named;
use pageblock_formats::gfp::Gfp;
use pageblock_lab::replay;

fn open_loop() -> replay::Options {
    replay::Options { mode: Some(replay::engine::Loop::Open), ..Default::default() }
}

/// `path` replayed under `vanilla` in closed loop, whatever the trace shows.
fn closed_loop(path: &Path) -> replay::ReplayReport {
    let policies = [policy_named("vanilla").unwrap()];
    let options = replay::Options { mode: Some(replay::engine::Loop::Closed), ..Default::default() };
    replay::run(path, &policies, options, &mut |_| {}).unwrap()
}

fn run(path: &Path, policies: &[&str]) -> replay::ReplayReport {
    let policies: Vec<_> = policies.iter().map(|p| policy_named(p).unwrap()).collect();
    replay::run(path, &policies, replay::Options::default(), &mut |_| {}).unwrap()
}

#[test]
fn every_kind_of_free_finds_its_block() {
    let base = 0x100000;
    let mut t = Trace::default();
    t.alloc(0, Some(base), 0, Gfp::KERNEL)
        .free(1, base, 0) // freed on another CPU
        .alloc(1, Some(base + 512), 9, Gfp::TRANSHUGE)
        .free_batched(0, base + 512, 9) // a THP freed in a batch: one free, not two
        .alloc(0, Some(base + 1024), 9, Gfp::TRANSHUGE)
        .free(0, base + 1024 + 3, 0) // a split THP freed piece by piece
        .free(1, base + 1024 + 4, 2)
        .free(0, base + 4096, 0) // allocated before the trace began
        .free(0, base + 4100, 2) // the same, several pages at once
        .alloc(0, None, 9, Gfp::TRANSHUGE) // a request the kernel failed
        .alloc(1, Some(base + 8), 0, Gfp::HIGHUSER_MOVABLE)
        .alloc(1, Some(base + 8), 0, Gfp::HIGHUSER_MOVABLE); // its free was lost
    let report = run(&t.write("frees"), &["vanilla"]);
    let p = &report.policies[0];
    assert_eq!(p.divergence.requests, 6);
    assert_eq!(p.failed_requests, 0);
    assert_eq!(p.divergence.served_failed_requests, 1, "the simulation had a huge page free");
    assert_eq!(p.divergence.lost_frees, 1);
    assert_eq!(p.divergence.unmatched_frees, 0);
    assert_eq!(p.divergence.order_mismatches, 0);
    // Kernel side: 6 frees + 1 batched; the simulation frees what the trace freed, plus the
    // block of the served failed request and the one whose free was lost.
    assert_eq!(report.trace.events["mm_page_free"], 6);
    assert_eq!(report.trace.events["mm_page_free_batched"], 1);
    assert_eq!(p.events.mm_page_free, 6 + 1 + 1);
    assert_eq!(report.start.busy_pages, 1 + 4, "two frees of pages allocated before the trace");
    assert_eq!(report.start.geometry, "the trace's pfns");
}

/// Closed loop: kswapd's and kcompactd's frees are the kernel's decisions, left to the
/// simulation; the workload's later free of a migration target (a pfn the trace never
/// allocated) takes the simulation's copy of the migrated page instead.
#[test]
fn closed_loop_leaves_the_daemons_frees_to_the_simulation() {
    let (a, b, target) = (0x100000, 0x100001, 0x180000);
    // The target's free comes first in the file only as a pfn no allocation names: the
    // starting state places a page there (it cannot tell a target from a page allocated
    // before the trace), so closed loop frees that page and keeps the migrated copy.
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    t.alloc(0, Some(a), 0, anon).alloc(0, Some(b), 0, anon);
    t.by("kswapd0").free(1, a, 0); // reclaimed by the real kernel
    t.by("kcompactd0").free(1, b, 0); // migrated to `target` by the real kernel
    t.by("cc1").free(0, target, 0); // the workload frees it where it now is
    let path = t.write("closed");
    let report = run(&path, &["vanilla"]);
    assert_eq!(report.mode, replay::engine::Loop::Closed, "daemons freed pages: closed by default");
    let p = &report.policies[0];
    let c = p.closed_loop.expect("closed-loop counts");
    assert_eq!((c.reclaim_frees_skipped, c.migration_frees_skipped, c.migrated_pages_freed), (1, 1, 0));
    assert_eq!(p.divergence.unmatched_frees, 0);
    assert_eq!(p.events.mm_page_free, 1, "only the workload's free is replayed");
    assert_eq!(report.start.busy_pages, 1, "the target, placed at the start");
    let policies = [policy_named("vanilla").unwrap()];
    let open = replay::run(&path, &policies, open_loop(), &mut |_| {}).unwrap();
    let o = &open.policies[0];
    assert!(o.closed_loop.is_none());
    assert_eq!(o.divergence.unmatched_frees, 0);
    assert_eq!(o.events.mm_page_free, 3, "every free replayed, the daemons' too");
    assert!(report.render().contains("loop: closed"));
}

/// Closed loop: what a task frees between its `mm_vmscan_direct_reclaim_begin` and `_end`
/// (on its CPU) is direct reclaim's, left to the simulation; after `_end` it is the
/// workload's again.
#[test]
fn closed_loop_leaves_direct_reclaim_frees_to_the_simulation() {
    let (a, b) = (0x100000, 0x100001);
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    t.alloc(0, Some(a), 0, anon).alloc(0, Some(b), 0, anon);
    let at = |t: &Trace| 1_000_000 + t.lines.len() as u64;
    let line = |us: u64, event: &str| {
        format!("            test-7       [000] ..... {:>5}.{:06}: {event}", us / 1_000_000, us % 1_000_000)
    };
    let l = line(at(&t), "mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t.lines.push(l);
    t.free(0, a, 0); // reclaim's
    let l = line(at(&t), "mm_vmscan_direct_reclaim_end: nr_reclaimed=1");
    t.lines.push(l);
    t.free(0, b, 0); // the workload's
    let path = t.write("direct-reclaim");
    let closed = closed_loop(&path);
    let p = &closed.policies[0];
    assert_eq!(p.closed_loop.unwrap().reclaim_frees_skipped, 1);
    assert_eq!(p.events.mm_page_free, 1, "only the free after the window is replayed");
    assert_eq!(closed.trace.events["mm_vmscan_direct_reclaim_begin"], 1);
    assert_eq!(
        run(&path, &["vanilla"]).mode,
        replay::engine::Loop::Open,
        "no daemon frees, no compaction: open"
    );
}

/// Closed loop: the direct-reclaim window is the task's, not its CPU's. Another task
/// preempting the reclaimer on its CPU frees its own memory (replayed); the reclaimer, moved
/// to CPU 1, frees reclaim's pages there and ends its window there, which closes it on
/// CPU 0 too. Counted per CPU (before the fix), the other task's frees on CPU 0 were
/// reclaim's and the reclaimer's on CPU 1 the workload's.
#[test]
fn a_direct_reclaim_window_follows_its_task_across_cpus() {
    let (a, b, c) = (0x100000, 0x100001, 0x100002);
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    t.alloc(0, Some(a), 0, anon).alloc(0, Some(b), 0, anon).alloc(0, Some(c), 0, anon);
    // Lines by the reclaiming task, pid 11 (the builder's own lines are pid 7's).
    let reclaimer = |t: &Trace, cpu: u32, event: &str| {
        let us = 1_000_000 + t.lines.len() as u64;
        format!(
            "       reclaimer-11      [{cpu:03}] ..... {:>5}.{:06}: {event}",
            us / 1_000_000,
            us % 1_000_000
        )
    };
    let l = reclaimer(&t, 0, "mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t.lines.push(l);
    t.by("other").free(0, b, 0); // another task on the reclaimer's CPU: its own free
    let l = reclaimer(&t, 1, &format!("mm_page_free: page=0x1 pfn={a:#x} order=0"));
    t.lines.push(l);
    let l = reclaimer(&t, 1, "mm_vmscan_direct_reclaim_end: nr_reclaimed=1");
    t.lines.push(l);
    t.by("other").free(0, c, 0); // after the end, on CPU 0: the workload's
    let path = t.write("direct-reclaim-moves");
    let closed = closed_loop(&path);
    let p = &closed.policies[0];
    assert_eq!(p.closed_loop.unwrap().reclaim_frees_skipped, 1, "the reclaimer's free on CPU 1");
    assert_eq!(p.events.mm_page_free, 2, "the other task's two frees are replayed");
    assert_eq!(p.divergence.unmatched_frees, 0);
}

#[test]
fn a_free_the_start_cannot_explain_is_counted_not_forced() {
    let base = 0x200000;
    let mut t = Trace::default();
    t.alloc(0, Some(base), 3, Gfp::KERNEL).free(0, base, 3).free(0, base, 3); // freed twice
    let p = &run(&t.write("twice"), &["vanilla"]).policies[0];
    assert_eq!(p.divergence.unmatched_frees, 1);
}

#[test]
fn policies_run_side_by_side_and_the_same_trace_gives_the_same_result() {
    let mut t = Trace::default();
    for i in 0..2000u64 {
        let gfp = if i % 3 == 0 { Gfp::KERNEL } else { Gfp::HIGHUSER_MOVABLE };
        t.alloc((i % 2) as u32, Some(0x300000 + i * 8), 2, gfp);
        if i % 4 == 3 {
            t.free(0, 0x300000 + (i - 2) * 8, 2);
        }
    }
    let path = t.write("side");
    let a = run(&path, &["vanilla", "defrag_mode", "no_rmqueue_mode_memory"]);
    let b = run(&path, &["vanilla", "defrag_mode", "no_rmqueue_mode_memory"]);
    let names: Vec<&str> = a.policies.iter().map(|p| p.name).collect();
    assert_eq!(names, ["vanilla", "defrag_mode", "no_rmqueue_mode_memory"]);
    for (x, y) in a.policies.iter().zip(&b.policies) {
        assert_eq!(x.events, y.events, "{}: deterministic", x.name);
        assert_eq!(x.free_pageblocks.end, y.free_pageblocks.end);
    }
    assert!(a.fidelity.is_none(), "no snapshots, no fidelity table");
    let text = a.render();
    assert!(text.contains("vanilla") && text.contains("defrag_mode"), "{text}");
}

#[test]
fn bad_lines_name_the_file_and_line() {
    let mut t = Trace::default();
    t.alloc(0, Some(0x100000), 0, Gfp::KERNEL);
    t.lines.push("this is not a trace line".into());
    let path = t.write("bad");
    let err =
        replay::run(&path, &[policy_named("vanilla").unwrap()], replay::Options::default(), &mut |_| {})
            .err()
            .unwrap();
    assert!(err.contains("trace.txt:2:"), "{err}");
    let ok = replay::run(
        &path,
        &[policy_named("vanilla").unwrap()],
        replay::Options { skip_bad: true, ..Default::default() },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(ok.trace.bad_lines, 1);
    assert!(policy_named("nope").unwrap_err().contains("known: vanilla"));
}

/// The shared real trace with its snapshots: the machine starts as before.pagetypeinfo
/// says, every request is replayed, and the fidelity table compares with the real kernel.
#[test]
fn the_real_trace_replays_with_a_fidelity_table() {
    let dir = shared_trace();
    assert!(dir.is_dir(), "the shared trace is at {} (CI has ../shared)", dir.display());
    let report = run(&dir, &["vanilla"]);
    assert_eq!(report.trace.events["mm_page_alloc"], 729_121);
    assert_eq!(report.start.geometry, "before.zoneinfo");
    assert_eq!(report.start.free_state, "before.pagetypeinfo");
    assert!(report.start.unplaced_blocks.is_empty(), "{:?}", report.start.unplaced_blocks);
    assert_eq!(report.start.pcp_pages, 12973 + 11440, "the pagesets' counts");
    // The free pages a movable request could only steal, as the snapshot lists them.
    let pti = std::fs::read_to_string(dir.join("before.pagetypeinfo")).unwrap();
    let steal_only: u64 = pti
        .lines()
        .filter(|l| l.contains("type    Unmovable") || l.contains("type  Reclaimable"))
        .map(|l| {
            l.split_whitespace()
                .skip(6)
                .take(9)
                .enumerate()
                .map(|(o, n)| n.parse::<u64>().unwrap() << o)
                .sum::<u64>()
        })
        .sum();
    assert!(steal_only > 0);
    assert_eq!(report.start.steal_only_pages, steal_only);
    assert!(report
        .render()
        .contains(&format!("start: {steal_only} free pages a movable request could only steal")));
    let p = &report.policies[0];
    assert_eq!(p.divergence.requests, 729_121);
    let fidelity = report.fidelity.as_ref().expect("after snapshots: a fidelity table");
    let row = |name: &str| fidelity.rows.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(row("mm_page_alloc").simulated, 729_121, "one mm_page_alloc per replayed request");
    assert_eq!(row("mm_page_alloc_zone_locked").real, 479_002);
    assert_eq!(row("mm_page_pcpu_drain").real, 198_816);
    assert!(row("free pages at the end").simulated > 0);
    // The pressure rows: the simulation's delta per policy, the snapshots' beside it.
    let real = report.real_vmstat_delta.as_ref().expect("before and after vmstat: a real delta");
    let counter = |file: &str, name: &str| -> u64 {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).unwrap().parse().unwrap()
    };
    for name in ["thp_fault_alloc", "pgscan_kswapd", "compact_stall"] {
        assert_eq!(real[name], counter("after.vmstat", name) - counter("before.vmstat", name), "{name}");
    }
    assert_eq!(p.vmstat.len(), pageblock_formats::vmstat::PRESSURE_ROWS.len(), "{:?}", p.vmstat.keys());
    // Fallbacks by kind add up to the extfrag events on both sides, the claimed ones to
    // those that changed the pageblock's owner.
    let claimed = |by: &std::collections::BTreeMap<String, u64>| -> u64 {
        by.iter().filter(|(k, _)| k.ends_with(", claimed")).map(|(_, v)| v).sum()
    };
    let real_kinds = &report.real_fallbacks_by_kind;
    assert_eq!(real_kinds.values().sum::<u64>(), report.trace.events["mm_page_alloc_extfrag"]);
    assert_eq!(claimed(real_kinds), row("change_ownership").real);
    assert!(real_kinds.keys().all(|k| k.contains(" from ") && !k.contains("type ")), "{real_kinds:?}");
    assert_eq!(p.fallbacks_by_kind.values().sum::<u64>(), p.events.mm_page_alloc_extfrag);
    assert_eq!(claimed(&p.fallbacks_by_kind), p.extfrag_change_ownership);
    let text = report.render();
    assert!(text.contains("fallbacks (mm_page_alloc_extfrag), by kind"));
    assert!(text.contains("vmstat delta over the replay"));
    // Each kind labels its own row, the counts beside it.
    let (kind, n) = real_kinds.iter().max_by_key(|(_, n)| **n).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with(kind.as_str())).unwrap();
    assert!(line.trim_end().ends_with(&format!(" {n}")), "{line:?}");
}

/// `vmstat-delta.txt` (as `lab real` writes it) is the real side when the snapshots are not
/// there; a malformed one is refused with its file and line.
#[test]
fn a_vmstat_delta_file_is_the_real_side_and_a_bad_one_names_its_line() {
    let mut t = Trace::default();
    t.alloc(0, Some(0x100000), 0, Gfp::KERNEL).free(0, 0x100000, 0);
    let path = t.write("vmstat-delta");
    let dir = path.parent().unwrap();
    std::fs::write(dir.join("vmstat-delta.txt"), "compact_stall=7\npswpout=3\nnr_free_pages_not_here=1\n")
        .unwrap();
    let report = run(dir, &["vanilla", "defrag_mode"]);
    let real = report.real_vmstat_delta.as_ref().unwrap();
    assert_eq!((real["compact_stall"], real["pswpout"], real["pgscan_kswapd"]), (7, 3, 0));
    assert!(!real.contains_key("nr_free_pages_not_here"), "only the pressure rows");
    for p in &report.policies {
        assert_eq!(p.vmstat["compact_stall"], 0, "{}: two order-0 requests compact nothing", p.name);
    }
    assert!(report.render().lines().any(|l| l.starts_with("compact_stall") && l.trim_end().ends_with(" 7")));
    std::fs::write(dir.join("vmstat-delta.txt"), "compact_stall=7\npswpout three\n").unwrap();
    let policies = [policy_named("vanilla").unwrap()];
    let err = replay::run(dir, &policies, replay::Options::default(), &mut |_| {}).unwrap_err();
    assert!(err.contains("vmstat-delta.txt") && err.contains("line 2"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The shared real trace's directory (CI has `../shared`).
fn shared_trace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/linux-6.18-clone-tar-python-thp")
}

/// A copy of the shared real trace's directory to add files to, named by `what`.
fn shared_trace_copy(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pageblock-replay-{}-{what}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(shared_trace()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir
}

/// The fidelity table compares the traced kernel's own policy: `vanilla`, or `defrag_mode`
/// for a trace made under `vm.defrag_mode=1` (`record`'s copy `vm.defrag_mode` says so, or a
/// `lab real` run's `run.json`). A run whose own policy was not replayed gets no table rather
/// than another policy's.
#[test]
fn the_fidelity_table_is_the_traced_kernels_own_policys() {
    let dir = shared_trace_copy("own-policy");
    // 3 GiB ballooned away: the policies then fall back differently (on the quiet trace as
    // recorded they replay alike).
    let squeezed = |names: &[&str]| {
        let policies: Vec<_> = names.iter().map(|p| policy_named(p).unwrap()).collect();
        let options = replay::Options { balloon_pages: 3 << 18, ..replay::Options::default() };
        replay::run(&dir, &policies, options, &mut |_| {}).unwrap()
    };
    let both = ["vanilla", "defrag_mode"];
    let plain = squeezed(&both);
    let (vanilla, dm) = (&plain.policies[0].events, &plain.policies[1].events);
    assert_ne!(vanilla.mm_page_alloc_extfrag, dm.mm_page_alloc_extfrag, "the policies differ here");
    let extfrag = |f: &replay::fidelity::Fidelity| {
        f.rows.iter().find(|r| r.name == "mm_page_alloc_extfrag").unwrap().simulated
    };
    let f = plain.fidelity.as_ref().unwrap();
    assert_eq!(
        (f.policy, extfrag(f)),
        ("vanilla", vanilla.mm_page_alloc_extfrag),
        "no run.json: the default"
    );
    std::fs::write(dir.join("run.json"), r#"{"setting": "dm1-always-madvise", "run": 1}"#).unwrap();
    let dm1 = squeezed(&both);
    let f = dm1.fidelity.as_ref().expect("defrag_mode replayed: its table");
    assert_eq!((f.policy, extfrag(f)), ("defrag_mode", dm.mm_page_alloc_extfrag));
    assert!(dm1.render().contains("fidelity (defrag_mode against the traced kernel"));
    assert!(squeezed(&["vanilla"]).fidelity.is_none(), "vanilla is not that kernel's policy");
    std::fs::write(dir.join("run.json"), r#"{"setting": "dm0-always-madvise", "run": 1}"#).unwrap();
    assert_eq!(squeezed(&both).fidelity.unwrap().policy, "vanilla");
    // `record`'s copy of the sysctl says it for any recording, and is read first.
    std::fs::write(dir.join("vm.defrag_mode"), "1\n").unwrap();
    assert_eq!(squeezed(&both).fidelity.unwrap().policy, "defrag_mode");
    std::fs::remove_file(dir.join("run.json")).unwrap();
    assert_eq!(squeezed(&both).fidelity.unwrap().policy, "defrag_mode");
    std::fs::write(dir.join("vm.defrag_mode"), "2\n").unwrap();
    let policies = [policy_named("vanilla").unwrap()];
    let err = replay::run(&dir, &policies, replay::Options::default(), &mut |_| {}).unwrap_err();
    assert!(err.contains("vm.defrag_mode") && err.contains("\"2\""), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `buddyinfo.samples` (the zones `lab real` read every 100 ms) sets the kernel's zones
/// during the run beside the simulation's at the same moments; samples outside the trace are
/// left out, and a malformed file is refused with its line.
#[test]
fn zones_sampled_live_are_compared_at_the_traces_times() {
    let (shared, dir) = (shared_trace(), shared_trace_copy("samples"));
    // The trace runs from 495.119 s to 516.701 s: the first and last samples are outside.
    let sample = |t: &str, dma32: &str| {
        format!(
            "time {t}\nNode 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
             Node 0, zone    DMA32 {dma32}\n"
        )
    };
    let rows = [
        ("495.000", "9 9 9 9 9 9 9 9 9 9 9 "),
        ("500.000", "4 0 0 0 0 0 0 0 0 0 0 "),
        ("505.000", "0 0 0 0 0 0 0 0 0 1 0 "),
        ("510.000", "0 0 0 0 0 0 0 0 0 0 2 "),
        ("520.000", "9 9 9 9 9 9 9 9 9 9 9 "),
    ];
    let text: String = rows.iter().map(|(t, r)| sample(t, r)).collect();
    std::fs::write(dir.join("buddyinfo.samples"), text).unwrap();
    let report = run(&dir, &["vanilla"]);
    let zones = report.fidelity.as_ref().and_then(|f| f.zones.as_ref()).expect("samples: a zones table");
    assert_eq!(zones.samples, 3, "the three inside the trace");
    let names: Vec<_> = zones.zones.iter().map(|z| z.zone.as_str()).collect();
    assert_eq!(names, ["DMA", "DMA32"], "the zones both sides have (Normal was not sampled)");
    let dma32 = &zones.zones[1];
    assert_eq!(
        (dma32.real.free_pages.p10, dma32.real.free_pages.p50, dma32.real.free_pages.p90),
        (4.0, 512.0, 2048.0)
    );
    assert!((dma32.real.no_free_pageblock - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(dma32.real.free_pageblocks.p90, 4.0, "two order-10 blocks are four pageblocks");
    assert!(dma32.simulated.free_pages.p50 > 0.0, "the simulation's own zone");
    let text = report.render();
    assert!(text.contains("zones during the run (3 buddyinfo samples in the trace)"), "{text}");
    assert!(report.fidelity.as_ref().unwrap().zone_types.is_none(), "no pagetypeinfo.samples, no table");
    // pagetypeinfo.samples: each zone's steal-only memory at the same moments.
    let pti = std::fs::read_to_string(shared.join("before.pagetypeinfo")).unwrap();
    let copies: String =
        ["495.000", "500.000", "510.000"].iter().map(|t| format!("time {t}\n{pti}")).collect();
    std::fs::write(dir.join("pagetypeinfo.samples"), copies).unwrap();
    let report = run(&dir, &["vanilla"]);
    let types = report.fidelity.as_ref().and_then(|f| f.zone_types.as_ref()).expect("a migratetype table");
    assert_eq!((types.samples, types.times_s.clone()), (2, vec![0.0, 10.0]), "the two inside the trace");
    let before = pageblock_formats::pagetypeinfo::PageTypeInfo::parse(&pti).unwrap();
    for z in &types.zones {
        let want = before.nodes[0].zone_steal_only_pages(0, &z.zone);
        assert_eq!(z.real.steal_only_series, vec![want, want], "{}", z.zone);
        assert_eq!(z.simulated.steal_only_series.len(), 2);
    }
    assert!(types.zones.iter().any(|z| z.real.steal_only_series[0] > 0), "the recording had some");
    let text = report.render();
    assert!(text.contains("zones by migratetype during the run (2 pagetypeinfo samples in the trace)"));
    // Each policy has its own, the vanilla one the fidelity section's.
    assert_eq!(report.policies[0].zone_types.as_ref(), Some(types));
    assert!(text.contains("steal-only pages: median (first->last)"), "{text}");
    let z = &types.zones[1];
    let series = &z.simulated.steal_only_series;
    let want = format!("{:.0} ({} -> {})", z.simulated.steal_only_pages.p50, series[0], series[1]);
    let line = text.lines().find(|l| l.starts_with(&format!("  {} ", z.zone))).unwrap();
    assert!(line.contains(&want), "{line:?} lacks {want:?}");
    std::fs::write(
        dir.join("pagetypeinfo.samples"),
        format!("time 1\n{pti}").replacen("Movable", "Movable x", 1),
    )
    .unwrap();
    let policies = [policy_named("vanilla").unwrap()];
    let err = replay::run(&dir, &policies, replay::Options::default(), &mut |_| {}).unwrap_err();
    assert!(err.contains("pagetypeinfo.samples") && err.contains("line "), "{err}");
    std::fs::remove_file(dir.join("pagetypeinfo.samples")).unwrap();
    std::fs::write(dir.join("buddyinfo.samples"), "time 1\nNode 0, zone DMA 1 \ntime 0\n").unwrap();
    let policies = [policy_named("vanilla").unwrap()];
    let err = replay::run(&dir, &policies, replay::Options::default(), &mut |_| {}).unwrap_err();
    assert!(err.contains("buddyinfo.samples") && err.contains("line 3"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression: a recording with `before.zoneinfo` but no `before.pagetypeinfo` failed with
/// an internal invariant ("reserved pages must be the zone's count"). The machine starts
/// from zoneinfo alone (all free but the reserved pages), or with `before.buddyinfo`'s free
/// blocks.
#[test]
fn zoneinfo_without_pagetypeinfo_starts_all_free_or_from_buddyinfo() {
    let shared = shared_trace();
    let dir = std::env::temp_dir().join(format!("pageblock-replay-{}-zoneinfo-only", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["before.zoneinfo", "trace.txt.zst"] {
        std::fs::copy(shared.join(name), dir.join(name)).unwrap();
    }
    let all_free = run(&dir, &["vanilla"]);
    assert_eq!((all_free.start.geometry, all_free.start.free_state), ("before.zoneinfo", "all free"));
    assert_eq!(all_free.policies[0].divergence.requests, 729_121);
    std::fs::copy(shared.join("before.buddyinfo"), dir.join("before.buddyinfo")).unwrap();
    let buddy = run(&dir, &["vanilla"]);
    assert!(buddy.start.free_state.starts_with("before.buddyinfo"), "{}", buddy.start.free_state);
    assert_eq!(buddy.policies[0].divergence.requests, 729_121);
    let free_mean = |r: &replay::ReplayReport| r.policies[0].free_pageblocks.mean;
    assert!(free_mean(&buddy) < free_mean(&all_free), "buddyinfo's machine starts with less free");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression: blocks the trace places at the very top of the pfn space (outside every
/// recorded zone) made the replay's pfn arithmetic overflow when it joined or split them.
#[test]
fn blocks_at_the_top_of_the_pfn_space_neither_wrap_nor_panic() {
    let top = u64::MAX - 511;
    let mut t = Trace::default();
    t.alloc(0, Some(0x100000), 0, Gfp::KERNEL)
        .alloc(0, Some(top), 9, Gfp::TRANSHUGE)
        .free(0, top, 10) // joins order-9 pieces past u64::MAX
        .alloc(1, Some(u64::MAX), 9, Gfp::TRANSHUGE)
        .free(1, u64::MAX, 0); // splits a block that would end past u64::MAX
    let path = t.write("top");
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pageblock-formats/tests/data/snapshots");
    std::fs::copy(snapshots.join("before.zoneinfo"), path.with_file_name("before.zoneinfo")).unwrap();
    let report = run(&path, &["vanilla"]);
    assert_eq!(report.policies[0].divergence.requests, 3);
}

/// The simulator's time per operation (`sim::OP_INTERVAL_US`) is the shared trace's mean gap
/// between page events.
#[test]
fn the_simulated_op_interval_is_the_real_traces_mean_gap() {
    let path = shared_trace().join("trace.txt.zst");
    let mut reader = pageblock_trace::TraceReader::open(&path)
        .unwrap_or_else(|e| panic!("{e} (the shared traces are beside the workspace)"));
    let s = pageblock_trace::TraceStats::collect(&mut reader, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let page_events: u64 =
        ["mm_page_alloc", "mm_page_free", "mm_page_free_batched"].iter().map(|e| s.events[e]).sum();
    let gap_us = (s.time.seconds * 1e6 / page_events as f64).round() as u64;
    assert_eq!(gap_us, pageblock_lab::sim::OP_INTERVAL_US, "{} s, {page_events} events", s.time.seconds);
}

/// A huge page fault the kernel served and the simulation cannot (its one free pageblock
/// went to a kernel page first, the others hold pages allocated before the trace, and
/// compaction can move neither): the fault retries with reclaim, then falls back to base
/// pages as `do_anonymous_page` would, and the huge page's later free frees those base
/// pages. The faults count as the kernel counts them.
#[test]
fn a_huge_page_the_simulation_refuses_falls_back_to_base_pages() {
    // The machine is the trace's pfns from 0: DMA below 16 MiB, DMA32 from here on.
    let base = 0x1000u64;
    let first = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    let mut t = Trace::default();
    t.alloc(0, Some(base + 512 + 7), 0, Gfp::KERNEL) // a free block in the simulation
        .alloc(0, Some(base), 9, first) // served by the kernel, not by the simulation
        .free_batched(0, base, 9);
    // Pages allocated before the trace, in every other pageblock of the machine.
    for block in (0..8).chain(9..12) {
        t.free(1, block * 512 + 100, 0);
    }
    let p = &run(&t.write("thp-fallback"), &["vanilla"]).policies[0];
    let f = p.divergence.fallbacks;
    assert_eq!((f.thp_retries_served, f.base_page_requests, f.base_pages), (0, 1, 512));
    assert_eq!(p.failed_requests, 0, "made up by the caller's fallback");
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (0, 1));
    assert_eq!(p.divergence.order_mismatches, 0, "the huge page's free frees its base pages");
    assert_eq!(p.divergence.unmatched_frees, 0);
    assert_eq!(p.events.mm_page_free, 512 + 11);
}

/// A request whose caller has no fallback (kernel memory) that the kernel served and the
/// simulation refuses fails, and the report says what it was: its order and mask.
#[test]
fn a_failed_request_without_a_fallback_is_named_in_the_report() {
    let base = 0x1000u64;
    let mut t = Trace::default();
    t.alloc(0, Some(base + 512 + 7), 0, Gfp::KERNEL).alloc(0, Some(base), 9, Gfp::KERNEL);
    for block in (0..8).chain(9..12) {
        t.free(1, block * 512 + 100, 0);
    }
    let report = run(&t.write("no-fallback"), &["vanilla"]);
    let p = &report.policies[0];
    assert_eq!(p.failed_requests, 1);
    assert_eq!(
        p.failed_without_fallback.get("order 9 GFP_KERNEL"),
        Some(&1),
        "{:?}",
        p.failed_without_fallback
    );
    let text = report.render();
    assert!(text.contains("none: no fallback exists") && text.contains("    order 9 GFP_KERNEL\n"), "{text}");
}

/// The kernel failed a fault's first attempt and served its retry; the simulation served
/// the first attempt: one fault, served (its page given back, the retry replayed).
#[test]
fn a_fault_and_its_retry_count_once() {
    let base = 0x100000u64;
    let first = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    let mut t = Trace::default();
    t.alloc(0, None, 9, first).alloc(0, Some(base), 9, Gfp::TRANSHUGE).free(0, base, 9);
    t.alloc(1, Some(base + 512), 9, first); // a second fault, served at once
    t.alloc(1, Some(base + 1024), 0, Gfp::KERNEL);
    let p = &run(&t.write("thp-retry"), &["vanilla"]).policies[0];
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (2, 0));
    assert_eq!(p.divergence.huge.requests, 3);
}

/// Closed loop: the kernel's reclaim of a page allocated before the trace is replayed (the
/// simulation has no owner for such a page to reclaim it itself).
#[test]
fn closed_loop_replays_the_kernels_frees_of_older_pages() {
    let (a, older) = (0x100000u64, 0x100200u64);
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    t.alloc(0, Some(a), 0, anon);
    t.by("kswapd0").free(1, a, 0).free(1, older, 0);
    let p = &run(&t.write("older"), &["vanilla"]).policies[0];
    let c = p.closed_loop.expect("closed loop");
    assert_eq!((c.reclaim_frees_skipped, c.start_frees_replayed), (1, 1));
    assert_eq!(p.events.mm_page_free, 1, "the older page's free only");
}

/// Once a request reached the OOM killer the simulation has left the kernel's path: a huge
/// page fault it refuses after that makes no fallback (it would fail after a full round of
/// reclaim), and the report says so.
#[test]
fn no_fallback_after_the_oom_killer() {
    let mut t = Trace::default();
    // Kernel memory over the whole machine (the trace's pfns), more than the simulation
    // can give once its reserves are kept.
    for pfn in (0..0x1800u64).step_by(8) {
        t.alloc(0, Some(pfn), 3, Gfp::KERNEL);
    }
    let first = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    t.alloc(0, Some(0x1000), 9, first);
    let p = &run(&t.write("oom"), &["vanilla"]).policies[0];
    assert!(p.divergence.oom_requests > 0, "kernel requests reached the OOM killer first");
    let f = p.divergence.fallbacks;
    assert_eq!((f.after_oom, f.base_page_requests, f.thp_retries_served), (1, 0, 0));
    assert!(p.failed_requests > 1, "kernel requests and the fault");
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (0, 1));
}

/// `--balloon`: memory taken before the replay squeezes the machine (closed loop by
/// default, so the simulation's reclaim has the workload's pages); a balloon larger than
/// the machine can give is refused, naming what it could give.
#[test]
fn a_balloon_squeezes_the_recorded_machine() {
    let path = common::anon_every_other_pfn().write("balloon");
    let policies = [policy_named("vanilla").unwrap()];
    let with = |balloon_pages| replay::Options { balloon_pages, ..Default::default() };
    let free = run(&path, &["vanilla"]);
    assert_eq!(free.mode, replay::engine::Loop::Open);
    assert_eq!(free.policies[0].balloon_pages, 0);
    let err = replay::run(&path, &policies, with(1 << 20), &mut |_| {}).unwrap_err();
    assert!(err.contains("--balloon") && err.contains("to give"), "{err}");
    // All it could give but 1,024 pages: the trace's 3,072 must be reclaimed to fit.
    let most = common::pages_to_give(&err);
    assert!(most > 4096, "{err}");
    let squeezed = replay::run(&path, &policies, with(most - 1024), &mut |_| {}).unwrap();
    assert_eq!(squeezed.mode, replay::engine::Loop::Closed, "a balloon makes pressure: closed");
    let p = &squeezed.policies[0];
    assert_eq!(p.balloon_pages, most - 1024);
    assert_eq!(p.events.mm_page_alloc, 3072, "the balloon's own allocations are not counted");
    assert!(p.vmstat["pgscan_kswapd"] + p.vmstat["pgscan_direct"] > 0, "the squeezed machine reclaims");
    assert!(squeezed.render().contains("pages taken by a balloon"));
}

/// `--cpus`: the simulated machine's CPUs instead of the recorded machine's; the trace's
/// CPUs fold onto them, so one CPU's lists serve what two CPUs' did (fewer refills), and a
/// CPU count the kernel cannot have is refused.
#[test]
fn cpus_fold_the_traced_cpus_onto_the_simulated_machine() {
    let mut t = Trace::default();
    for k in 0..64u64 {
        t.alloc((k % 2) as u32, Some(0x100000 + k), 0, Gfp::KERNEL);
    }
    for k in 0..64u64 {
        t.free(((k + 1) % 2) as u32, 0x100000 + k, 0);
    }
    let path = t.write("cpus");
    let policies = [policy_named("vanilla").unwrap()];
    let on =
        |cpus| replay::run(&path, &policies, replay::Options { cpus, ..Default::default() }, &mut |_| {});
    let two = on(None).unwrap();
    let one = on(Some(1)).unwrap();
    let (r2, r1) =
        (two.policies[0].events.mm_page_alloc_zone_locked, one.policies[0].events.mm_page_alloc_zone_locked);
    assert!(r1 < r2, "one CPU's lists refill less often than two: {r1} against {r2}");
    assert_eq!(one.policies[0].divergence.requests, 64);
    assert!(on(Some(0)).unwrap_err().contains("0 CPUs"));
}

/// Closed loop: the simulation's compaction may move pages allocated before the trace (in
/// Movable pageblocks: the kernel moves page cache, anonymous and mlocked memory alike) to
/// make the huge page the fault wants, and the trace's later free of such a page frees it
/// where it went. (Open loop, without a mover, falls back to base pages: the test above.)
#[test]
fn compaction_moves_pages_from_before_the_trace_and_their_frees_follow_them() {
    let base = 0x1000u64;
    let first = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    let mut t = Trace::default();
    t.alloc(0, Some(base + 512 + 7), 0, Gfp::KERNEL).alloc(0, Some(base), 9, first).free_batched(0, base, 9);
    for block in (0..8).chain(9..12) {
        t.free(1, block * 512 + 100, 0);
    }
    let path = t.write("start-moved");
    let policies = [policy_named("vanilla").unwrap()];
    let closed = replay::Options { mode: Some(replay::engine::Loop::Closed), ..Default::default() };
    let p = &replay::run(&path, &policies, closed, &mut |_| {}).unwrap().policies[0];
    let c = p.closed_loop.expect("closed loop");
    assert!(c.start_pages_moved > 0, "{c:?}");
    assert_eq!(p.divergence.fallbacks.base_page_requests, 0, "compaction made the huge page");
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (1, 0));
    assert_eq!(p.divergence.unmatched_frees, 0, "each free found its page where it went");
    // Every direct compaction asked for is counted, those that ran among them, and each
    // against the request that asked.
    assert!(p.compact_attempts >= p.vmstat["compact_stall"] && p.vmstat["compact_stall"] > 0);
    assert_eq!(p.direct_compactions.values().sum::<u64>(), p.compact_attempts, "{:?}", p.direct_compactions);
    assert!(
        p.direct_compactions.keys().all(|k| k.starts_with("order 9 GFP_TRANSHUGE")),
        "{:?}",
        p.direct_compactions
    );
    // The zone compaction that made it ran for the same request.
    let runs = p.direct_compaction_runs.values().sum::<u64>();
    assert!(runs >= 1 && runs <= p.vmstat["compact_stall"], "{:?}", p.direct_compaction_runs);
    assert!(p.direct_compaction_runs.keys().all(|k| p.direct_compactions.contains_key(k)));
}

/// Direct compaction attempts asked for (`try_to_compact_pages` entered) beside those that
/// ran (`compact_stall`): the traced kernel's from its `mm_compaction_try_to_compact_pages`
/// lines when the trace recorded the compaction events, else no real column.
#[test]
fn direct_compaction_attempts_are_counted_on_both_sides() {
    let mut t = Trace::default();
    t.alloc(0, Some(0x1000), 0, Gfp::KERNEL);
    let without = run(&t.write("no-compaction-events"), &["vanilla"]);
    assert_eq!(without.real_compact_attempts, None);
    assert!(!without.render().contains("         real\n  asked"));
    assert_eq!(without.real_direct_compactions, None);
    for _ in 0..2 {
        t.event("test-7", "mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_TRANSHUGE priority=2");
    }
    t.event("test-7", "mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_TRANSHUGE priority=1");
    t.event(
        "test-7",
        "mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE priority=2",
    );
    let with = run(&t.write("compaction-events"), &["vanilla"]);
    assert_eq!(with.real_compact_attempts, Some(4));
    // By the request that asked, every priority of one request summed.
    let by = with.real_direct_compactions.as_ref().unwrap();
    assert_eq!(by["order 9 GFP_TRANSHUGE"], 3, "{by:?}");
    assert_eq!(by["order 9 GFP_TRANSHUGE|__GFP_NORETRY|__GFP_THISNODE"], 1, "{by:?}");
    let text = with.render();
    let asked = text.lines().find(|l| l.starts_with("  asked (try_to_compact_pages)")).unwrap();
    assert!(asked.ends_with(" 4"), "{asked}");
    // Each request's row ends in the kernel's count, its mask on the line below.
    let lines: Vec<&str> = text.lines().collect();
    let mask = lines.iter().position(|l| l.trim() == "order 9 GFP_TRANSHUGE").unwrap();
    assert!(lines[mask - 1].ends_with(" 3"), "{}", lines[mask - 1]);
}

/// The kernel's zone compactions for a request (`mm_compaction_begin` in a task) go to the
/// request that task last asked for, on whatever CPU it begins; kcompactd's, and a begin in
/// a task that never asked, go to none.
#[test]
fn real_zone_compactions_go_to_the_request_their_task_asked_for() {
    const BEGIN: &str = "mm_compaction_begin: zone_start=0x1000 migrate_pfn=0x25600 free_pfn=0xbf7ff \
                         zone_end=0x100000, mode=async";
    let thp = "mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_TRANSHUGE priority=2";
    let readahead = "mm_compaction_try_to_compact_pages: order=9 gfp_mask=GFP_NOFS|__GFP_HIGHMEM|\
                     __GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL priority=2";
    let mut t = Trace::default();
    t.alloc(0, Some(0x1000), 0, Gfp::KERNEL);
    t.event_on(0, "test-7", thp);
    t.event_on(1, "cc1-8", readahead);
    t.event_on(1, "cc1-8", BEGIN);
    t.event_on(0, "test-7", BEGIN);
    t.event_on(1, "cc1-8", BEGIN);
    t.event_on(0, "kcompactd0-35", BEGIN);
    t.event_on(2, "test-9", BEGIN);
    // The huge page fault's task, moved to CPU 1 where readahead asked last: still its own.
    t.event_on(1, "test-7", BEGIN);
    let r = run(&t.write("compaction-runs"), &["vanilla"]);
    let runs = r.real_direct_compaction_runs.as_ref().unwrap();
    assert_eq!(runs["order 9 GFP_TRANSHUGE"], 2, "{runs:?}");
    let ra =
        "order 9 GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL";
    assert_eq!(runs[ra], 2, "{runs:?}");
    assert_eq!(runs.values().sum::<u64>(), 4, "kcompactd's and the unasked begin count for none");
    let text = r.render();
    let ran = text.lines().find(|l| l.starts_with("  ran (mm_compaction_begin)")).unwrap();
    assert!(ran.ends_with(" 4"), "{ran}");
    // Without the compaction events there is no real column.
    let mut bare = Trace::default();
    bare.alloc(0, Some(0x1000), 0, Gfp::KERNEL);
    assert_eq!(run(&bare.write("no-compaction-runs"), &["vanilla"]).real_direct_compaction_runs, None);
}

/// `--seeds`: each policy is replayed once per seed, each seed drawing the daemons' timing
/// the trace does not tell; the first seed is the report's main column, the same seed gives
/// the same replay, and the report gives each row's range. A trace's own kswapd wake-ups
/// (`mm_vmscan_wakeup_kswapd` → `mm_vmscan_kswapd_wake`) are what the latency is drawn from.
#[test]
fn seeds_replay_each_policy_once_per_seed_and_report_the_range() {
    let anon = Gfp(Gfp::HIGHUSER_MOVABLE.0 | Gfp::ZERO.0);
    let mut t = Trace::default();
    for (k, pfn) in (0..0x1800u64).step_by(2).enumerate() {
        t.alloc(0, Some(pfn), 0, anon);
        if k % 64 == 0 {
            t.event("test-7", "mm_vmscan_wakeup_kswapd: nid=0 order=0 gfp_flags=GFP_KERNEL");
            t.event("kswapd0-45", "mm_vmscan_kswapd_wake: nid=0 order=0");
        }
    }
    let path = t.write("seeds");
    let policies = [policy_named("vanilla").unwrap()];
    let most = common::most_a_balloon_takes(&path);
    let options = |seeds| replay::Options { balloon_pages: most - 1024, seeds, ..Default::default() };
    let three = replay::run(&path, &policies, options(3), &mut |_| {}).unwrap();
    assert_eq!(three.trace.events["mm_vmscan_kswapd_wake"], 48);
    for p in &three.policies {
        assert_eq!(p.seeds.iter().map(|s| s.seed).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(p.seeds[0].vmstat, p.vmstat, "seed 1 is the main column");
        assert!(p.vmstat["pgscan_kswapd"] > 0, "the squeezed machine reclaims");
    }
    let text = three.render();
    assert!(text.contains("range over 3 seeds"), "{text}");
    assert!(
        text.contains("kswapd wake-up latency: drawn from the trace's 48 wake-ups (median 1 µs)"),
        "{text}"
    );
    let bare = run(&common::anon_every_other_pfn().write("no-wakeups"), &["vanilla"]).render();
    assert!(
        bare.contains("drawn from this machine's (median 87 µs; the trace has 0 wake-ups, 30 needed)"),
        "{bare}"
    );
    let one = replay::run(&path, &policies, options(1), &mut |_| {}).unwrap();
    assert_eq!(one.policies[0].seeds.len(), 1);
    assert!(!one.render().contains("range over"));
    assert_eq!(one.policies[0].vmstat, three.policies[0].vmstat, "the same seed, the same replay");
    assert!(!one.render().contains("seed: the columns"));
    // `--seed 2`: the range's second replay, whole, as the report's columns.
    let second =
        replay::run(&path, &policies, replay::Options { first_seed: 2, ..options(1) }, &mut |_| {}).unwrap();
    assert_eq!(second.policies[0].seeds.iter().map(|s| s.seed).collect::<Vec<_>>(), vec![2]);
    assert_eq!(second.policies[0].vmstat, three.policies[0].seeds[1].vmstat);
    assert!(second.render().contains("seed: the columns are seed 2's replay (--seed)"));
}

/// Direct reclaim runs by the request that stalled: the traced kernel's from its
/// `mm_vmscan_direct_reclaim_begin` lines, the simulation's counted at each request; the
/// simulation's add up to its `allocstall_*` rows, and the report lists both.
#[test]
fn direct_reclaim_runs_are_told_by_the_request_that_stalled() {
    let mut t = common::anon_every_other_pfn();
    for _ in 0..3 {
        t.event(
            "test-7",
            "mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO",
        );
        t.event("test-7", "mm_vmscan_direct_reclaim_end: nr_reclaimed=32");
    }
    t.event("test-7", "mm_vmscan_direct_reclaim_begin: order=9 gfp_flags=GFP_TRANSHUGE");
    let path = t.write("direct-reclaims");
    let policies = [policy_named("vanilla").unwrap()];
    let options =
        replay::Options { balloon_pages: common::most_a_balloon_takes(&path) - 64, ..Default::default() };
    let r = replay::run(&path, &policies, options, &mut |_| {}).unwrap();
    let real = r.real_direct_reclaims.as_ref().expect("the trace recorded them");
    assert_eq!(real.get("order 0 GFP_HIGHUSER_MOVABLE|__GFP_ZERO"), Some(&3));
    assert_eq!(real.get("order 9 GFP_TRANSHUGE"), Some(&1));
    let p = &r.policies[0];
    let stalls: u64 = p.vmstat.iter().filter(|(k, _)| k.starts_with("allocstall_")).map(|(_, v)| v).sum();
    assert!(stalls > 0, "the squeezed machine stalls");
    assert_eq!(p.direct_reclaims.values().sum::<u64>(), stalls, "every stall has its request");
    assert!(
        p.direct_reclaims.contains_key("order 0 GFP_HIGHUSER_MOVABLE|__GFP_ZERO"),
        "{:?}",
        p.direct_reclaims
    );
    let text = r.render();
    assert!(
        text.contains("direct reclaim runs, by request") && text.contains("    order 9 GFP_TRANSHUGE\n"),
        "{text}"
    );
    // Without the tracepoint the real column is absent, not zero.
    let quiet = run(&common::anon_every_other_pfn().write("no-direct-reclaims"), &["vanilla"]);
    assert_eq!(quiet.real_direct_reclaims, None);
}

/// Reclaim's looks at the inactive lists: the traced kernel's summed from its
/// `mm_vmscan_lru_shrink_inactive` records by list and reclaimer, the simulation's from its
/// own looks (what it scanned adds up to its `pgscan_*` rows), side by side in the report
/// and the JSON; without the records the real side is absent, not zero.
#[test]
fn reclaim_looks_are_set_beside_the_kernels_records() {
    let shrink = |scanned: u32, keep: u32, reclaimed: u32, priority: u32, list: &str| {
        format!(
            "mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned={scanned} nr_reclaimed={reclaimed} nr_dirty=0 \
             nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 \
             nr_ref_keep={keep} nr_unmap_fail=0 priority={priority} flags=RECLAIM_WB_{list}|RECLAIM_WB_ASYNC"
        )
    };
    let mut t = common::anon_every_other_pfn();
    t.event("kswapd0-48", &shrink(512, 512, 0, 4, "ANON"));
    t.event("kswapd0-48", &shrink(32, 0, 32, 12, "FILE"));
    t.event("test-7", &shrink(32, 0, 30, 10, "FILE"));
    let path = t.write("reclaim-looks");
    let policies = [policy_named("vanilla").unwrap()];
    let options =
        replay::Options { balloon_pages: common::most_a_balloon_takes(&path) - 64, ..Default::default() };
    let r = replay::run(&path, &policies, options, &mut |_| {}).unwrap();
    let real = r.real_reclaim_looks.expect("the trace recorded them");
    assert_eq!((real.anon.scanned, real.anon.kept_young, real.anon.reclaimed), (512, 512, 0));
    assert_eq!((real.file.scanned, real.file.reclaimed), (64, 62));
    assert_eq!(real.kswapd.mean_priority(), Some((512.0 * 4.0 + 32.0 * 12.0) / 544.0));
    assert_eq!(real.direct.mean_priority(), Some(10.0));
    let p = &r.policies[0];
    let scanned = p.vmstat["pgscan_kswapd"] + p.vmstat["pgscan_direct"];
    assert!(scanned > 0, "the squeezed machine reclaims");
    assert_eq!(p.reclaim_looks.anon.scanned + p.reclaim_looks.file.scanned, scanned);
    assert_eq!(p.reclaim_looks.kswapd.scanned, p.vmstat["pgscan_kswapd"]);
    let text = r.render();
    assert!(
        text.contains("reclaim's looks at the inactive lists") && text.contains("kept young (nr_ref_keep)"),
        "{text}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["real_reclaim_looks"]["anon"]["kept_young"], 512);
    assert!(json["policies"][0]["reclaim_looks"]["kswapd"]["priority_pages"].is_u64());
    let quiet = run(&common::anon_every_other_pfn().write("no-reclaim-looks"), &["vanilla"]);
    assert_eq!(quiet.real_reclaim_looks, None);
}

/// `--after-dir`: each policy's machine at the end in the kernel's formats, which the
/// kernel-file parsers read back; free pages agree across the three files. A directory that
/// is not there is refused before anything is replayed.
#[test]
fn the_end_of_each_policy_is_written_as_the_kernels_files() {
    use pageblock_formats::buddyinfo::BuddyInfo;
    use pageblock_formats::pagetypeinfo::PageTypeInfo;
    use pageblock_formats::zoneinfo::ZoneInfo;
    let path = common::anon_every_other_pfn().write("after-dir");
    let dir = tempfile::tempdir().unwrap();
    let policies = [policy_named("vanilla").unwrap(), policy_named("defrag_mode").unwrap()];
    let options = replay::Options { after_dir: Some(dir.path().to_owned()), ..Default::default() };
    replay::run(&path, &policies, options, &mut |_| {}).unwrap();
    for policy in ["vanilla", "defrag_mode"] {
        let read =
            |name: &str| std::fs::read_to_string(dir.path().join(format!("{policy}.after.{name}"))).unwrap();
        let buddy = BuddyInfo::parse(&read("buddyinfo")).unwrap();
        let types = PageTypeInfo::parse(&read("pagetypeinfo")).unwrap();
        let zones = ZoneInfo::parse(&read("zoneinfo")).unwrap();
        let buddy_free: u64 = buddy.zones.iter().map(|z| z.free_pages()).sum();
        let typed_free: u64 = types.nodes[0]
            .free
            .iter()
            .flat_map(|row| row.counts.iter().enumerate().map(|(o, c)| c.count << o))
            .sum();
        assert!(buddy_free > 0, "{policy}");
        assert_eq!(typed_free, buddy_free, "{policy}: pagetypeinfo's lists are buddyinfo's");
        let zone_free: u64 = zones.zones.iter().map(|z| z.pages_free).sum();
        assert_eq!(zone_free, buddy_free, "{policy}: zoneinfo's pages free are buddyinfo's");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 6, "three files a policy, no temporary left: {leftovers:?}");
    let missing = dir.path().join("missing");
    let options = replay::Options { after_dir: Some(missing.clone()), ..Default::default() };
    let mut replayed = false;
    let err = replay::run(&path, &policies, options, &mut |s| {
        replayed |= matches!(s, replay::Stage::Replaying { .. })
    })
    .unwrap_err();
    assert!(err.contains("--after-dir") && err.contains("not a directory"), "{err}");
    assert!(!replayed, "refused before replaying");
}

/// The compaction skip hints a replay starts from are the ones the trace's first runs show:
/// a run that looked into 1 of the 100 pageblocks it passed says 99% were hinted; without
/// evidence, or with `clear_skip_hints`, every hint starts clear.
#[test]
fn the_start_skip_hints_are_those_the_first_traced_runs_show() {
    let run_over = |t: &mut Trace| {
        t.event_on(0, "kcompactd0-35", "mm_compaction_begin: zone_start=0x1000 migrate_pfn=0x2000 free_pfn=0xfe00 zone_end=0x10000, mode=sync");
        t.event_on(
            0,
            "kcompactd0-35",
            "mm_compaction_isolate_migratepages: range=(0x2000 ~ 0x2200) nr_scanned=512 nr_taken=3",
        );
        t.event_on(0, "kcompactd0-35", "mm_compaction_end: zone_start=0x1000 migrate_pfn=0xa800 free_pfn=0xa800 zone_end=0x10000, mode=sync status=complete");
    };
    let mut t = Trace::default();
    t.alloc(0, Some(0x1000), 0, Gfp::KERNEL);
    t.alloc(0, Some(0xffff), 0, Gfp::KERNEL);
    run_over(&mut t);
    let path = t.write("skip-hints");
    let hints = |options: replay::Options| {
        let policies = [policy_named("vanilla").unwrap()];
        replay::run(&path, &policies, options, &mut |_| {}).unwrap().render()
    };
    let text = hints(closed_loop_options());
    assert!(text.contains("start: compaction skip hints "), "{text}");
    assert!(text.contains("% (67 of 68 blocks its first runs passed without looking)"), "{text}");
    let clear = hints(replay::Options { clear_skip_hints: true, ..closed_loop_options() });
    assert!(clear.contains("start: compaction skip hints clear (--clear-skip-hints)"), "{clear}");
    let mut bare = Trace::default();
    bare.alloc(0, Some(0x1000), 0, Gfp::KERNEL);
    bare.alloc(0, Some(0xffff), 0, Gfp::KERNEL);
    let policies = [policy_named("vanilla").unwrap()];
    let text = replay::run(&bare.write("no-skip-hints"), &policies, closed_loop_options(), &mut |_| {})
        .unwrap()
        .render();
    assert!(text.contains("start: compaction skip hints clear (no zone's first traced runs"), "{text}");
}

fn closed_loop_options() -> replay::Options {
    replay::Options { mode: Some(replay::engine::Loop::Closed), ..Default::default() }
}
