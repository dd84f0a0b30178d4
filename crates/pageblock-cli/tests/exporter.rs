//! `pageblock exporter` on the snapshot of tests/data/inspect, over loopback only: the
//! exposition checked by Prometheus' own parser and lint, scrapes sharing one inspection, the
//! cache interval, the landing page, 405, the cheap mode and a reader without root.

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

fn pageblock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pageblock"))
}

fn snapshot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inspect")
}

/// An exporter on an ephemeral loopback port; killed when dropped.
struct Exporter {
    child: Child,
    addr: String,
}

impl Exporter {
    fn start(extra: &[&str]) -> Exporter {
        let mut child = pageblock()
            .args(["exporter", "--listen", "127.0.0.1:0", "--proc", snapshot().to_str().unwrap()])
            .args(extra)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        // Keep reading its stderr (its warnings) so that it never writes to a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let addr =
            line.trim().trim_start_matches("listening on http://").trim_end_matches("/metrics").to_owned();
        Exporter { child, addr }
    }

    /// The whole response to `METHOD PATH`.
    fn request(&self, method: &str, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(&self.addr).unwrap_or_else(|e| panic!("{}: {e}", self.addr));
        write!(s, "{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        resp
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the sample line `name` (no labels) in a scrape.
fn value(scrape: &str, name: &str) -> f64 {
    let line = scrape
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} in {scrape}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The exporter's text parses with Prometheus' own parser and passes `promtool check metrics`'
/// lint rules (tools/expfmt-check: prometheus/common/expfmt and client_golang's promlint).
#[test]
fn exporter_output_passes_prometheus_parser_and_lint() {
    let out =
        pageblock().args(["exporter", "--once", "--proc", snapshot().to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = out.stdout;
    if Command::new("go").arg("version").output().is_err() {
        assert!(std::env::var_os("PAGEBLOCK_REQUIRE_GO").is_none(), "PAGEBLOCK_REQUIRE_GO set but no go");
        eprintln!("SKIPPED: go is not installed");
        return;
    }
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/expfmt-check");
    let mut child = Command::new("go")
        .args(["run", "."])
        .current_dir(tool)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("go run");
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let res = child.wait_with_output().unwrap();
    assert!(res.status.success(), "expfmt: {}", String::from_utf8_lossy(&res.stderr));
    let v: serde_json::Value = serde_json::from_slice(&res.stdout).unwrap();
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "promlint: {}", v["problems"]);
    let families = v["families"].as_array().unwrap();
    let family = |name: &str| families.iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("{name}"));
    // Three populated zones: eight content states each, 11 orders each, 5 migratetypes x 11.
    assert_eq!(family("pageblock_pageblocks_by_content")["samples"], 24);
    assert_eq!(family("pageblock_buddy_free_blocks")["samples"], 33);
    assert_eq!(family("pageblock_buddy_free_blocks_by_migratetype")["samples"], 165);
    assert_eq!(family("pageblock_vmstat_thp_fault_alloc_total")["type"], "COUNTER");
    assert_eq!(family("pageblock_unusable_index")["type"], "GAUGE");
    let body = String::from_utf8(text).unwrap();
    assert!(body.contains("pageblock_free_pageblocks{node=\"0\",zone=\"DMA32\"} 1499\n"), "{body}");
}

/// `/metrics` has the exposition content type, `/` a landing page linking to it, anything
/// else 404, and every method but GET 405 with `Allow: GET`.
#[test]
fn exporter_serves_metrics_a_landing_page_and_405() {
    let e = Exporter::start(&[]);
    let metrics = e.request("GET", "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains("text/plain; version=0.0.4"), "{metrics}");
    assert!(metrics.contains("# TYPE pageblock_free_pageblocks gauge"));
    let landing = e.request("GET", "/");
    assert!(landing.starts_with("HTTP/1.1 200") && landing.contains("text/html"), "{landing}");
    assert!(landing.contains("<a href=\"/metrics\">"), "{landing}");
    assert!(e.request("GET", "/nothing").contains(" 404 "));
    for method in ["POST", "PUT", "DELETE"] {
        let r = e.request(method, "/metrics");
        assert!(r.starts_with("HTTP/1.1 405"), "{method}: {r}");
        // Header names are case-insensitive (RFC 9110).
        assert!(r.to_ascii_lowercase().contains("\r\nallow: get\r\n"), "{method}: {r}");
    }
}

/// Ten concurrent scrapes share one inspection instead of making ten, one after another.
#[test]
fn concurrent_scrapes_share_one_inspection() {
    let e = Exporter::start(&["--cache-seconds", "0", "--workers", "10"]);
    let barrier = std::sync::Barrier::new(10);
    let counts: Vec<f64> = std::thread::scope(|s| {
        let scrapes: Vec<_> = (0..10)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    value(&e.request("GET", "/metrics"), "pageblock_exporter_inspections_total")
                })
            })
            .collect();
        scrapes.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let most = counts.iter().copied().fold(0.0, f64::max);
    // One inspection in flight serves them all; a scrape the scheduler ran after it had
    // finished may start a second one.
    assert!(most <= 2.0, "10 concurrent scrapes made {most} inspections: {counts:?}");
    // With no cache, a later scrape inspects afresh.
    assert_eq!(value(&e.request("GET", "/metrics"), "pageblock_exporter_inspections_total"), most + 1.0);
}

/// `--cache-seconds`: scrapes within the interval reuse the inspection, a later one does not.
#[test]
fn the_cache_serves_an_inspection_for_its_interval() {
    let e = Exporter::start(&["--cache-seconds", "1"]);
    let count = |e: &Exporter| value(&e.request("GET", "/metrics"), "pageblock_exporter_inspections_total");
    let first = count(&e);
    assert_eq!(count(&e), first, "a scrape within the interval reuses the inspection");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    assert_eq!(count(&e), first + 1.0, "a scrape after it inspects again");
}

/// `--no-kpageflags`: the cheap families only, and kpageflags is not even tried.
#[test]
fn the_cheap_mode_reads_no_kpageflags() {
    let out = pageblock()
        .args(["exporter", "--once", "--no-kpageflags", "--proc", snapshot().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("pageblock_pageblocks_by_content{"), "{text}");
    assert!(!text.contains("source=\"kpageflags\""), "{text}");
    assert!(text.contains("pageblock_buddy_free_blocks{"), "{text}");
    assert!(text.contains("pageblock_source_up{source=\"pagetypeinfo\"} 1"), "{text}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Without root's files the exporter says once on stderr what it could not read, and the
/// scrape says which sources were read.
#[test]
fn an_exporter_without_roots_files_says_what_it_left_out() {
    let dir = std::env::temp_dir().join(format!("pageblock-exporter-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["zoneinfo", "buddyinfo", "vmstat"] {
        std::fs::copy(snapshot().join(f), dir.join(f)).unwrap();
    }
    let out = pageblock().args(["exporter", "--once", "--proc", dir.to_str().unwrap()]).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kpageflags") && err.contains("pagetypeinfo"), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    for (source, up) in [("zoneinfo", 1), ("buddyinfo", 1), ("pagetypeinfo", 0), ("kpageflags", 0)] {
        let line = format!("pageblock_source_up{{source=\"{source}\"}} {up}\n");
        assert!(text.contains(&line), "{line} in {text}");
    }
}

/// Regression: every connection took a thread (500 idle connections: 503 threads), and a scrape
/// waited behind the idle ones. Now idle connections cost no thread and a scrape is answered
/// beside them.
#[test]
fn idle_connections_take_no_thread_and_do_not_hold_up_a_scrape() {
    let e = Exporter::start(&["--workers", "2"]);
    let idle: Vec<_> = (0..300).map(|_| std::net::TcpStream::connect(&e.addr).unwrap()).collect();
    let start = std::time::Instant::now();
    assert!(e.request("GET", "/metrics").starts_with("HTTP/1.1 200"));
    assert!(start.elapsed() < std::time::Duration::from_secs(3), "{:?}", start.elapsed());
    let status = std::fs::read_to_string(format!("/proc/{}/status", e.child.id())).unwrap();
    let threads: usize =
        status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap();
    // Main, two workers, at most two blocking threads, and tokio's own timer/IO helpers.
    assert!(threads <= 8, "{threads} threads for {} idle connections", idle.len());
}
