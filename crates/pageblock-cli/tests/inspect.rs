//! `pageblock inspect` on a recorded snapshot of this machine's /proc (a 24 GiB 6.18 VM;
//! kpageflags truncated to its first 0x120000 pfns, zstd), without root's files, and — when
//! the test runs as root — on the live machine.

use std::path::{Path, PathBuf};
use std::process::Command;

fn pageblock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pageblock"))
}

fn snapshot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inspect")
}

fn inspect_json(dir: &Path, tag: &str) -> (String, serde_json::Value) {
    let json = std::env::temp_dir().join(format!("pageblock-inspect-{tag}-{}.json", std::process::id()));
    let out = pageblock()
        .args(["inspect", "--proc", dir.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .output()
        .expect("run pageblock");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "inspect {}: {err}", dir.display());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written")).expect("valid JSON");
    let _ = std::fs::remove_file(&json);
    assert_eq!(v["meta"]["pageblock_version"], env!("CARGO_PKG_VERSION"), "what made it: {}", v["meta"]);
    (String::from_utf8_lossy(&out.stdout).into_owned(), v)
}

fn zone<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["zones"]
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["zone"] == name)
        .unwrap_or_else(|| panic!("{name} in {v}"))
}

#[test]
fn a_snapshot_gives_the_per_pageblock_picture() {
    let (text, v) = inspect_json(&snapshot(), "snapshot");
    assert!(text.contains("Node 0, zone    DMA32"), "{text}");
    assert_eq!(v["pageblock_order"], 9);
    let dma32 = zone(&v, "DMA32");
    for key in ["pageblocks", "free_pageblocks", "mixed_pageblocks", "thp_pageblocks", "movable_pageblocks"] {
        assert!(dma32[key].is_u64(), "{key} in {dma32}");
    }
    // 0x1000..0x100000 in 2 MiB blocks; the PCI hole above 3 GiB (iomem) is 512 of them.
    assert_eq!(dma32["pageblocks"], 2040);
    assert_eq!(dma32["hole_pageblocks"], 512);
    // Every page of a free buddy block says KPF_BUDDY: whole free pageblocks by content are
    // exactly the free blocks of order 9 and 10 buddyinfo lists.
    assert_eq!(dma32["free_pageblocks"], dma32["buddyinfo_free_pageblocks"]);
    assert_eq!(zone(&v, "DMA")["free_pageblocks"], 7);
    assert_eq!(dma32["pages"]["free"], dma32["nr_free_pages"], "the snapshot's zoneinfo was read with it");
    let normal = zone(&v, "Normal");
    assert!(normal["mixed_pageblocks"].as_u64().unwrap() > 0, "{normal}");
    assert!(normal["thp_pageblocks"].as_u64().unwrap() > 0, "{normal}");
    let notes = v["unreadable"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n[1].as_str().unwrap().contains("snapshot ends at pfn 0x120000")),
        "{notes:?}"
    );
}

/// A machine whose kernel initialises Normal's top lazily (tests/data/inspect-lazy): the
/// flagless, uninitialised pageblocks are not managed, not unmovable, and every zone's
/// pageblocks with managed memory are the ones /proc/pagetypeinfo counts.
#[test]
fn memory_the_kernel_does_not_manage_is_not_counted_as_unmovable() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inspect-lazy");
    let (text, v) = inspect_json(&dir, "lazy");
    for z in v["zones"].as_array().unwrap() {
        let kernel_blocks: u64 =
            z["blocks_by_migratetype"].as_array().unwrap().iter().map(|r| r[1].as_u64().unwrap()).sum();
        let n = |k: &str| z[k].as_u64().unwrap_or_else(|| panic!("{k} in {z}"));
        assert_eq!(
            n("pageblocks") - n("hole_pageblocks") - z["not_managed_pageblocks"].as_u64().unwrap_or(0),
            kernel_blocks,
            "{}: pageblocks with managed memory vs pagetypeinfo's",
            z["zone"]
        );
        let p = &z["pages"];
        let in_use = ["free", "movable", "slab", "page_table", "kernel", "hugetlb"];
        let managed_by_content: u64 = in_use.iter().map(|k| p[k].as_u64().unwrap()).sum();
        assert!(managed_by_content <= n("managed"), "{}: {p} vs managed {}", z["zone"], n("managed"));
    }
    let normal = zone(&v, "Normal");
    assert!(normal["not_managed_pageblocks"].as_u64().unwrap() > 0, "{normal}");
    assert!(text.contains("not managed"), "{text}");
}

#[test]
fn without_roots_files_it_says_what_it_could_not_read() {
    let dir = std::env::temp_dir().join(format!("pageblock-inspect-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["zoneinfo", "buddyinfo"] {
        std::fs::copy(snapshot().join(f), dir.join(f)).unwrap();
    }
    let (text, v) = inspect_json(&dir, "user");
    assert!(text.contains("needs /proc/kpageflags: run as root"), "{text}");
    assert!(text.contains("buddyinfo: 1499 free pageblocks"), "{text}");
    assert!(zone(&v, "DMA32")["pageblocks"].is_null(), "no content without kpageflags");
    let _ = std::fs::remove_dir_all(&dir);
    let out = pageblock().args(["inspect", "--proc", "/nonexistent"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/zoneinfo"));
}

#[test]
fn watch_prints_a_time_series() {
    let out = pageblock()
        .args(["inspect", "--proc", snapshot().to_str().unwrap(), "--watch", "0.01", "--count", "3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().all(|l| l.contains("0:DMA32 free 1499")), "{text}");
}

/// `--watch` without `--count` ends by a signal: the JSON holds every sample printed, is valid
/// while the watch runs, and the status is 128 + the signal.
#[test]
fn a_watch_ended_by_a_signal_keeps_every_sample() {
    use std::io::BufRead as _;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let json = std::env::temp_dir().join(format!("pageblock-watch-{signal}-{}.json", std::process::id()));
        let mut child = pageblock()
            .args(["inspect", "--proc", snapshot().to_str().unwrap(), "--watch", "0.2"])
            .arg("--json")
            .arg(&json)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = 0;
        while printed < 2 {
            lines.next().expect("a sample line").unwrap();
            printed += 1;
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).expect("written after a sample"))
                    .expect("valid JSON while running");
            assert!(v["samples"].as_array().unwrap().len() >= printed, "{v}");
        }
        // SAFETY: kill has no memory-safety preconditions; the child is not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        printed += lines.count();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}: {status:?}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(v["meta"]["command"].as_str().is_some_and(|c| c.contains("--watch")), "{}", v["meta"]);
        let samples = v["samples"].as_array().unwrap();
        assert_eq!(samples.len(), printed, "every printed sample is in the file");
        assert!(samples.iter().all(|s| zone(s, "DMA32")["free_pageblocks"] == 1499));
        let _ = std::fs::remove_file(&json);
    }
}

/// `--watch --html` draws the maps of the last `--keep-maps` samples only.
#[test]
fn a_watch_keeps_only_the_last_maps() {
    let page = std::env::temp_dir().join(format!("pageblock-watch-{}.html", std::process::id()));
    let out = pageblock()
        .args(["inspect", "--proc", snapshot().to_str().unwrap(), "--watch", "0.01", "--count", "5"])
        .args(["--keep-maps", "2", "--html", page.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    let _ = std::fs::remove_file(&page);
    // Two zones of more than 8 pageblocks (DMA32, Normal), two samples each.
    assert_eq!(html.matches("<figcaption>sample ").count(), 4);
    assert!(html.contains("<figcaption>sample 5<") && !html.contains("<figcaption>sample 3<"));
}

/// `--count` and `--keep-maps` mean nothing without `--watch`: a usage error, not ignored.
#[test]
fn watch_options_without_watch_are_refused() {
    for extra in [["--count", "3"], ["--keep-maps", "3"]] {
        let out = pageblock()
            .args(["inspect", "--proc", snapshot().to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--watch"), "{extra:?}");
    }
}

/// As root, the live machine: the content count of whole free pageblocks agrees with the
/// buddyinfo read right after it (the machine moves on in between: a small tolerance).
#[test]
fn the_live_machine_as_root() {
    if std::fs::File::open("/proc/kpageflags").is_err() {
        eprintln!("not root: /proc/kpageflags unreadable, live inspection not tested");
        return;
    }
    let (_, v) = inspect_json(Path::new("/proc"), "live");
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    for z in v["zones"].as_array().unwrap() {
        let (a, b) =
            (z["free_pageblocks"].as_i64().unwrap(), z["buddyinfo_free_pageblocks"].as_i64().unwrap());
        assert!((a - b).abs() <= 8 + b / 20, "{}: {a} by content, {b} by buddyinfo", z["zone"]);
    }
}
