//! Dependencies point one way between the products: `cargo tree -p PACKAGE -e normal,dev`
//! (this machine's target) shows what each crate links, however deep a dependency would
//! bring it in. The trace reader and the simulator link neither the benchmark's peers,
//! criterion nor an HTTP server; the simulator (`pageblock-lab`) and the live machine
//! (`pageblock-live`) do not link each other.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates that belong to `pageblock-bench` (peers, criterion) or to the live exporter.
const FORBIDDEN: [&str; 5] = ["criterion", "buddy_system_allocator", "buddy-alloc", "tiny_http", "hyper"];

/// Every package name in `cargo tree -p package -e normal,dev`.
fn tree(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--manifest-path", manifest, "-p", package])
        .args(["-e", "normal,dev", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("running cargo tree");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// `package`'s tree, read (it lists `pageblock-core`), holding none of the `FORBIDDEN`.
fn assert_links_none_forbidden(package: &str) {
    let deps = tree(package);
    assert!(deps.contains("pageblock-core"), "the listing is read: {deps:?}");
    let found: Vec<&str> = FORBIDDEN.into_iter().filter(|f| deps.contains(*f)).collect();
    assert!(found.is_empty(), "{package} links {found:?}; they belong in pageblock-bench or the live crate");
}

#[test]
fn the_lab_links_no_peer_allocator_criterion_or_http_server() {
    assert_links_none_forbidden("pageblock-lab");
    // The same reading finds them where they belong: the check is not blind.
    let bench = tree("pageblock-bench");
    for f in ["criterion", "buddy_system_allocator", "buddy-alloc"] {
        assert!(bench.contains(f), "pageblock-bench links {f}: {bench:?}");
    }
}

#[test]
fn the_trace_reader_links_no_peer_allocator_criterion_http_server_or_simulator() {
    assert_links_none_forbidden("pageblock-trace");
    let trace = tree("pageblock-trace");
    assert!(!trace.contains("pageblock-lab"), "pageblock-trace links the lab: {trace:?}");
}

#[test]
fn the_simulator_and_the_live_machine_do_not_depend_on_each_other() {
    let lab = tree("pageblock-lab");
    assert!(lab.contains("pageblock-view"), "the listing is read: {lab:?}");
    assert!(!lab.contains("pageblock-live"), "pageblock-lab links the live crate: {lab:?}");
    let live = tree("pageblock-live");
    assert!(live.contains("pageblock-view") && live.contains("hyper"), "the listing is read: {live:?}");
    for sim in ["pageblock-lab", "pageblock"] {
        assert!(!live.contains(sim), "pageblock-live links {sim}: {live:?}");
    }
}
