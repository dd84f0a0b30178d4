//! The HTML reports open in a real headless Chromium (tools/browser-check: Playwright driving
//! the system browser) without console errors or network requests, with one map cell per
//! pageblock. Without a browser the structure is still checked, and the browser part is
//! skipped loudly (CI sets PAGEBLOCK_REQUIRE_BROWSER=1, which makes a missing one an error).

use std::path::{Path, PathBuf};
use std::process::Command;

fn pageblock(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_pageblock")).args(args).output().expect("run pageblock");
    assert!(out.status.success(), "pageblock {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pageblock-html-{}-{name}", std::process::id()))
}

/// The browser's view of `page`, or `None` (loudly) without Playwright and Chromium.
fn browser(page: &Path) -> Option<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/browser-check/check_html.py");
    let shot = page.with_extension("png");
    let out = Command::new("python3").arg(&script).arg(page).arg(&shot).output();
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        let why = out.map_or_else(|e| e.to_string(), |o| String::from_utf8_lossy(&o.stderr).into_owned());
        assert!(
            std::env::var_os("PAGEBLOCK_REQUIRE_BROWSER").is_none(),
            "PAGEBLOCK_REQUIRE_BROWSER set: {why}"
        );
        eprintln!("SKIPPED: no headless Chromium with Playwright: {why}");
        return None;
    }
    let shot_len = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(shot_len > 10_000, "a screenshot was taken ({shot_len} bytes)");
    let _ = std::fs::remove_file(&shot);
    let v: serde_json::Value = serde_json::from_slice(&out.unwrap().stdout).expect("browser-check JSON");
    assert_eq!(v["console_errors"].as_array().unwrap().len(), 0, "console errors: {}", v["console_errors"]);
    assert_eq!(v["requests"], 0, "a self-contained page asks the network for nothing");
    Some(v)
}

fn cells(html: &str) -> usize {
    html.matches("<rect class=\"pb ").count()
}

#[test]
fn inspect_html_maps_every_pageblock() {
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inspect");
    let page = tmp("inspect.html");
    pageblock(&["inspect", "--proc", snapshot.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    // DMA 8 + DMA32 2040 + Normal 10752 pageblocks.
    assert_eq!(cells(&html), 12800);
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    if let Some(v) = browser(&page) {
        assert_eq!(v["cells"], 12800);
        assert_eq!(v["maps"], 3);
    }
    let _ = std::fs::remove_file(&page);
}

#[test]
fn lab_thp_html_shows_the_policies_side_by_side() {
    let page = tmp("thp.html");
    pageblock(&[
        "lab",
        "thp",
        "--quick",
        "--runs",
        "2",
        "--policies",
        "vanilla,defrag_mode",
        "--html",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("vanilla — DMA32") && html.contains("defrag_mode — DMA32"));
    // Two policies' final 512 MiB maps, and the map after each of two runs per policy.
    assert_eq!(cells(&html), (2 + 2 * 2) * 248);
    if let Some(v) = browser(&page) {
        assert_eq!(v["maps"], 6);
        assert_eq!(v["charts"], 4);
        assert_eq!(v["series"], 8, "four charts, one line per policy");
    }
    let _ = std::fs::remove_file(&page);
}

#[test]
fn replay_html_shows_the_policies_side_by_side() {
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/linux-6.18-clone-tar-python-thp");
    let page = tmp("replay.html");
    pageblock(&["replay", trace.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("vanilla — Normal") && html.contains("defrag_mode — Normal"));
    if let Some(v) = browser(&page) {
        assert_eq!(v["charts"], 2);
        assert_eq!(v["series"], 4);
        assert_eq!(v["cells"].as_u64().unwrap() as usize, cells(&html));
    }
    let _ = std::fs::remove_file(&page);
}
