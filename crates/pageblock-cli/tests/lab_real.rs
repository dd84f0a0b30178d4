//! `pageblock lab real` for real, as root on this machine: a short session of two settings,
//! a Ctrl-C in the middle of one, a harness killed outright and put right by `--restore`,
//! and the refusals. Each test reads every vm sysctl, every THP setting, the swap list and
//! tracefs's state before and after, and they must be the same.
//!
//! The tests hold the machine-wide lock of the `record` tests (the harness records through
//! tracefs). Without root they fail, unless `PAGEBLOCK_SKIP_RECORD_TEST=1` says to skip them.

mod live;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Stdio};

use live::{assert_restored, lock, pageblock, public_copy_of_the_binary, stderr, tracefs_state};

const JOURNAL: &str = "/run/pageblock/real.state";
const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// Every readable vm sysctl, every THP setting (not the counters) and `/proc/swaps`.
fn kernel_settings() -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let read_dir = |dir: &Path, depth: u32, all: &mut BTreeMap<String, String>| {
        fn walk(dir: &Path, depth: u32, all: &mut BTreeMap<String, String>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    if depth > 0 && e.file_name() != "stats" {
                        walk(&p, depth - 1, all);
                    }
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    all.insert(p.display().to_string(), text);
                }
            }
        }
        walk(dir, depth, all);
    };
    read_dir(Path::new("/proc/sys/vm"), 0, &mut all);
    read_dir(Path::new(THP), 2, &mut all);
    // Written by the harness, read back as 0 whatever was written: not a setting. And
    // khugepaged's two counters, which move by themselves.
    all.remove("/proc/sys/vm/drop_caches");
    all.retain(|k, _| !k.ends_with("khugepaged/full_scans") && !k.ends_with("khugepaged/pages_collapsed"));
    all.insert("/proc/swaps".into(), std::fs::read_to_string("/proc/swaps").unwrap());
    all
}

fn assert_same(before: &BTreeMap<String, String>) {
    let after = kernel_settings();
    let differ: Vec<String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {v:?} -> {:?}", after.get(k)))
        .collect();
    assert!(differ.is_empty(), "settings not put back:\n{}", differ.join("\n"));
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

/// The selected word of a THP choice file.
fn selected(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split('[').nth(1).and_then(|s| s.split(']').next()).unwrap().to_owned()
}

/// A THP `defrag` value other than the current one, and a watermark_scale_factor too, so
/// that the session changes both.
fn other_settings() -> (String, String) {
    let defrag = if selected(&format!("{THP}/defrag")) == "defer" { "never" } else { "defer" };
    let wsf: u32 =
        std::fs::read_to_string("/proc/sys/vm/watermark_scale_factor").unwrap().trim().parse().unwrap();
    (defrag.to_owned(), format!("vm.watermark_scale_factor={}", if wsf == 11 { 12 } else { 11 }))
}

/// A short session: THP bursts of 8 MiB for `seconds`, no build.
fn session(out: &Path, seconds: u32, extra: &[&str]) -> std::process::Command {
    let (defrag, wsf) = other_settings();
    let mut cmd = pageblock();
    cmd.args(["lab", "real", "-o", out.to_str().unwrap(), "--workload", "bursts", "--bursts", "8M"])
        .args(["--bursts-period-ms", "100", "--thp", "always", "--thp-defrag", &defrag])
        .args(["--sysctl", &wsf, "--buffer-size-kb", "1024", "--duration", &seconds.to_string()])
        .args(extra);
    cmd
}

/// Puts everything back however a test ends.
struct PutBack(Option<Child>);

impl Drop for PutBack {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
        }
        if Path::new("/run/pageblock/record.state").exists() {
            let _ = pageblock().args(["record", "--restore"]).status();
        }
        if Path::new(JOURNAL).exists() {
            let _ = pageblock().args(["lab", "real", "--restore"]).status();
        }
    }
}

/// Starts `cmd` in a process group of its own and waits until it records.
fn start_recording(
    mut cmd: std::process::Command,
    put_back: &mut PutBack,
) -> BufReader<std::process::ChildStderr> {
    let child =
        put_back.0.insert(cmd.process_group(0).stderr(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap());
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("until COMMAND pid") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended before recording: {seen}");
        seen.push_str(&line);
    }
    err
}

#[test]
fn a_session_runs_every_setting_and_puts_every_setting_back() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (settings, tracefs) = (kernel_settings(), tracefs_state());
    let out = tmp.path().join("real");
    let (defrag, _) = other_settings();
    // A small hog: it leaves all but about 1 GiB of what is available now (each run measures
    // again after dropping caches, so its size varies; the margin covers other processes
    // growing meanwhile: with 256 MiB, replays running beside CI left no hog at all).
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let avail_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    let available = format!("{}M", (avail_kb >> 10) - 1024);
    let ran = session(&out, 1, &["--defrag-mode", "0,1", "--runs", "1", "--available", &available])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", stderr(&ran));
    // One warm-up run of the first setting, before the recorded ones and not among them.
    let log = stderr(&ran);
    let warm = log.find("warm-up 1 of 1 under dm0-always").expect(&log);
    assert!(warm < log.find("run 1 of 1").expect(&log), "{log}");
    assert_same(&settings);
    assert_restored(&tracefs);
    let table = String::from_utf8(ran.stdout).unwrap();
    let (dm0, dm1) = (format!("dm0-always-{defrag}"), format!("dm1-always-{defrag}"));
    assert!(table.contains(&dm0) && table.contains(&dm1), "{table}");
    let mut hogs = Vec::new();
    for setting in [&dm0, &dm1] {
        let run = out.join(setting).join("run1");
        for file in [
            "trace.txt.zst",
            "before.vmstat",
            "after.pagetypeinfo",
            "vmstat-delta.txt",
            "mthp.after",
            "run.json",
            "thp.defrag",
        ] {
            assert!(run.join(file).is_file(), "{setting}: {file}");
        }
        // The THP settings as the run had them, for replay's what-ifs to start from.
        let enabled = std::fs::read_to_string(run.join("thp.enabled")).unwrap();
        assert!(enabled.contains("[always]"), "{setting}: {enabled}");
        // And the sysctl, for replay's fidelity table to compare the kernel's own policy.
        let defrag_mode = std::fs::read_to_string(run.join("vm.defrag_mode")).unwrap();
        assert_eq!(format!("dm{}", defrag_mode.trim()), setting[..3], "{setting}");
        let delta = std::fs::read_to_string(run.join("vmstat-delta.txt")).unwrap();
        let faults: u64 =
            delta.lines().find_map(|l| l.strip_prefix("thp_fault_alloc=")).unwrap().parse().unwrap();
        assert!(faults >= 4, "8 MiB bursts under THP always fault huge pages: {faults}");
        let run_json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
        hogs.push(run_json["hog_mib"].as_u64().unwrap());
        // The session sized the ring buffers before its first hog: no run's recording
        // allocated them on a machine the hog had filled.
        // (The kernel rounds the size up to whole buffer pages.)
        let ring = run_json["ring_buffer_kb"].as_u64().unwrap();
        assert!(
            (1024..=1024 * 101 / 100).contains(&ring),
            "{setting}: ring buffer {ring} KiB when the run began"
        );
        // The zones read during the run, in the trace's clock.
        let samples = std::fs::read_to_string(run.join("buddyinfo.samples")).unwrap();
        let samples = pageblock_formats::samples::BuddyInfoSamples::parse(&samples).unwrap();
        assert!(samples.samples.len() >= 2, "{setting}: {} buddyinfo samples", samples.samples.len());
        let types = std::fs::read_to_string(run.join("pagetypeinfo.samples")).unwrap();
        let types = pageblock_formats::samples::PageTypeInfoSamples::parse(&types).unwrap();
        assert!(!types.samples.is_empty(), "{setting}: pagetypeinfo read at the start at least");
        let stats = pageblock().args(["trace", "stats", run.to_str().unwrap()]).output().unwrap();
        assert!(stats.status.success(), "trace stats reads the run: {}", stderr(&stats));
    }
    assert!(hogs.iter().any(|&h| h > 0), "a hog held memory: {hogs:?} MiB");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"].as_array().unwrap().len(), 2);
    assert_eq!(std::fs::read_to_string(out.join("summary.txt")).unwrap(), table);
}

#[test]
fn ctrl_c_ends_the_session_and_puts_every_setting_back() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (settings, tracefs) = (kernel_settings(), tracefs_state());
    let out = tmp.path().join("real");
    let mut put_back = PutBack(None);
    let mut err = start_recording(
        session(&out, 60, &["--defrag-mode", "1", "--runs", "3", "--available", "none", "--warmup", "0"]),
        &mut put_back,
    );
    assert_eq!(std::fs::read_to_string("/proc/sys/vm/defrag_mode").unwrap().trim(), "1", "set while running");
    assert!(Path::new(JOURNAL).is_file());
    let mut child = put_back.0.take().unwrap();
    // What a terminal's Ctrl-C does: SIGINT to the whole foreground group.
    // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("was cut short"), "{rest}");
    assert_same(&settings);
    assert_restored(&tracefs);
    assert!(
        out.join("dm1-always-defer").exists() || out.join("dm1-always-never").exists(),
        "the cut run stays on disk"
    );
    assert!(!out.join("summary.txt").exists(), "no complete run, no table");
}

#[test]
fn a_killed_session_is_refused_until_restore_puts_every_setting_back() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (settings, tracefs) = (kernel_settings(), tracefs_state());
    let out = tmp.path().join("real");
    let mut put_back = PutBack(None);
    let _err = start_recording(
        session(&out, 60, &["--defrag-mode", "1", "--runs", "1", "--available", "none", "--warmup", "0"]),
        &mut put_back,
    );
    let pid = put_back.0.as_ref().unwrap().id();
    // SAFETY: kill has no memory-safety preconditions. The harness alone: SIGKILL.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let _ = put_back.0.as_mut().unwrap().wait();
    assert_ne!(kernel_settings(), settings, "the killed harness left its settings");
    let again = session(&tmp.path().join("again"), 1, &["--available", "none"]).output().unwrap();
    let why = stderr(&again);
    assert_eq!(again.status.code(), Some(1), "{why}");
    assert!(
        why.contains(&format!("pid {pid}, no longer running")) && why.contains("lab real --restore"),
        "{why}"
    );
    let record = pageblock().args(["record", "--restore"]).output().unwrap();
    assert!(record.status.success(), "{}", stderr(&record));
    let restored = pageblock().args(["lab", "real", "--restore", out.to_str().unwrap()]).output().unwrap();
    assert!(restored.status.success(), "{}", stderr(&restored));
    assert!(stderr(&restored).contains("restored"), "{}", stderr(&restored));
    // The group's load worker, orphaned, ends at its duration; kill it now.
    drop(put_back);
    assert_same(&settings);
    assert_restored(&tracefs);
}

#[test]
fn the_hog_holds_its_memory_mlocked_until_stdin_closes() {
    let mut hog = pageblock()
        .args(["lab", "real-worker", "hog", "--mib", "16"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(hog.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let status = std::fs::read_to_string(format!("/proc/{}/status", hog.id())).unwrap();
    let locked_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    assert_eq!(locked_kb, 16 << 10, "{status}");
    drop(hog.stdin.take());
    assert!(hog.wait().unwrap().success());
}

#[test]
fn refusals_come_before_anything_is_touched() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let settings = kernel_settings();
    let new = tmp.path().join("new");
    let refused = |args: &[&str], uid: Option<u32>, why: &str| {
        let mut cmd = if uid.is_some() {
            std::process::Command::new(public_copy_of_the_binary(tmp.path()))
        } else {
            pageblock()
        };
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        let out = cmd.args(["lab", "real", "-o", new.to_str().unwrap()]).args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?} must say `{why}`: {err}");
    };
    refused(&["--available", "none"], Some(65534), "lab real needs root");
    refused(&["--workload", "build,nap"], None, "unknown part `nap`");
    refused(&["--sysctl", "swappiness"], None, "expected NAME=VALUE");
    refused(&["--sysctl", "vm.no_such_knob=1"], None, "this kernel has no vm.no_such_knob");
    refused(&["--defrag-mode", "2"], None, "--defrag-mode: `2`");
    refused(&["--thp-defrag", "sometimes"], None, "--thp-defrag: `sometimes`");
    refused(&["--build-tree", tmp.path().to_str().unwrap()], None, "no Makefile");
    refused(&["--workload", "bursts", "--build-jobs", "2"], None, "need `build` in --workload");
    assert!(!new.exists(), "no directory made");
    let nothing =
        pageblock().args(["lab", "real", "--restore", tmp.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(nothing.status.code(), Some(1));
    assert!(stderr(&nothing).contains("no journal, nothing to restore"), "{}", stderr(&nothing));
    assert_same(&settings);
}
