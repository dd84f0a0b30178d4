//! What a new user can get wrong, and what the machine can refuse: each gets a clear error
//! and a non-zero exit, never a panic, a hang or a lost result.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pageblock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pageblock"))
}

fn fails_with(args: &[&str], needle: &str) {
    let out = pageblock().args(args).output().expect("run pageblock");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "pageblock {args:?}: {err}");
    assert!(err.contains(needle), "pageblock {args:?}: `{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Regression: `lab seeds --json /proc/x.json` ran for minutes and then lost everything. The
/// full-size run takes many minutes; refusing the path first takes milliseconds. The
/// watchdog below only catches a regression (a run that starts working), it does not time
/// anything that should pass.
#[test]
fn unwritable_output_paths_are_refused_before_the_work() {
    for args in [
        &["lab", "seeds", "--json", "/proc/pageblock/x.json"][..],
        &["bench", "fastpath", "--json", "/proc/pageblock/x.json"][..],
        &[
            "show",
            "counters",
            "--workload",
            "fragment",
            "--ops",
            "100000000",
            "--trace",
            "/proc/pageblock/t.txt",
        ][..],
    ] {
        let mut child = pageblock().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("pageblock {args:?} started working before checking its output path");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("/proc/pageblock/"), "{args:?}: {err}");
    }
}

/// Regression: `show buddyinfo > /dev/full` exited 0.
#[test]
fn a_failed_write_to_stdout_is_an_error_but_a_closed_pipe_is_not() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = pageblock().args(["show", "buddyinfo", "--mem", "1G"]).stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("writing to stdout"));
    // The reader is gone before the first byte: `| head -c0`.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = pageblock().args(["show", "zoneinfo", "--mem", "1G"]).stdout(writer).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Regression: `--mem 15T` aborted in the allocator after trying to allocate its memmap.
#[test]
fn machines_this_host_cannot_hold_are_refused_up_front() {
    fails_with(&["show", "buddyinfo", "--mem", "15T"], "GiB of memory to simulate");
    fails_with(&["show", "buddyinfo", "--mem", "1048576T"], "machine:");
}

/// Values the kernel's sysctl handlers and boot code reject are typed errors here too; a
/// sysctl's error names it as `sysctl` does and says what its handler accepts.
#[test]
fn tunables_are_validated_as_the_kernel_validates_them() {
    fails_with(&["show", "buddyinfo", "--pcp-batch", "0"], "per-CPU batch of 0");
    fails_with(&["show", "buddyinfo", "--pcp-batch", "4294967295"], "per-CPU batch of 4294967295");
    fails_with(
        &["show", "buddyinfo", "--percpu-pagelist-high-fraction", "4"],
        "vm.percpu_pagelist_high_fraction 4 is outside 0 (auto) or 8..=INT_MAX",
    );
    fails_with(
        &["show", "buddyinfo", "--min-free-kbytes", "2147483648"],
        "vm.min_free_kbytes 2147483648 is outside 0..=INT_MAX",
    );
    fails_with(
        &["demo", "--watermark-boost-factor", "4294967295"],
        "vm.watermark_boost_factor 4294967295 is outside 0..=INT_MAX",
    );
    fails_with(&["show", "buddyinfo", "--cpus", "0"], "0 CPUs");
    fails_with(&["show", "buddyinfo", "--max-order", "64"], "max order 64");
}

/// Regression: a bench whose 4 GiB mapping the host refuses panicked; now it says so.
#[test]
fn a_refused_benchmark_mapping_is_a_message() {
    let bin = env!("CARGO_BIN_EXE_pageblock");
    let out = Command::new("sh")
        .args(["-c", &format!("ulimit -v 2000000 && exec {bin} bench fastpath --smoke")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("4 GiB") && !err.contains("panicked"), "{err}");
}

/// Regression: output files were truncated before the work, so a failed or interrupted run
/// destroyed an earlier result of the same name and left 0-byte files. Now a result is written
/// beside its path and renamed over it only when complete.
#[test]
fn a_failed_run_keeps_the_earlier_result_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad_trace = dir.path().join("bad.txt");
    std::fs::write(&bad_trace, "this is not a trace line\n").unwrap();
    let json = dir.path().join("r.json");
    let html = dir.path().join("r.html");
    std::fs::write(&json, "{\"earlier\": true}\n").unwrap();
    std::fs::write(&html, "<p>earlier</p>\n").unwrap();
    let (j, h) = (json.to_str().unwrap(), html.to_str().unwrap());
    fails_with(&["replay", bad_trace.to_str().unwrap(), "--json", j, "--html", h], "bad.txt:1");
    assert_eq!(std::fs::read_to_string(&json).unwrap(), "{\"earlier\": true}\n");
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "<p>earlier</p>\n");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 3, "no temporary file is left behind: {names:?}");
}

/// Regression: an interrupted run (SIGINT, SIGTERM) left its output truncated to 0 bytes,
/// and then its hidden temporary file `.NAME.XXXXXX.part` beside the earlier result.
#[test]
fn an_interrupted_run_keeps_the_earlier_result() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("seeds.json");
        std::fs::write(&json, "earlier\n").unwrap();
        let mut child = pageblock()
            .args(["lab", "seeds", "--json", json.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let names = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        // The run is under way once its temporary file is there.
        let start = Instant::now();
        while !names().iter().any(|n| n.starts_with(".seeds.json.") && n.ends_with(".part")) {
            assert!(start.elapsed() < Duration::from_secs(60), "no temporary file: {:?}", names());
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        assert_eq!(child.wait().unwrap().code(), Some(code), "128 + signal {signal}");
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "earlier\n");
        assert_eq!(names(), ["seeds.json"], "no temporary file is left behind");
    }
}

/// A short `fragment` run's trace at `path` (compressed by its extension).
fn write_a_trace(path: &std::path::Path) {
    let out = pageblock()
        .args(["show", "buddyinfo", "--mem", "1G", "--workload", "fragment", "--ops", "20000"])
        .args(["--trace", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `show --trace t.zst` (or `.gz`) writes the trace compressed, as its name says, and the
/// project's own reader reads it back.
#[test]
fn show_trace_is_compressed_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("t.zst");
    write_a_trace(&zst);
    let raw = std::fs::read(&zst).unwrap();
    assert_eq!(&raw[..4], &[0x28, 0xb5, 0x2f, 0xfd], "a zstd frame");
    let text = String::from_utf8(zstd::decode_all(&raw[..]).unwrap()).unwrap();
    assert!(text.lines().any(|l| l.contains("mm_page_alloc:")), "kmem events inside");
    let stats = pageblock().args(["trace", "stats", zst.to_str().unwrap()]).output().unwrap();
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
}

/// Regression: `--mem 16` said "a node needs at least one zone", and flags that change
/// nothing were ignored silently: `--ops` without a workload, `--mem` beside `--zoneinfo`.
#[test]
fn a_size_too_small_and_flags_that_would_do_nothing_are_named() {
    fails_with(&["show", "buddyinfo", "--mem", "16"], "--mem is 16 bytes (a number without a unit is bytes");
    fails_with(&["show", "buddyinfo", "--mem", "16"], "a machine needs more than 1 MiB");
    fails_with(&["show", "buddyinfo", "--mem", "16", "--zones", "normal"], "at least one 4 KiB page");
    fails_with(
        &["show", "buddyinfo", "--mem", "1M"],
        "--mem is 1048576 bytes: a machine needs more than 1 MiB",
    );
    fails_with(&["show", "buddyinfo", "--ops", "5"], "--ops needs --workload");
    fails_with(
        &["lab", "thp", "--workload", "thpscale", "--jobs", "200"],
        "--jobs applies to kbuild-thp only",
    );
    let zero = pageblock().args(["lab", "thp", "--jobs", "0"]).output().unwrap();
    assert_eq!(zero.status.code(), Some(2), "--jobs 0 is a usage error");
    let zoneinfo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/inspect/zoneinfo");
    for flag in [["--mem", "8G"], ["--zones", "normal"], ["--cpus", "4"]] {
        let out =
            pageblock().args(["show", "buddyinfo", "--zoneinfo", zoneinfo]).args(flag).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?} beside --zoneinfo is a usage error: {err}");
        assert!(err.contains("cannot be used with") && err.contains(flag[0]), "{err}");
    }
    assert!(pageblock()
        .args(["show", "buddyinfo", "--zoneinfo", zoneinfo])
        .output()
        .unwrap()
        .status
        .success());
}

/// Regression: `replay` took `--policy` once per policy and `lab thp` a comma-separated
/// `--policies`; both now take either form, and repeated or comma-separated lists alike.
#[test]
fn policies_are_named_the_same_way_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.txt");
    write_a_trace(&trace);
    let trace = trace.to_str().unwrap();
    let same_output = |command: &[&str], forms: &[&[&str]]| {
        let outputs: Vec<String> = forms
            .iter()
            .map(|form| {
                let out = pageblock().args(command).args(*form).output().unwrap();
                assert!(out.status.success(), "{form:?}: {}", String::from_utf8_lossy(&out.stderr));
                // Speeds are wall clock; everything else is the same for the same policies.
                let text = String::from_utf8(out.stdout).unwrap();
                text.lines()
                    .filter(|l| !l.contains("per second") && !l.contains(" s end to end"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect();
        assert!(outputs[0].contains("vanilla") && outputs[0].contains("defrag_mode"), "{}", outputs[0]);
        for (form, o) in forms.iter().zip(&outputs) {
            let first = o.lines().zip(outputs[0].lines()).find(|(a, b)| a != b);
            assert!(*o == outputs[0], "{command:?} {form:?}: the same policies, the same output: {first:?}");
        }
    };
    let forms: [&[&str]; 4] = [
        &["--policy", "vanilla", "--policy", "defrag_mode"],
        &["--policy", "vanilla,defrag_mode"],
        &["--policies", "vanilla,defrag_mode"],
        &["--policies", "vanilla", "--policy", "defrag_mode"],
    ];
    same_output(&["replay", trace], &forms);
    same_output(&["lab", "thp", "--quick", "--runs", "1"], &forms);
}
