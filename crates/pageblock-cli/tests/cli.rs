//! The `pageblock` binary end to end: the issue's acceptance runs, determinism, cross-file
//! consistency, a third-party parser on our output, and clear errors on bad input.

use std::path::Path;
use std::process::Command;

use pageblock_formats::buddyinfo::BuddyInfo;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::zoneinfo::ZoneInfo;

mod common;
use common::{pageblock, stdout_of};

/// The acceptance run: 16 GiB, `fragment`, two million operations, with `seed`.
fn run_args(seed: &str) -> [&str; 8] {
    ["--mem", "16G", "--workload", "fragment", "--ops", "2000000", "--seed", seed]
}

fn show(report: &str, extra: &[&str]) -> String {
    let mut args = vec!["show", report];
    args.extend_from_slice(&run_args("1"));
    args.extend_from_slice(extra);
    stdout_of(&args)
}

#[test]
fn the_reports_of_one_run_agree_with_each_other() {
    let pti =
        PageTypeInfo::parse(&show("pagetypeinfo", &["--pagetypeinfo-mode", "counts"])).expect("pagetypeinfo");
    let buddy = BuddyInfo::parse(&show("buddyinfo", &[])).expect("kernel-format buddyinfo");
    let zoneinfo = ZoneInfo::parse(&show("zoneinfo", &[])).expect("kernel-format zoneinfo");
    let node = &pti.nodes[0];
    assert_eq!((node.pageblock_order, node.pages_per_block), (9, 512));
    assert!(node.free.iter().all(|r| r.counts.iter().all(|c| !c.overflow)), "counts are exact, never capped");
    let zones: Vec<&str> = buddy.zones.iter().map(|z| z.zone.as_str()).collect();
    assert_eq!(zones, ["DMA", "DMA32", "Normal"], "a 16 GiB PC has three zones");
    let mut total_managed = 0;
    for (i, bz) in buddy.zones.iter().enumerate() {
        let per_order = node.zone_free_by_order(0, &bz.zone);
        assert_eq!(per_order, bz.nr_free, "{}: pagetypeinfo rows sum to buddyinfo", bz.zone);
        let free: u64 = per_order.iter().enumerate().map(|(o, n)| n << o).sum();
        let zi = zoneinfo.zone(0, &bz.zone).expect("the zone in zoneinfo");
        assert_eq!(free, zi.pages_free, "{}: free pages agree with zoneinfo", bz.zone);
        assert_eq!(zi.stat("nr_free_pages"), Some(free));
        let blocks: u64 = node.blocks.rows[i].counts.iter().sum();
        assert!(
            blocks * 512 >= zi.managed && blocks * 512 < zi.managed + 512,
            "{}: pageblocks cover the zone",
            bz.zone
        );
        total_managed += zi.managed;
    }
    assert_eq!(total_managed, 3840 + (0xc0000 - 0x1000) + ((16u64 << 18) - 0xc0000));
    let normal = zoneinfo.zone(0, "Normal").unwrap();
    assert!(normal.pages_free > 0 && normal.pages_free < normal.managed, "the workload holds memory");
}

#[test]
fn walking_the_lists_prints_the_same_text_unless_a_count_reaches_the_cap() {
    // After 2M operations the order-0 Movable list holds more than 100000 blocks.
    let counts = show("pagetypeinfo", &["--pagetypeinfo-mode", "counts"]);
    let capped = show("pagetypeinfo", &["--pagetypeinfo-mode", "counts-capped"]);
    let walk = show("pagetypeinfo", &["--pagetypeinfo-mode", "walk"]);
    assert!(!counts.contains('>'));
    assert!(walk.contains(">100000 "), "{walk}");
    assert_eq!(walk, capped, "the capped counts print what the capped walk prints");
    let uncap = |t: &str| t.replace(">100000 ", "");
    let differing: Vec<(&str, &str)> = counts.lines().zip(walk.lines()).filter(|(a, b)| a != b).collect();
    for (c, w) in &differing {
        assert!(w.contains(">100000"), "only capped rows differ: {c} / {w}");
        assert_ne!(uncap(c), uncap(w));
    }
    // A shorter run stays below the cap: every mode prints the same bytes.
    let short = ["--mem", "16G", "--workload", "fragment", "--ops", "300000", "--seed", "1"];
    let texts: Vec<String> = ["counts", "counts-capped", "walk"]
        .iter()
        .map(|m| stdout_of(&[&["show", "pagetypeinfo", "--pagetypeinfo-mode", m][..], &short[..]].concat()))
        .collect();
    assert!(!texts[0].contains('>'));
    assert!(texts.iter().all(|t| *t == texts[0]));
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = show("pagetypeinfo", &[]);
    let b = show("pagetypeinfo", &[]);
    assert_eq!(a, b);
    let other = stdout_of(&[&["show", "pagetypeinfo"][..], &run_args("2")[..]].concat());
    assert_ne!(a, other);
}

#[test]
fn a_fresh_zone_is_all_free_max_order_movable_blocks() {
    let text = stdout_of(&["show", "buddyinfo", "--mem", "1G", "--zones", "normal"]);
    assert_eq!(text, format!("Node 0, zone   Normal {}   256 \n", "     0 ".repeat(10)));
    let vmstat = stdout_of(&["show", "vmstat", "--mem", "1G", "--zones", "normal"]);
    assert!(vmstat.starts_with("nr_free_pages 262144\nnr_free_pages_blocks 262144\n"), "{vmstat}");
    for line in ["nr_free_cma 0", "pgalloc_normal 0", "pgfree 262144", "allocstall_movable 0"] {
        assert!(vmstat.lines().any(|l| l == line), "{line} in {vmstat}");
    }
    // Every line a 6.18 kernel prints, in its order.
    let real = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../pageblock-formats/tests/data/vmstat.txt"),
    )
    .unwrap();
    let names = |t: &str| t.lines().map(|l| l.split(' ').next().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&vmstat), names(&real));
}

#[test]
fn page_owner_adds_the_mixed_blocks_table() {
    let text = show("pagetypeinfo", &["--page-owner"]);
    let pti = PageTypeInfo::parse(&text).expect("parses with the mixed table");
    let mixed = pti.nodes[0].mixed.as_ref().expect("mixed table");
    assert_eq!(mixed.rows.len(), 3, "a row per zone");
    for (mrow, brow) in mixed.rows.iter().zip(&pti.nodes[0].blocks.rows) {
        for (m, b) in mrow.counts.iter().zip(&brow.counts) {
            assert!(m <= b, "{}: mixed {m} <= blocks {b}", mrow.zone);
        }
    }
    assert!(mixed.rows[2].counts.iter().sum::<u64>() > 0, "the fragmented Normal zone has mixed blocks");
}

#[test]
fn bad_arguments_get_clear_errors() {
    let out = pageblock(&["show", "buddyinfo", "--mem", "16X"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown unit"));
    let out = pageblock(&["show", "buddyinfo", "--workload", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload `nope`; known: fragment"));
    let out = pageblock(&["show", "buddyinfo", "--mem", "1K"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mem is 1024 bytes"));
    let out = pageblock(&["show", "buddyinfo", "--mem", "1K", "--zones", "normal"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a machine needs at least one 4 KiB page"));
    let out = pageblock(&["show", "buddyinfo", "--watermark-scale-factor", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vm.watermark_scale_factor 0 is outside 1..=3000"));
}

/// Prometheus' procfs (node_exporter's parser) reads the simulator's files as we do.
#[test]
fn prometheus_procfs_reads_the_simulated_machine() {
    let go = Command::new("go").arg("version").output().map(|o| o.status.success()).unwrap_or(false);
    if !go {
        assert!(std::env::var_os("PAGEBLOCK_REQUIRE_GO").is_none(), "PAGEBLOCK_REQUIRE_GO set but no go");
        eprintln!("SKIPPED: go is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("pageblock-cli-procfs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let buddy_text = show("buddyinfo", &[]);
    let zone_text = show("zoneinfo", &[]);
    std::fs::write(dir.join("buddyinfo"), &buddy_text).unwrap();
    std::fs::write(dir.join("zoneinfo"), &zone_text).unwrap();
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/procfs-check");
    let out = Command::new("go").arg("run").arg(".").arg(&dir).current_dir(tool).output().expect("go run");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = String::from_utf8(out.stdout).unwrap();
    let buddy = BuddyInfo::parse(&buddy_text).unwrap();
    let sizes: Vec<String> = buddy.zones[0].nr_free.iter().map(|n| n.to_string()).collect();
    assert!(
        json.replace(char::is_whitespace, "").contains(&format!("\"sizes\":[{}]", sizes.join(","))),
        "{json}"
    );
    let zi = ZoneInfo::parse(&zone_text).unwrap();
    let normal = zi.zone(0, "Normal").unwrap();
    for (key, v) in [("nr_free_pages", normal.pages_free), ("min", normal.min), ("managed", normal.managed)] {
        assert!(
            json.replace(char::is_whitespace, "").contains(&format!("\"{key}\":{v}")),
            "{key} {v} in {json}"
        );
    }
}

/// The issue's memory budget: a 64 GiB zone after a million operations stays under 1.5 GiB
/// of resident memory (the memmap alone is 192 MiB).
#[test]
fn a_64_gib_zone_fits_in_a_small_resident_set() {
    let out = pageblock(&["show", "zoneinfo", "--mem", "64G", "--workload", "fragment", "--ops", "1000000"]);
    assert!(out.status.success());
    // SAFETY: getrusage only writes the struct we hand it.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u
    };
    // ru_maxrss of children is the largest peak of any child waited for, in KiB: an upper
    // bound on the 64 GiB run's peak.
    let peak_kib = usage.ru_maxrss as u64;
    assert!(peak_kib < 1536 * 1024, "peak resident set {peak_kib} KiB >= 1.5 GiB");
}

#[test]
fn trace_writes_kernel_format_events_that_replay_the_counters() {
    let path = std::env::temp_dir().join(format!("pageblock-trace-{}.txt", std::process::id()));
    let p = path.to_str().unwrap();
    let counters = stdout_of(&[
        "show",
        "counters",
        "--mem",
        "256M",
        "--workload",
        "fragment",
        "--ops",
        "20000",
        "--trace",
        p,
    ]);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let reader = pageblock_formats::ftrace::FtraceReader::new(text.as_bytes());
    let (mut allocs, mut frees, mut extfrag) = (0u64, 0u64, 0u64);
    for item in reader {
        let (_, line) = item.expect("every line parses");
        let pageblock_formats::ftrace::Line::Event(l) = line else { panic!("no comments expected") };
        match l.kmem().expect("a kmem event") {
            pageblock_formats::kmem::KmemEvent::PageAlloc(a) if !a.failed() => allocs += 1 << a.order,
            pageblock_formats::kmem::KmemEvent::PageFree(f) => frees += 1 << f.order,
            pageblock_formats::kmem::KmemEvent::PageAllocExtfrag(_) => extfrag += 1,
            _ => {}
        }
    }
    let counter = |text: &str, name: &str| -> u64 {
        text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).unwrap().parse().unwrap()
    };
    let boot_frees = counter(&stdout_of(&["show", "counters", "--mem", "256M"]), "pgfree");
    let counter = |name: &str| counter(&counters, name);
    assert_eq!(allocs, counter("pgalloc"), "mm_page_alloc pages = pgalloc");
    assert_eq!(frees + boot_frees, counter("pgfree"), "mm_page_free pages + boot = pgfree");
    assert_eq!(extfrag, counter("pgalloc_extfrag"));
    let bad = pageblock(&["show", "counters", "--mem", "64M", "--trace", "/nonexistent/dir/t.txt"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/nonexistent/dir/t.txt"));
}

/// Run `args --json FILE` and return stdout and the parsed file.
fn stdout_and_json(args: &[&str]) -> (String, serde_json::Value) {
    // Tests run in parallel in one process: each call needs its own file.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("pageblock-{}-{}-{n}.json", args[0], std::process::id()));
    let text = stdout_of(&[args, &["--json", path.to_str().unwrap()][..]].concat());
    let json = std::fs::read_to_string(&path).expect("the JSON file was written");
    let _ = std::fs::remove_file(&path);
    let mut value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    // Every JSON says what made it; the rest is the result, compared across runs by callers.
    let meta = value.as_object_mut().and_then(|o| o.remove("meta")).expect("a meta object");
    assert_eq!(meta["pageblock_version"], env!("CARGO_PKG_VERSION"));
    assert!(meta["git_revision"].as_str().is_some_and(|r| !r.is_empty()), "{meta}");
    assert!(meta["command"].as_str().is_some_and(|c| c.contains(args[0])), "{meta}");
    if args[0] == "lab" {
        assert!(
            meta["seed"].is_u64() && meta["quick"].is_boolean(),
            "the lab records its seed and --quick: {meta}"
        );
    }
    (text, value)
}

#[test]
fn bench_fastpath_writes_the_promised_json() {
    let (text, v) = stdout_and_json(&["bench", "fastpath", "--smoke"]);
    assert!(text.contains("goals, this run:"), "{text}");
    assert!(!text.contains("issue"), "no tracker words for users: {text}");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3 * pageblock_bench::fastpath::CASES.len(), "3 allocators x every case");
    for r in results {
        let allocator = r["allocator"].as_str().unwrap();
        assert!(["pageblock", "buddy_system_allocator", "buddy-alloc"].contains(&allocator));
        let case = r["case"].as_str().unwrap();
        assert!(pageblock_bench::fastpath::CASES.contains(&case));
        let key = if case.starts_with("e_") { "mops_per_s" } else { "ns_per_op" };
        let x = r[key].as_f64().unwrap_or_else(|| panic!("{allocator} {case}: {key} in {r}"));
        assert!(x.is_finite() && x > 0.0, "{allocator} {case}: {x}");
    }
    assert_eq!(v["bulk_free"].as_array().unwrap().len(), 3);
}

/// Regression: `bench --help` listed cases a, b, c and e; the bench runs f too.
#[test]
fn bench_help_names_every_case_the_bench_runs() {
    let help = stdout_of(&["bench", "--help"]);
    for case in pageblock_bench::fastpath::CASES {
        let letter = &case[..1];
        assert!(help.contains(&format!("({letter})")), "case {case} is not in the help:\n{help}");
    }
}

/// Regression: "seed" named both a seed patch (the documents) and the random seed; what users
/// read calls the random one so.
#[test]
fn the_random_seed_is_not_called_a_seed_patch() {
    for cmd in
        [&["demo", "--help"][..], &["show", "--help"], &["lab", "thp", "--help"], &["lab", "seeds", "--help"]]
    {
        let help = stdout_of(cmd);
        assert!(help.contains("Random seed of the workload"), "{cmd:?}:\n{help}");
    }
    let demo = stdout_of(&["demo", "--ops", "1000", "--seed", "7"]);
    assert!(demo.lines().next().is_some_and(|l| l.ends_with("1000 operations, RNG seed 7")), "{demo}");
}

/// `lab seeds --quick` in CI: only deterministic figures are judged.
#[test]
fn lab_seeds_quick_reproduces_the_deterministic_effects() {
    let (text, v) = stdout_and_json(&["lab", "seeds", "--quick"]);
    assert!(text.contains("seed 003: rmqueue fallback"), "{text}");
    let entries = v["experiments"].as_array().expect("experiments");
    let get =
        |name: &str| entries.iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name} missing"));
    for name in [
        "pagetypeinfo_fresh",
        "pagetypeinfo_after_fragment",
        "monitor_alloc_stddev_walk_increase",
        "monitor_alloc_stddev_counts_increase",
        "fallback_worst_lock_hold_work",
        "fallback_throughput",
        "prefetch_bulk_free_12_2018",
        "prefetch_bulk_free_12_2022",
        "prefetch_bulk_free_64_2018",
        "prefetch_bulk_free_64_2022",
        "prefetch_bulk_free_128_2018",
        "prefetch_bulk_free_128_2022",
    ] {
        let e = get(name);
        for key in ["metric", "unit", "baseline", "patched"] {
            assert!(e[key].is_string(), "{name}.{key}");
        }
        for key in ["baseline_value", "patched_value", "improvement_ratio"] {
            assert!(e[key].as_f64().is_some_and(f64::is_finite), "{name}.{key} in {e}");
        }
    }
    let ratio = |name: &str| {
        let e = get(name);
        assert_eq!(e["deterministic"], true, "{name} is a deterministic figure");
        e["improvement_ratio"].as_f64().unwrap()
    };
    // Seed 000: after fragmentation a read from counts does a small fraction of the walk's work.
    assert!(ratio("pagetypeinfo_after_fragment_work") >= 30.0);
    // Seed 000: a walking monitor takes the zone lock once per order; counting never.
    let holds = get("monitor_zone_lock_holds");
    assert_eq!((holds["baseline_value"].as_f64(), holds["patched_value"].as_f64()), (Some(11.0), Some(0.0)));
    // Seed 003: the rmqueue mode memory cuts the worst refill's work at least five-fold.
    assert!(ratio("fallback_worst_lock_hold_work") >= 5.0);
    // Wall-clock verdicts from one run or a handful of monitor reads are noise: --quick says
    // there is not enough data instead, in the JSON and in the text.
    let verdicts: Vec<&str> = entries.iter().filter_map(|e| e["verdict"].as_str()).collect();
    assert_eq!(verdicts.len(), 7, "six prefetch settings and the monitor goal have verdicts: {verdicts:?}");
    for v in &verdicts {
        assert!(v.starts_with("not enough data (") && v.contains("a verdict needs ≥"), "{v}");
    }
    assert!(get("prefetch_bulk_free_64_2018")["verdict"].as_str().unwrap().contains("(1 run;"));
    for word in ["reproduced", ": met", "NOT met"] {
        assert!(!text.contains(word), "no verdict `{word}` from --quick:\n{text}");
    }
    assert!(text.matches("not enough data (").count() >= 7, "{text}");
}

#[test]
fn geometry_and_layout_flags_reach_the_zone() {
    let text = stdout_of(&["show", "pagetypeinfo", "--mem", "1G", "--zones", "normal", "--cma", "64M"]);
    let pti = PageTypeInfo::parse(&text).unwrap();
    let blocks = &pti.nodes[0].blocks;
    assert_eq!(blocks.migratetypes, ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "CMA", "Isolate"]);
    assert_eq!(blocks.rows[0].counts, [0, 480, 0, 0, 32, 0], "64 MiB of CMA = 32 pageblocks");
    let text = stdout_of(&[
        "show",
        "buddyinfo",
        "--mem",
        "64M",
        "--zones",
        "normal",
        "--max-order",
        "8",
        "--pageblock-order",
        "6",
    ]);
    assert_eq!(BuddyInfo::parse(&text).unwrap().zones[0].nr_free, [0, 0, 0, 0, 0, 0, 0, 0, 64]);
    let walk = stdout_of(&[
        "show",
        "pagetypeinfo",
        "--mem",
        "1G",
        "--free-area-layout",
        "plain",
        "--pagetypeinfo-mode",
        "walk",
    ]);
    assert_eq!(walk, stdout_of(&["show", "pagetypeinfo", "--mem", "1G"]), "the layout changes no result");
    let out = pageblock(&["show", "pagetypeinfo", "--mem", "1G", "--free-area-layout", "plain"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use --pagetypeinfo-mode walk"));
    let out = pageblock(&["show", "buddyinfo", "--pageblock-order", "11"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pageblock order 11 exceeds max order 10"));
}

/// The memmap shape and the bulk-free setting change speed only: a workload run under the
/// kernel's 64-byte records and the 2018 two-pass free prints the same bytes as the default.
#[test]
fn memmap_and_bulk_free_flags_change_no_result() {
    let base = ["show", "pagetypeinfo", "--mem", "2G", "--workload", "fragment", "--ops", "300000"];
    let default = stdout_of(&base);
    for extra in [
        &["--struct-page-bytes", "64", "--bulk-free", "two-pass", "--buddy-prefetch"][..],
        &["--struct-page-bytes", "12", "--bulk-free", "single-pass"][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        assert_eq!(stdout_of(&args), default, "{extra:?}");
    }
    let out = pageblock(&["show", "buddyinfo", "--struct-page-bytes", "30"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("struct_page_bytes 30 must be a multiple of 4"));
    let out = pageblock(&["bench", "fastpath", "--smoke", "--struct-page-bytes", "8"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("struct_page_bytes 8"));
}

/// `--cpus` is the number of per-CPU page lists the workload spreads over: it shows in the
/// pagesets and changes where the blocks end up.
#[test]
fn the_cpu_count_reaches_the_pagesets_and_the_result() {
    let run = |cpus: &str, report: &str| {
        stdout_of(&[
            "show",
            report,
            "--mem",
            "1G",
            "--workload",
            "fragment",
            "--ops",
            "300000",
            "--cpus",
            cpus,
        ])
    };
    let pagesets = |cpus| {
        let zi = ZoneInfo::parse(&run(cpus, "zoneinfo")).unwrap();
        zi.zones.iter().filter_map(|z| z.populated.as_ref()).map(|p| p.pagesets.len()).collect::<Vec<_>>()
    };
    assert_eq!(pagesets("1"), [1, 1], "DMA and DMA32");
    assert_eq!(pagesets("8"), [8, 8]);
    assert_ne!(run("1", "buddyinfo"), run("8", "buddyinfo"));
}

/// `lab thp --quick` in CI (seed 004, on the kernel the seed measured): the same seed gives
/// the same figures, and the deterministic effects of defrag_mode hold — fewer THP fallbacks
/// (at least halved), more swap-out, a success rate that holds, and a worst run better than
/// vanilla's.
/// (6.18's kswapd exit fix takes the fallback gain away in this model: see `--kernel 6.18`.)
#[test]
fn lab_thp_quick_reproduces_defrag_modes_effects() {
    let args = [
        "lab",
        "thp",
        "--quick",
        "--runs",
        "4",
        "--policies",
        "vanilla,defrag_mode,defrag_mode_2026",
        "--kernel",
        "seed-004",
    ];
    let (text, v) = stdout_and_json(&args);
    let (_, again) = stdout_and_json(&args);
    assert_eq!(v, again, "a run is deterministic");
    assert!(text.contains("Hugealloc Time mean"), "{text}");
    assert!(
        text.contains("    Swap out                          47959.53 (    +0.00%)  110084.33 (  +129.53%)")
    );
    let policies = v["policies"].as_array().expect("policies");
    let names: Vec<&str> = policies.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["vanilla", "defrag_mode", "defrag_mode_2026"]);
    let runs = |i: usize| policies[i]["runs"].as_array().expect("runs").clone();
    let total = |i: usize, key: &str| -> u64 {
        runs(i).iter().map(|r| r[key].as_u64().unwrap_or_else(|| panic!("{key} in {r}"))).sum()
    };
    for key in
        ["thp_fault_alloc", "compact_migrate_scanned", "compact_free_scanned", "pswpout", "atomic_failures"]
    {
        assert_eq!(runs(0).len(), 4);
        let _ = total(0, key);
    }
    let (vanilla, merged) = (total(0, "thp_fault_fallback"), total(1, "thp_fault_fallback"));
    assert!(merged * 2 <= vanilla, "defrag_mode halves THP fallbacks: {vanilla} -> {merged}");
    assert!(total(1, "pswpout") > total(0, "pswpout"), "and pays in swap-out");
    let success = |i: usize, run: usize| {
        let r = &runs(i)[run];
        let (a, f) = (r["thp_fault_alloc"].as_f64().unwrap(), r["thp_fault_fallback"].as_f64().unwrap());
        a / (a + f)
    };
    // The seed's vanilla declines run after run; with 6.18's kcompactd loop over a 197 s
    // build the model's no longer does (docs/pressure-fidelity.md), so the check is on the
    // worst run: defrag_mode's beats vanilla's.
    let worst = |i: usize| (0..4).map(|run| success(i, run)).fold(f64::INFINITY, f64::min);
    assert!(worst(1) > worst(0), "defrag_mode's worst run beats vanilla's: {} vs {}", worst(1), worst(0));
    assert!(success(1, 3) > 0.8 && success(1, 3) > success(1, 0) - 0.1, "defrag_mode holds");
}

/// `lab thp --thp`: `always` (the default, seed 004's mode) or `madvise`, named in the header
/// and the JSON; anything else is refused with the choices.
#[test]
fn lab_thp_says_which_thp_mode_it_ran() {
    for (extra, mode) in [(None, "always"), (Some("madvise"), "madvise")] {
        let mut args = vec!["lab", "thp", "--quick", "--runs", "1", "--policies", "vanilla"];
        args.extend(extra.map(|m| ["--thp", m]).into_iter().flatten());
        let (text, v) = stdout_and_json(&args);
        assert_eq!(v["thp"], mode);
        assert!(text.contains(&format!("THP enabled={mode} defrag=defer+madvise")), "{text}");
    }
    let out = pageblock(&["lab", "thp", "--quick", "--thp", "never"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown THP setting `never`; known: always, madvise")
    );
}

/// pageblock's own policy (issue 11, first step) in `lab thp --quick`: defrag_mode's huge
/// page gains without its swap bill — THP fallbacks at most half of vanilla's, swap-out no
/// higher than vanilla's, compaction scanning no higher than defrag_mode's, no atomic failure.
#[test]
fn lab_thp_quick_pageblock_policy_keeps_the_gain_without_the_swap() {
    let args = ["lab", "thp", "--quick", "--runs", "4", "--policies", "vanilla,defrag_mode,pageblock"];
    let (_, v) = stdout_and_json(&args);
    let policies = v["policies"].as_array().expect("policies");
    let total = |i: usize, key: &str| -> u64 {
        policies[i]["runs"].as_array().unwrap().iter().map(|r| r[key].as_u64().unwrap()).sum()
    };
    let scanned = |i: usize| total(i, "compact_migrate_scanned") + total(i, "compact_free_scanned");
    assert!(total(2, "thp_fault_fallback") * 2 <= total(0, "thp_fault_fallback"));
    assert!(total(2, "pswpout") <= total(0, "pswpout"), "{} > {}", total(2, "pswpout"), total(0, "pswpout"));
    assert!(scanned(2) <= scanned(1), "{} > {}", scanned(2), scanned(1));
    assert_eq!(total(2, "atomic_failures"), 0);
}

/// Regression: the demo showed ten thousand "failed" order-0 requests without saying they
/// are the ones the kernel would answer with the OOM killer, which the simulation lacks.
#[test]
fn the_demo_says_which_failed_requests_reached_the_oom_killer() {
    let demo = stdout_of(&["demo"]);
    let line = demo.lines().find(|l| l.starts_with("failed requests: ")).unwrap_or_else(|| panic!("{demo}"));
    let numbers: Vec<u64> = line.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
    let (failed, oom, other) = (numbers[0], numbers[1], numbers[2]);
    assert!(line.contains("reached the OOM killer, which the simulation does not have"), "{line}");
    assert!(oom > 0 && failed == oom + other, "{line}");
    // The same run through `show`: the kernel's counters agree.
    let counters = stdout_of(&["show", "counters", "--workload", "fragment", "--ops", "4000000"]);
    let counter = |name: &str| -> u64 {
        let line = counters.lines().find(|l| l.split(' ').next() == Some(name)).expect(name);
        line.split(' ').nth(1).unwrap().parse().unwrap()
    };
    assert_eq!((failed, oom), (counter("pgalloc_fail"), counter("pgalloc_oom")), "{line}");
}

/// `lab real --compare` on a session directory (no root needed: it only replays): the
/// defrag_mode=0 trace replayed under vanilla and defrag_mode, beside the real change from
/// the vmstat deltas of both settings' runs.
#[test]
fn lab_real_compare_tables_a_finished_session() {
    use pageblock_formats::ftrace::{Timestamp, TraceLine};
    use pageblock_formats::gfp::Gfp;
    use pageblock_formats::kmem::{KmemEvent, MmPageAlloc, MmPageFree};
    let dir = std::env::temp_dir().join(format!("pageblock-compare-{}", std::process::id()));
    let (dm0, dm1) = (dir.join("dm0-always-madvise/run1"), dir.join("dm1-always-madvise/run1"));
    for d in [&dm0, &dm1] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut lines = Vec::new();
    let mut push = |ev: KmemEvent| {
        let t = Timestamp::from_micros(1_000_000 + lines.len() as u64);
        lines.push(TraceLine::from_kmem("cc1", 7, 0, Some("....."), t, &ev).render());
    };
    for i in 0..8u64 {
        push(KmemEvent::PageAlloc(MmPageAlloc::new(Some(0x100000 + i * 512), 9, 1, Gfp::TRANSHUGE)));
    }
    for i in 0..8u64 {
        push(KmemEvent::PageFree(MmPageFree::new(0x100000 + i * 512, 9)));
    }
    // The dm0 run's ring buffer dropped as many events as it kept; the dm1 run's none.
    let clean = lines.join("\n") + "\n";
    std::fs::write(dm0.join("trace.txt"), format!("CPU:0 [LOST 16 EVENTS]\n{clean}")).unwrap();
    std::fs::write(
        dm0.join("vmstat-delta.txt"),
        "thp_fault_alloc=80\nthp_fault_fallback=20\npgscan_kswapd=100\n",
    )
    .unwrap();
    std::fs::write(
        dm1.join("vmstat-delta.txt"),
        "thp_fault_alloc=95\nthp_fault_fallback=5\npgscan_kswapd=150\n",
    )
    .unwrap();
    let text = stdout_of(&["lab", "real", "--compare", dir.to_str().unwrap()]);
    assert!(text.contains("dm0-always-madvise -> dm1-always-madvise"), "{text}");
    let row = |name: &str| {
        text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}")).to_owned()
    };
    assert!(row("THP success %").contains("+18.8%"), "80% -> 95%: {}", row("THP success %"));
    assert!(row("pgscan_kswapd").contains("+50.0%"), "{}", row("pgscan_kswapd"));
    assert!(row("direct reclaim stalls").starts_with("direct reclaim stalls"));
    // The defrag_mode run has no trace to predict the change from its side.
    assert!(text.contains("no prediction from the dm1-always-madvise traces: "), "{text}");
    assert!(text.contains("run1 has no trace"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("prediction.json")).unwrap()).unwrap();
    assert_eq!(json["predictions"][0]["rows"].as_array().unwrap().len(), 4);
    assert_eq!(std::fs::read_to_string(dir.join("prediction.txt")).unwrap(), text);
    // With a trace it has: the same change predicted from the state the defrag_mode run began
    // in, a second table with the same rows.
    std::fs::write(dm1.join("trace.txt"), &clean).unwrap();
    let text = stdout_of(&["lab", "real", "--compare", dir.to_str().unwrap()]);
    let second = "the same change predicted from the dm1-always-madvise traces (replayed under vanilla and defrag_mode)";
    let at = text.find(second).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(text[at..].lines().filter(|l| l.starts_with("THP success %")).count(), 1, "{text}");
    assert!(text[at..].lines().any(|l| l.starts_with("pgscan_kswapd") && l.contains("+50.0%")), "{text}");
    // Each trace on its own; these runs have no before.pagetypeinfo to say where they began.
    // Each trace also says how much of it was lost.
    for (run, lost) in [("dm0-always-madvise/run1", " 50% "), ("dm1-always-madvise/run1", " 0% ")] {
        assert!(
            text.lines().any(|l| l.starts_with(run) && l.contains(" - ") && l.contains(lost)),
            "{run}: {text}"
        );
    }
    std::fs::remove_file(dm1.join("trace.txt")).unwrap();
    // A THP setting run beside them: the madvise trace replayed with defrag=never (the
    // recorded setting from run.json, as lab real writes it); its served retries become
    // fallbacks, 100% -> 0% predicted against the real 80% -> 60%.
    let never = dir.join("dm0-always-never/run1");
    std::fs::create_dir_all(&never).unwrap();
    std::fs::write(
        never.join("vmstat-delta.txt"),
        "thp_fault_alloc=60\nthp_fault_fallback=40\npgscan_kswapd=100\n",
    )
    .unwrap();
    std::fs::write(dm0.join("run.json"), r#"{"setting": "dm0-always-madvise", "run": 1}"#).unwrap();
    let text = stdout_of(&["lab", "real", "--compare", dir.to_str().unwrap()]);
    let header = "dm0-always-madvise -> dm0-always-never (THP always/madvise -> always/never)";
    let at = text.find(header).unwrap_or_else(|| panic!("{text}"));
    let thp = text[at..].lines().find(|l| l.starts_with("THP success %")).unwrap();
    assert!(thp.contains("-25.0%") && thp.contains("-100.0%"), "{thp}");
    assert!(!text.contains("dm1-always-madvise -> dm0-always-never"), "two knobs differ: {text}");
    // A second dm0 run whose trace lost nothing: the lossy run 1 is left out of dm0's
    // predictions and says so; alone, it had been counted (no such line above).
    assert!(!text.contains("left out of the predictions"), "{text}");
    let run2 = dir.join("dm0-always-madvise/run2");
    std::fs::create_dir_all(&run2).unwrap();
    std::fs::write(run2.join("trace.txt"), &clean).unwrap();
    for file in ["vmstat-delta.txt", "run.json"] {
        std::fs::copy(dm0.join(file), run2.join(file)).unwrap();
    }
    let text = stdout_of(&["lab", "real", "--compare", dir.to_str().unwrap()]);
    let left_out =
        "left out of the predictions above: dm0-always-madvise/run1 (each lost more than 0.1% of its events";
    assert_eq!(text.matches(left_out).count(), 2, "once per comparison of the dm0 traces: {text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("prediction.json")).unwrap()).unwrap();
    let traces = json["predictions"][0]["traces"].as_array().unwrap();
    let left: Vec<(&str, bool)> =
        traces.iter().map(|t| (t["run"].as_str().unwrap(), t["left_out"].as_bool().unwrap())).collect();
    assert_eq!(left, [("dm0-always-madvise/run1", true), ("dm0-always-madvise/run2", false)]);
    // `replay` of the lossy trace warns in closed loop, where the lost frees keep pages
    // allocated; open loop replays only the frees it has and needs no warning.
    let warning = "warning: the trace lost 50.0% of its events; in closed loop";
    let closed = stdout_of(&["replay", dm0.to_str().unwrap(), "--closed-loop"]);
    assert!(closed.contains(warning), "{closed}");
    let open = stdout_of(&["replay", dm0.to_str().unwrap(), "--open-loop"]);
    assert!(!open.contains("warning: the trace lost"), "{open}");
    std::fs::remove_dir_all(&dir).unwrap();
    let refused = pageblock(&["lab", "real", "--compare", "/nonexistent-session"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("/nonexistent-session"));
}

/// What-if sysctls on replay (issue 23, item 5): written on top of every policy, so a
/// machine told to keep far more free than it has fails the requests the kernel served; a
/// value the kernel's handler refuses is refused the same way.
#[test]
fn replay_takes_the_vm_sysctls_on_top_of_every_policy() {
    use pageblock_formats::ftrace::{Timestamp, TraceLine};
    use pageblock_formats::gfp::Gfp;
    use pageblock_formats::kmem::{KmemEvent, MmPageAlloc};
    let dir = std::env::temp_dir().join(format!("pageblock-whatif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lines: Vec<String> = (0..4u64)
        .map(|i| {
            let ev = KmemEvent::PageAlloc(MmPageAlloc::new(Some(0x100000 + i), 0, 0, Gfp::KERNEL));
            TraceLine::from_kmem("cc1", 7, 0, Some("....."), Timestamp::from_micros(1_000_000 + i), &ev)
                .render()
        })
        .collect();
    let trace = dir.join("trace.txt");
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let failed = |extra: &[&str]| -> u64 {
        let mut args = vec!["replay", trace.to_str().unwrap(), "--policy", "vanilla,defrag_mode"];
        args.extend(extra);
        let text = stdout_of(&args);
        let row = text.lines().find(|l| l.starts_with("failed requests")).unwrap().to_owned();
        row.split_whitespace().rev().take(2).map(|n| n.parse::<u64>().unwrap()).sum()
    };
    assert_eq!(failed(&[]), 0);
    assert_eq!(failed(&["--min-free-kbytes", "10000000"]), 8, "every request, under both policies");
    let refused = pageblock(&["replay", trace.to_str().unwrap(), "--watermark-scale-factor", "0"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("vm.watermark_scale_factor 0 is outside 1..=3000")
    );
    // A balloon: taken before the replay, said in the report; more than the machine can
    // give, or not a size, is refused.
    let text = stdout_of(&["replay", trace.to_str().unwrap(), "--policy", "vanilla", "--balloon", "2M"]);
    let row = text.lines().find(|l| l.starts_with("pages taken by a balloon")).unwrap();
    assert_eq!(row.split_whitespace().last(), Some("512"), "{row}");
    assert!(text.contains("loop: closed"), "a squeezed machine replays closed loop");
    assert!(text.contains("\nswap: assumed (no before.swaps)\n"), "{text}");
    let off = stdout_of(&["replay", trace.to_str().unwrap(), "--balloon", "2M", "--swap", "off"]);
    assert!(off.contains("\nswap: what if: swap off\n"), "{off}");
    for (size, says) in [("1T", "--balloon: the machine had"), ("lots", "lots")] {
        let refused = pageblock(&["replay", trace.to_str().unwrap(), "--balloon", size]);
        assert_ne!(refused.status.code(), Some(0), "{size}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains(says), "{size}");
    }
    // The other what-ifs: parsed and checked at the command line, refused with the reason.
    for (extra, says) in [
        (&["--mem", "1G", "--balloon", "2M"][..], "cannot be used with"),
        (&["--thp-enabled", "sometimes"][..], "known: always, madvise, never"),
        (&["--thp-defrag", "hard"][..], "known: always, defer, defer+madvise, madvise, never"),
        (&["--thp-enabled", "never"][..], "does not say its THP settings"),
        (&["--zoneinfo", "/nonexistent/zoneinfo"][..], "--zoneinfo /nonexistent/zoneinfo"),
        (&["--swap", "maybe"][..], "`maybe` is neither on nor off"),
    ] {
        let mut args = vec!["replay", trace.to_str().unwrap()];
        args.extend(extra);
        let refused = pageblock(&args);
        assert_ne!(refused.status.code(), Some(0), "{extra:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
