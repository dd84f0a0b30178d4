//! Third-party oracle: Prometheus' Go `procfs` library (what node_exporter uses) must read
//! our rendered buddyinfo and zoneinfo exactly as our own parser does.
//!
//! Runs `go run .` in `tools/procfs-check`; skipped, loudly, when `go` is not installed.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::data;
use pageblock_formats::buddyinfo::{BuddyInfo, BuddyInfoZone};
use pageblock_formats::zoneinfo::ZoneInfo;
use serde_json::Value;

fn go_available() -> bool {
    Command::new("go").arg("version").output().map(|o| o.status.success()).unwrap_or(false)
}

fn tool_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/procfs-check")
}

/// Writes both files through our renderers into a fresh directory and returns the tool's JSON.
fn run_oracle(label: &str, buddy: &BuddyInfo, zones: &ZoneInfo) -> Value {
    let dir = std::env::temp_dir().join(format!("pageblock-procfs-oracle-{}-{label}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("buddyinfo"), buddy.render()).unwrap();
    std::fs::write(dir.join("zoneinfo"), zones.render()).unwrap();
    let out =
        Command::new("go").arg("run").arg(".").arg(&dir).current_dir(tool_dir()).output().expect("go run");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{label}: go run failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{label}: bad JSON from procfs-check: {e}"))
}

fn assert_same(label: &str, buddy: &BuddyInfo, zones: &ZoneInfo, json: &Value) {
    let rows = json["buddyinfo"].as_array().expect("buddyinfo array");
    assert_eq!(rows.len(), buddy.zones.len(), "{label}: buddyinfo rows");
    for (row, z) in rows.iter().zip(&buddy.zones) {
        assert_eq!(row["node"], Value::from(z.node.to_string()), "{label}");
        assert_eq!(row["zone"], Value::from(z.zone.as_str()), "{label}");
        let sizes: Vec<f64> = row["sizes"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let ours: Vec<f64> = z.nr_free.iter().map(|&n| n as f64).collect();
        assert_eq!(sizes, ours, "{label}: {} sizes", z.zone);
    }
    let rows = json["zoneinfo"].as_array().expect("zoneinfo array");
    assert_eq!(rows.len(), zones.zones.len(), "{label}: zoneinfo zones");
    for (row, z) in rows.iter().zip(&zones.zones) {
        let what = format!("{label}: node {} zone {}", z.node, z.zone);
        assert_eq!(row["node"], Value::from(z.node.to_string()), "{what}");
        assert_eq!(row["zone"], Value::from(z.zone.as_str()), "{what}");
        let num = |v: u64| Value::from(v as i64);
        assert_eq!(
            row["nr_free_pages"],
            z.stat("nr_free_pages").map_or(Value::Null, num),
            "{what}: nr_free_pages"
        );
        for (key, v) in [
            ("min", z.min),
            ("low", z.low),
            ("high", z.high),
            ("spanned", z.spanned),
            ("present", z.present),
            ("managed", z.managed),
        ] {
            assert_eq!(row[key], num(v), "{what}: {key}");
        }
        let prot: Vec<Value> = z.protection.iter().map(|&p| Value::from(p)).collect();
        assert_eq!(row["protection"], Value::from(prot), "{what}: protection");
    }
}

/// A two-node machine the samples do not cover: node 1, big counts, an unpopulated zone
/// between populated ones.
fn synthetic() -> (BuddyInfo, ZoneInfo) {
    let text = data("zoneinfo.txt");
    let mut zi = ZoneInfo::parse(&text).unwrap();
    let mut second = zi.zones.clone();
    for (i, z) in second.iter_mut().enumerate() {
        z.node = 1;
        z.min += 1000 * i as u64;
        z.managed = 1 << 40;
        z.protection.iter_mut().for_each(|p| *p += 7);
    }
    zi.zones.extend(second);
    let mut bi = BuddyInfo::parse(&data("buddyinfo.txt")).unwrap();
    bi.zones.push(BuddyInfoZone { node: 1, zone: "Normal".into(), nr_free: vec![12_345_678; 11] });
    (bi, zi)
}

#[test]
fn prometheus_procfs_reads_our_files_like_we_do() {
    if !go_available() {
        // CI sets PAGEBLOCK_REQUIRE_GO so the oracle can never be skipped there.
        assert!(
            std::env::var_os("PAGEBLOCK_REQUIRE_GO").is_none(),
            "PAGEBLOCK_REQUIRE_GO is set but `go version` failed"
        );
        // Written to the real stderr, not `eprintln!`, so that the test harness's output
        // capture does not hide it.
        let _ = writeln!(
            std::io::stderr(),
            "\n\n*** SKIPPED procfs_oracle: `go version` failed: install Go to run the \
             prometheus/procfs oracle (tools/procfs-check) ***\n"
        );
        return;
    }
    let mut cases = vec![(
        "sample".to_owned(),
        BuddyInfo::parse(&data("buddyinfo.txt")).unwrap(),
        ZoneInfo::parse(&data("zoneinfo.txt")).unwrap(),
    )];
    for s in common::SNAPSHOTS {
        cases.push((
            s.to_owned(),
            BuddyInfo::parse(&data(&format!("snapshots/{s}.buddyinfo"))).unwrap(),
            ZoneInfo::parse(&data(&format!("snapshots/{s}.zoneinfo"))).unwrap(),
        ));
    }
    let (bi, zi) = synthetic();
    cases.push(("synthetic-two-nodes".to_owned(), bi, zi));
    for (label, bi, zi) in &cases {
        let json = run_oracle(label, bi, zi);
        assert_same(label, bi, zi, &json);
    }
}
