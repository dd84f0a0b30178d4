//! `pageblock record` for real, as root on this machine: a recording of a command that
//! allocates pages, a Ctrl-C in the middle of one, and the refusals that must come before
//! anything is touched. Each test compares the whole tracefs state it cares about before
//! and after, and whether tracefs is mounted.
//!
//! tracefs is global to the machine, so every test holds an exclusive `flock` (which also
//! keeps out the same tests of another checkout running at the same time). Without root
//! the tests fail, unless `PAGEBLOCK_SKIP_RECORD_TEST=1` says to skip them.

mod live;

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use live::{assert_restored, lock, pageblock, public_copy_of_the_binary, set_tracefs, stderr, tracefs_state};

use pageblock_formats::ftrace::LineRef;
use pageblock_formats::kmem::KmemEvent;

/// What a recording holds on a kernel with THP and swap support (this machine's).
const RECORDING_FILES: [&str; 14] = [
    "after.buddyinfo",
    "after.pagetypeinfo",
    "after.swaps",
    "after.vmstat",
    "after.zoneinfo",
    "before.buddyinfo",
    "before.pagetypeinfo",
    "before.swaps",
    "before.vmstat",
    "before.zoneinfo",
    "thp.defrag",
    "thp.enabled",
    "trace.txt.zst",
    "vm.defrag_mode",
];

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The trace decompressed (a truncated or unfinished zstd frame fails here).
fn trace_text(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("trace.txt.zst")).unwrap();
    String::from_utf8(zstd::decode_all(&bytes[..]).expect("a complete zstd frame")).expect("utf-8 text")
}

/// Every line is an ftrace event line (or a lost-events marker); pages allocated by `comm`.
/// Events and pages allocated in `text`; pass `None` to count every task (ftrace resolves
/// comms from a 128-entry cache, so under process churn a short-lived task prints as
/// `<...>`: a test must not depend on it).
fn pages_allocated_by(text: &str, comm: Option<&str>) -> (u64, u64) {
    let (mut events, mut pages) = (0, 0);
    for line in text.lines() {
        let ev = match LineRef::parse(line).unwrap_or_else(|e| panic!("{e}: {line}")) {
            LineRef::Event(ev) => ev,
            LineRef::Lost { .. } => continue,
            LineRef::Comment(_) => panic!("a comment in trace_pipe output: {line}"),
        };
        events += 1;
        if let (Ok(KmemEvent::PageAlloc(a)), true) = (ev.kmem(), comm.is_none_or(|c| ev.comm == c)) {
            pages += 1 << a.order;
        }
    }
    (events, pages)
}

/// The snapshots parse with our parsers, re-render byte for byte, and list the same zones
/// and counters as the live files.
fn assert_snapshots_look_like_proc(dir: &Path) {
    use pageblock_formats::{buddyinfo::BuddyInfo, vmstat::VmStat, zoneinfo::ZoneInfo};
    let live_zones: Vec<(u32, String)> =
        BuddyInfo::parse(&std::fs::read_to_string("/proc/buddyinfo").unwrap())
            .unwrap()
            .zones
            .into_iter()
            .map(|z| (z.node, z.zone))
            .collect();
    let live_vmstat = VmStat::parse(&std::fs::read_to_string("/proc/vmstat").unwrap()).unwrap();
    for prefix in ["before", "after"] {
        let read = |name: &str| std::fs::read_to_string(dir.join(format!("{prefix}.{name}"))).unwrap();
        let buddy = BuddyInfo::parse(&read("buddyinfo")).expect("buddyinfo");
        assert_eq!(buddy.render(), read("buddyinfo"));
        let zones: Vec<(u32, String)> = buddy.zones.iter().map(|z| (z.node, z.zone.clone())).collect();
        assert_eq!(zones, live_zones);
        let vmstat = VmStat::parse(&read("vmstat")).expect("vmstat");
        let names = |v: &VmStat| v.items.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&vmstat), names(&live_vmstat));
        let zoneinfo = ZoneInfo::parse(&read("zoneinfo")).expect("zoneinfo");
        assert!(zoneinfo.zone(0, "Normal").is_some(), "{prefix}.zoneinfo has Node 0 Normal");
        let pti = pageblock_formats::pagetypeinfo::PageTypeInfo::parse(&read("pagetypeinfo"))
            .expect("pagetypeinfo");
        assert_eq!(pti.nodes[0].pageblock_order, 9);
    }
}

#[test]
fn records_a_command_that_allocates_pages_and_restores_tracefs() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rec");
    let file = tmp.path().join("dd.bin");
    let script =
        format!("dd if=/dev/zero of={} bs=1M count=64 conv=fsync status=none; rm {0}", file.display());
    let before = tracefs_state();
    let result = pageblock()
        .args(["record", "-o", out.to_str().unwrap(), "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(0), "{err}");
    assert_restored(&before);
    assert_eq!(files_in(&out), RECORDING_FILES);
    let text = trace_text(&out);
    let (events, pages) = pages_allocated_by(&text, None);
    assert!(text.contains(": mm_page_alloc: page="), "mm_page_alloc events in the trace");
    assert!(pages >= 16384, "dd's 64 MiB of page cache is in the trace: {pages} pages\n{err}");
    assert!(err.contains(&format!(": {events} events,")), "the report counts every line: {events}\n{err}");
    assert!(err.contains("  mm_page_alloc\n") && err.contains("lost events: "), "{err}");
    assert_snapshots_look_like_proc(&out);
}

/// `pageblock record -o OUT EXTRA -- sleep 5`, its stderr piped.
fn record_sleep(out: &Path, extra: &[&str]) -> std::process::Child {
    pageblock()
        .args(["record", "-o", out.to_str().unwrap()])
        .args(extra)
        .args(["--", "sleep", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (no clock) until the recorder says the command runs: then tracing is on. Returns
/// its stderr and what it said so far.
fn wait_until_recording(child: &mut std::process::Child) -> (BufReader<std::process::ChildStderr>, String) {
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("until COMMAND pid") {
        let mut line = String::new();
        assert_ne!(err.read_line(&mut line).unwrap(), 0, "the recorder ended before starting:\n{seen}");
        seen += &line;
    }
    (err, seen)
}

#[test]
fn ctrl_c_restores_tracefs_finishes_the_file_and_exits_130() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rec");
    let before = tracefs_state();
    let mut child = record_sleep(&out, &[]);
    let (mut err, mut seen) = wait_until_recording(&mut child);
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill has no memory-safety preconditions; `pid` is our unreaped child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    err.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(seen.contains("`sleep 5` was killed by SIGINT"), "the signal reached the command:\n{seen}");
    assert_restored(&before);
    assert_eq!(files_in(&out), RECORDING_FILES);
    // Every line of the finished file parses.
    pages_allocated_by(&trace_text(&out), None);
}

#[test]
fn refusals_come_before_anything_is_touched() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let before = tracefs_state();
    let new = tmp.path().join("new");
    let fails_with = |code: i32, args: &[&str], uid: Option<u32>, why: &str| -> String {
        let mut cmd =
            if uid.is_some() { Command::new(public_copy_of_the_binary(tmp.path())) } else { pageblock() };
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        let out = cmd.args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?} must say `{why}`: {err}");
        err
    };
    let refused = |args: &[&str], uid: Option<u32>, why: &str| {
        let err = fails_with(1, args, uid, why);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    };
    refused(&["record", "-o", new.to_str().unwrap()], None, "no COMMAND given");
    refused(&["record", "-o", new.to_str().unwrap(), "--"], None, "no COMMAND given");
    refused(&["record", "-o", new.to_str().unwrap(), "--", "true"], Some(65534), "record needs root");
    assert!(!new.exists(), "no directory made");
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep"), "x").unwrap();
    refused(&["record", "-o", full.to_str().unwrap(), "--", "true"], None, "exists and is not empty");
    assert_eq!(files_in(&full), ["keep"]);
    assert_restored(&before);
    refused(&["record", "--restore", tmp.path().to_str().unwrap()], None, "no journal, nothing to restore");
    // A command that cannot start is found out after tracefs was set up: restored, and no
    // half recording is left to block the next try. The exit codes are a shell's.
    fails_with(127, &["record", "-o", new.to_str().unwrap(), "--", "/nonexistent/cmd"], None, "cannot run");
    assert!(!new.exists(), "the directory made for it is gone again");
    assert_restored(&before);
    let script = tmp.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_with(
        126,
        &["record", "-o", new.to_str().unwrap(), "--", script.to_str().unwrap()],
        None,
        "cannot run",
    );
    assert!(!new.exists());
    assert_restored(&before);
}

/// The well-known journal of a recording.
const JOURNAL: &str = "/run/pageblock/record.state";

/// Puts tracefs back however the test ends: kills the recorder and its command if still
/// there, restores what the killed recording left from its journal, then writes `values`
/// back.
struct PutBack {
    values: Vec<(&'static str, String)>,
    recorder: Option<std::process::Child>,
    command: Option<libc::pid_t>,
}

impl Drop for PutBack {
    fn drop(&mut self) {
        if let Some(mut recorder) = self.recorder.take() {
            let _ = recorder.kill();
            let _ = recorder.wait();
        }
        if let Some(pid) = self.command {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if Path::new(JOURNAL).exists() {
            let _ = pageblock().args(["record", "--restore"]).status();
        }
        let values: Vec<(&str, &str)> = self.values.iter().map(|(r, v)| (*r, v.as_str())).collect();
        set_tracefs(&values);
    }
}

#[test]
fn a_killed_recording_is_named_and_restore_puts_tracefs_back() {
    let Some(_lock) = lock() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rec");
    let (_, found) = tracefs_state();
    let clock = found["trace_clock"].split('[').nth(1).and_then(|c| c.split(']').next()).unwrap().to_owned();
    let mut put_back = PutBack {
        values: vec![("trace_clock", clock), ("tracing_on", found["tracing_on"].clone())],
        recorder: None,
        command: None,
    };
    // A state the recording changes in all three files (the buffer expanded, as any
    // recording leaves it, so that it reads back exactly).
    let expanded =
        found["buffer_size_kb"].split("expanded: ").nth(1).map(|e| e.trim_end_matches(')').to_owned());
    let buffer = expanded.unwrap_or_else(|| found["buffer_size_kb"].clone());
    set_tracefs(&[("tracing_on", "0"), ("trace_clock", "global"), ("buffer_size_kb", &buffer)]);
    let before = tracefs_state();
    let recorder = put_back.recorder.insert(record_sleep(&out, &["--buffer-size-kb", "2048"]));
    let (_, seen) = wait_until_recording(recorder);
    let after_pid = seen.split("until COMMAND pid ").nth(1).unwrap();
    put_back.command = Some(after_pid.split_whitespace().next().unwrap().parse().unwrap());
    let pid = recorder.id();
    recorder.kill().unwrap();
    recorder.wait().unwrap();
    let (_, during) = tracefs_state();
    for rel in ["tracing_on", "buffer_size_kb", "trace_clock"] {
        assert_ne!(during[rel], before.1[rel], "{rel}: the recording changed it and died");
    }
    assert!(Path::new(JOURNAL).is_file() && out.join("record.state").is_file(), "both journals are there");
    let next = tmp.path().join("next");
    let refused = pageblock().args(["record", "-o", next.to_str().unwrap(), "--", "true"]).output().unwrap();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("a pageblock record (pid {pid}, no longer running) left tracing on"))
            && err.contains("run `pageblock record --restore`"),
        "the refusal names the dead recording: {err}"
    );
    let restored = pageblock().args(["record", "--restore"]).output().unwrap();
    assert_eq!(restored.status.code(), Some(0), "{}", stderr(&restored));
    let after = tracefs_state();
    for rel in ["tracing_on", "buffer_size_kb", "trace_clock"] {
        assert_eq!(after.1[rel], before.1[rel], "{rel} restored exactly");
    }
    assert_restored(&before);
    assert!(!Path::new(JOURNAL).exists() && !out.join("record.state").exists(), "the journals are gone");
}
