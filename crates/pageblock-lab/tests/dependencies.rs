//! The simulator and trace replay do not link the benchmark's peers, criterion or an HTTP
//! server: `cargo tree -p pageblock-lab -e normal,dev` (this machine's target) lists none of
//! them, however deep a dependency would bring them in.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates that belong to `pageblock-bench` (peers, criterion) or to the CLI's exporter.
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

#[test]
fn the_lab_links_no_peer_allocator_criterion_or_http_server() {
    let lab = tree("pageblock-lab");
    assert!(lab.contains("pageblock-core"), "the listing is read: {lab:?}");
    let found: Vec<&str> = FORBIDDEN.into_iter().filter(|f| lab.contains(*f)).collect();
    assert!(found.is_empty(), "pageblock-lab links {found:?}; they belong in pageblock-bench or the CLI");
    // The same reading finds them where they belong: the check is not blind.
    let bench = tree("pageblock-bench");
    for f in ["criterion", "buddy_system_allocator", "buddy-alloc"] {
        assert!(bench.contains(f), "pageblock-bench links {f}: {bench:?}");
    }
}
