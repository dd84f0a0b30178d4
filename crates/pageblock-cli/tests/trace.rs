//! `pageblock trace stats` end to end: text and JSON on a real fixture, and the rules of long
//! commands (an unwritable --json fails before the work, a failed write is an error, a bad
//! line stops with FILE:LINE: reason unless --skip-bad).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pageblock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pageblock")).args(args).output().expect("run pageblock")
}

/// 82 real lines of the 6.18 THP trace (the lab's fixture).
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pageblock-trace/tests/data/trace_small.txt")
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pageblock-cli-trace-{}-{name}", std::process::id()))
}

#[test]
fn stats_prints_a_summary_and_writes_json() {
    let json_path = temp("stats.json");
    let fixture = fixture();
    let out =
        pageblock(&["trace", "stats", fixture.to_str().unwrap(), "--json", json_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("lines           82 (0 comments, 0 other events, 0 bad)"), "{text}");
    assert!(text.contains("(plain)"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    std::fs::remove_file(&json_path).unwrap();
    assert_eq!(json["lines"], 82);
    assert_eq!(json["bad_lines"], 0);
    assert_eq!(json["lost_events"], 0);
    assert!(json["seconds"].as_f64().is_some_and(|s| s >= 0.0));
    let events = &json["events"];
    for (name, n) in [
        ("mm_page_alloc", 47),
        ("mm_page_free", 25),
        ("mm_page_free_batched", 2),
        ("mm_page_alloc_zone_locked", 1),
        ("mm_page_pcpu_drain", 5),
        ("mm_page_alloc_extfrag", 1),
        ("mm_compaction_kcompactd_sleep", 1),
    ] {
        assert_eq!(events[name], n, "{name}");
    }
    assert_eq!(json["lifetimes"]["paired"], 18);
    assert_eq!(json["gfp"]["distinct"], 3);
    assert_meta(&json, "trace stats");
}

/// Regression: no JSON said which pageblock made it.
fn assert_meta(json: &serde_json::Value, command: &str) {
    let meta = &json["meta"];
    assert_eq!(meta["pageblock_version"], env!("CARGO_PKG_VERSION"), "{meta}");
    let revision = meta["git_revision"].as_str().unwrap_or_default();
    assert!(!revision.is_empty() && revision != "unknown", "built in a git checkout: {meta}");
    assert!(meta["command"].as_str().is_some_and(|c| c.contains(command)), "{meta}");
}

/// Regression: `trace stats` refused the directory `pageblock record` writes ("Is a
/// directory"), which replay already read.
#[test]
fn stats_reads_a_recording_directory() {
    let dir = temp("recording");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture(), dir.join("trace.txt")).unwrap();
    let out = pageblock(&["trace", "stats", dir.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("trace.txt (plain)") && text.contains("lines           82 "), "{text}");
}

#[test]
fn an_unusable_json_path_fails_before_reading() {
    // The trace does not exist either: the JSON path is checked first.
    let out = pageblock(&["trace", "stats", "/no/such/trace.zst", "--json", "/no/such/dir/out.json"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/dir/out.json"), "{err}");
    // A write that fails (no space left) is an error, not a silent success.
    if Path::new("/dev/full").exists() {
        let fixture = fixture();
        let out = pageblock(&["trace", "stats", fixture.to_str().unwrap(), "--json", "/dev/full"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("/dev/full"));
    }
}

#[test]
fn a_bad_line_stops_with_its_place_unless_skipped() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[6] = "garbage in the middle of a trace";
    let path = temp("bad.txt");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let p = path.to_str().unwrap();
    let out = pageblock(&["trace", "stats", p]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{p}:7: ")), "{err}");
    let out = pageblock(&["trace", "stats", p, "--skip-bad"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 bad)"), "{text}");
    assert!(text.contains(&format!("first bad line  {p}:7: ")), "{text}");
    // --perf reads perf script text: this file is ftrace, so its first line is bad.
    let out = pageblock(&["trace", "stats", p, "--perf"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{p}:1: ")));
    std::fs::remove_file(&path).unwrap();
}

/// The acceptance run: the shared real trace under vanilla and defrag_mode, side by side,
/// with the fidelity table, and the promised JSON.
#[test]
fn replay_prints_policies_side_by_side_and_the_fidelity_table() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/linux-6.18-clone-tar-python-thp");
    assert!(dir.is_dir(), "the shared trace (CI has ../shared)");
    let json = std::env::temp_dir().join(format!("pageblock-replay-{}.json", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pageblock"))
        .args(["replay", dir.to_str().unwrap(), "--policy", "vanilla", "--policy", "defrag_mode", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let header = text.lines().find(|l| l.starts_with("policy ")).expect("a policy table");
    assert!(header.contains("vanilla") && header.contains("defrag_mode"), "{header}");
    assert!(text.contains("fidelity (vanilla against the traced kernel"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(v["trace"]["events"]["mm_page_alloc"], 729_121);
    let policies = v["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 2);
    for p in policies {
        for key in ["mm_page_alloc_zone_locked", "mm_page_pcpu_drain", "mm_page_alloc_extfrag"] {
            assert!(p["events"][key].is_u64(), "{key} in {p}");
        }
        for key in ["extfrag_fragmenting", "failed_requests"] {
            assert!(p[key].is_u64(), "{key}");
        }
        for key in ["mean", "min", "end"] {
            assert!(p["free_pageblocks"][key].is_number(), "free_pageblocks.{key}");
        }
        for key in ["mean", "end"] {
            assert!(p["huge_share"][key].is_number(), "huge_share.{key}");
        }
        assert!(p["records_per_second"].as_f64().is_some_and(|x| x > 0.0));
        assert!(p["trace_events_per_second"].as_f64() > p["records_per_second"].as_f64());
        // Regression: the time series the README promises were left out of the JSON.
        let series = &p["series"];
        let n = series["records"].as_array().map_or(0, Vec::len);
        assert!(n > 100, "samples over the replay: {n}");
        for key in ["seconds", "free_pageblocks", "huge_share"] {
            assert_eq!(series[key].as_array().map(Vec::len), Some(n), "series.{key}");
        }
        let requests = ["mm_page_alloc", "mm_page_free"].map(|e| v["trace"]["events"][e].as_u64().unwrap());
        assert_eq!(
            series["records"][n - 1].as_u64(),
            Some(requests[0] + requests[1]),
            "the last sample ends the trace"
        );
        assert!(series["seconds"][n - 1].as_f64().is_some_and(|s| s > 20.0), "the trace's 21.6 s");
        assert_eq!(series["free_pageblocks"][n - 1].as_f64(), p["free_pageblocks"]["end"].as_f64());
    }
    // Regression: 193 in the JSON, 0.193 in the text; now a fraction in both.
    let row = |label: &str| {
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}")).to_owned()
    };
    let printed: Vec<String> =
        row("unusable index order 9, end").split_whitespace().skip(5).map(str::to_owned).collect();
    for (p, shown) in policies.iter().zip(&printed) {
        let fraction = p["unusable_index_end_fraction"].as_f64().expect("a fraction");
        assert!((0.0..=1.0).contains(&fraction), "{fraction}");
        assert_eq!(&format!("{fraction:.3}"), shown);
    }
    // Regression: row names carried the text's indentation.
    let rows = v["fidelity"]["rows"].as_array().expect("fidelity rows");
    for r in rows {
        let name = r["name"].as_str().unwrap();
        assert_eq!(name, name.trim(), "{r}");
    }
    let fragmenting = rows.iter().find(|r| r["name"] == "fragmenting").expect("fragmenting");
    assert_eq!(fragmenting["part_of"], "mm_page_alloc_extfrag");
    assert!(rows.iter().find(|r| r["name"] == "mm_page_alloc").is_some_and(|r| r["part_of"].is_null()));
    assert!(text.contains("  of which fragmenting"), "{text}");
    assert_meta(&v, "replay");
}

/// Regression: `--skip-bad` on an empty file or pure garbage printed empty statistics and
/// exited 0.
#[test]
fn a_file_without_one_event_fails_even_when_skipping() {
    for (name, text, want) in [
        ("empty.txt", "", "no events decoded: no trace lines"),
        ("garbage.txt", "not\na trace\n", "every one of the 2 lines is malformed"),
    ] {
        let path = temp(name);
        std::fs::write(&path, text).unwrap();
        let out = pageblock(&["trace", "stats", path.to_str().unwrap(), "--skip-bad"]);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
    }
}

/// Regression: a truncated `.zst` (a killed recording) was rejected whole, even with
/// `--skip-bad`. Without it the error says where it stops and suggests `--skip-bad`; with
/// it both commands read the complete lines before the cut and warn.
#[test]
fn a_truncated_trace_is_read_up_to_the_cut_with_skip_bad() {
    let text = std::fs::read(fixture()).unwrap();
    let mut zst = zstd::encode_all(&text[..], 3).unwrap();
    let second = zstd::encode_all(&text[..], 3).unwrap();
    zst.extend_from_slice(&second[..second.len() / 2]);
    let path = temp("cut.txt.zst");
    std::fs::write(&path, zst).unwrap();
    let p = path.to_str().unwrap();
    for cmd in [&["trace", "stats"][..], &["replay", "--policy", "vanilla"]] {
        let strict = pageblock(&[cmd, &[p]].concat());
        assert_eq!(strict.status.code(), Some(1), "{cmd:?}");
        let err = String::from_utf8_lossy(&strict.stderr);
        assert!(err.contains(&format!("{p}: truncated zstd stream")), "{cmd:?}: {err}");
        assert!(err.contains("after line 82; --skip-bad reads the 82 lines before it"), "{cmd:?}: {err}");
        let lenient = pageblock(&[cmd, &[p, "--skip-bad"]].concat());
        let err = String::from_utf8_lossy(&lenient.stderr);
        assert!(lenient.status.success(), "{cmd:?}: {err}");
        assert!(
            err.contains("warning: ") && err.contains("after line 82; read the lines before it"),
            "{err}"
        );
        let out = String::from_utf8_lossy(&lenient.stdout);
        assert!(out.contains("82 lines") || out.contains("lines           82 "), "{cmd:?}: {out}");
    }
    std::fs::remove_file(&path).unwrap();
}
