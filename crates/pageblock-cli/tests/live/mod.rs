//! What the tests that run as root against the live kernel share: the machine-wide lock
//! they hold, tracefs's state read whole and compared, and the binary (or a copy an
//! unprivileged user can run).

// Each test binary that includes this uses part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const TRACING: &str = "/sys/kernel/tracing";

/// The machine-wide lock; `None` when the tests are explicitly skipped.
pub fn lock() -> Option<File> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("PAGEBLOCK_SKIP_RECORD_TEST").as_deref() == Ok("1") {
            eprintln!("SKIPPED: not root and PAGEBLOCK_SKIP_RECORD_TEST=1");
            return None;
        }
        panic!("pageblock record tests need root (CI runs as root); set PAGEBLOCK_SKIP_RECORD_TEST=1 to skip them");
    }
    let file = File::create(std::env::temp_dir().join("pageblock-record-tests.lock")).expect("lock file");
    // SAFETY: flock on a descriptor we own; it blocks until the lock is ours.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) }, 0);
    Some(file)
}

pub fn tracefs_mounted() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(TRACING) && l.split(' ').nth(2) == Some("tracefs"))
}

pub fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writes `values` into tracefs (mounting it for that if needed, and unmounting it again).
pub fn set_tracefs(values: &[(&str, &str)]) {
    let mounted = tracefs_mounted();
    if !mounted {
        run("mount", &["-t", "tracefs", "nodev", TRACING]);
    }
    for (rel, value) in values {
        std::fs::write(Path::new(TRACING).join(rel), value).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    if !mounted {
        run("umount", &[TRACING]);
    }
}

/// Every control file a recording may touch, trimmed; mounting tracefs to read it if needed
/// (and unmounting it again), so the reading changes nothing.
pub fn tracefs_state() -> (bool, BTreeMap<String, String>) {
    let mounted = tracefs_mounted();
    if !mounted {
        run("mount", &["-t", "tracefs", "nodev", TRACING]);
    }
    let root = Path::new(TRACING);
    let mut rels: Vec<String> = [
        "tracing_on",
        "buffer_size_kb",
        "current_tracer",
        "trace_clock",
        "set_event",
        "set_event_pid",
        "set_event_notrace_pid",
        "tracing_cpumask",
        "saved_cmdlines_size",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    rels.extend(names(&root.join("options")).into_iter().map(|o| format!("options/{o}")));
    for system in ["kmem", "compaction"] {
        for event in names(&root.join("events").join(system)) {
            for file in ["enable", "filter"] {
                let rel = format!("events/{system}/{event}/{file}");
                if root.join(&rel).is_file() {
                    rels.push(rel);
                }
            }
        }
    }
    for cpu in names(&root.join("per_cpu")) {
        rels.push(format!("per_cpu/{cpu}/buffer_size_kb"));
    }
    let state = rels
        .into_iter()
        .map(|rel| {
            let text = std::fs::read_to_string(root.join(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text.trim().to_owned())
        })
        .collect();
    if !mounted {
        run("umount", &[TRACING]);
    }
    (mounted, state)
}

/// Asserts that tracefs is as `before` found it. The one tolerated difference: a boot-time
/// buffer that was never expanded (`7 (expanded: 1408)`) comes back expanded, which reads
/// 1408 rounded up to whole sub-buffers.
pub fn assert_restored(before: &(bool, BTreeMap<String, String>)) {
    let (was_mounted, before) = before;
    let (mounted, mut after) = tracefs_state();
    assert_eq!(mounted, *was_mounted, "tracefs mounted after exactly when it was before");
    let mut before = before.clone();
    if let Some((_, expanded)) = before["buffer_size_kb"].split_once("(expanded: ") {
        let expanded: u64 = expanded.trim_end_matches(')').parse().unwrap();
        let now: u64 = after["buffer_size_kb"].parse().expect("expanded now");
        assert!(
            (expanded..expanded + 4).contains(&now),
            "unexpanded buffer restored as {now}, not ~{expanded}"
        );
        before.retain(|k, _| !k.starts_with("per_cpu/") && k != "buffer_size_kb");
        after.retain(|k, _| !k.starts_with("per_cpu/") && k != "buffer_size_kb");
    }
    let differ: Vec<String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {v:?} -> {:?}", after.get(k)))
        .collect();
    assert!(differ.is_empty(), "tracefs not restored:\n{}", differ.join("\n"));
    assert_eq!(before.len(), after.len());
}

pub fn pageblock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pageblock"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The test binary may sit under a directory only root can enter; an unprivileged user
/// runs a copy in a world-readable directory.
pub fn public_copy_of_the_binary(tmp: &Path) -> PathBuf {
    let dir = tmp.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("pageblock");
    if !copy.exists() {
        std::fs::copy(env!("CARGO_BIN_EXE_pageblock"), &copy).unwrap();
    }
    for p in [tmp, dir.as_path(), copy.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    copy
}
