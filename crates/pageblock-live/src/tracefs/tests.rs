//! The tracefs module against a fake tracefs: a temporary directory with the kernel's file
//! names and contents (regular files keep what is written, so "restored" means the saved
//! value was written back).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// A fake of this machine's idle tracefs (Linux 6.18 after boot), two CPUs, in `tracefs/`
/// of a temporary directory whose `run/` holds the journal ([`journal`]).
fn fake() -> (tempfile::TempDir, Tracefs) {
    let dir = tempfile::tempdir().expect("temp dir");
    let fs = Tracefs::at(dir.path().join("tracefs"));
    let mut files: Vec<(String, &str)> = [
        ("tracing_on", "1\n"),
        ("buffer_size_kb", "7 (expanded: 1408)\n"),
        ("current_tracer", "nop\n"),
        ("trace_clock", "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n"),
        ("set_event", ""),
        ("set_event_pid", ""),
        ("set_event_notrace_pid", ""),
        ("trace", "# tracer: nop\n"),
        ("trace_pipe", ""),
        ("options/overwrite", "1\n"),
    ]
    .iter()
    .map(|(p, c)| ((*p).to_owned(), *c))
    .collect();
    for (option, default) in ["bin 0", "raw 0", "hex 0", "context-info 1", "irq-info 1", "record-tgid 0"]
        .iter()
        .map(|s| s.split_once(' ').unwrap())
    {
        files.push((format!("options/{option}"), if default == "1" { "1\n" } else { "0\n" }));
    }
    for event in ["kmem/mm_page_alloc", "kmem/mm_page_free", "compaction/mm_compaction_begin"] {
        files.push((format!("events/{event}/enable"), "0\n"));
        files.push((format!("events/{event}/filter"), "none\n"));
        files.push((format!("events/{event}/format"), "name: x\n"));
    }
    for system in ["kmem", "compaction"] {
        files.push((format!("events/{system}/enable"), "0\n"));
    }
    for cpu in 0..2 {
        files.push((format!("per_cpu/cpu{cpu}/buffer_size_kb"), "7\n"));
        files.push((format!("per_cpu/cpu{cpu}/stats"), "entries: 0\noverrun: 0\ndropped events: 0\n"));
    }
    for (rel, content) in files {
        let path = fs.path(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    (dir, fs)
}

/// Every file of the fake, trimmed, by relative path.
fn state(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read_to_string(&path).unwrap().trim().to_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

const EVENTS: [&str; 2] = ["kmem/mm_page_alloc", "compaction/mm_compaction_begin"];

/// The fake's journal: the well-known copy and the recording directory's.
fn journal(fs: &Tracefs) -> [PathBuf; 2] {
    let dir = fs.root().parent().unwrap();
    [dir.join("run/record.state"), dir.join("out/record.state")]
}

fn config<'a>(events: &'a [String], force: bool, journal: &'a [PathBuf]) -> SessionConfig<'a> {
    SessionConfig { events, buffer_size_kb: 65536, force, journal, mounted_here: false }
}

fn events() -> Vec<String> {
    EVENTS.iter().map(|e| (*e).to_owned()).collect()
}

#[test]
fn a_session_changes_what_it_needs_and_restores_it() {
    let (_dir, fs) = fake();
    let before = state(fs.root());
    let events = events();
    let mut session = Session::start(&fs, &config(&events, false, &journal(&fs))).expect("starts");
    let during = state(fs.root());
    assert_eq!(during["tracing_on"], "0", "tracing stays off until asked");
    assert_eq!(during["buffer_size_kb"], "65536");
    assert_eq!(during["events/kmem/mm_page_alloc/enable"], "1");
    assert_eq!(during["events/compaction/mm_compaction_begin/enable"], "1");
    assert_eq!(during["events/kmem/mm_page_free/enable"], "0", "only the asked events");
    assert_eq!(during["trace"], "", "the buffer is cleared");
    session.tracing_on().unwrap();
    assert_eq!(fs.read_trimmed("tracing_on").unwrap(), "1");
    session.restore().expect("restores");
    let mut after = state(fs.root());
    assert_eq!(after.remove("buffer_size_kb").as_deref(), Some("1408"), "the expanded size comes back");
    assert_eq!(after.remove("trace").as_deref(), Some(""), "the old buffer contents are gone");
    let mut expected = before;
    expected.remove("buffer_size_kb");
    expected.remove("trace");
    assert_eq!(after, expected, "everything else is as found");
    fs.write("tracing_on", "0").unwrap();
    session.restore().expect("a second restore is a no-op");
    assert_eq!(fs.read_trimmed("tracing_on").unwrap(), "0");
}

#[test]
fn unusual_settings_are_neutralised_and_written_back() {
    let (_dir, fs) = fake();
    let preset = [
        ("tracing_on", "0"),
        ("buffer_size_kb", "X"),
        ("per_cpu/cpu0/buffer_size_kb", "1024"),
        ("per_cpu/cpu1/buffer_size_kb", "2048"),
        ("trace_clock", "local [global] counter"),
        ("set_event_pid", "12\n345\n"),
        ("events/kmem/mm_page_alloc/filter", "order > 2"),
        ("events/kmem/mm_page_alloc/enable", "1"),
        ("options/irq-info", "0"),
        ("options/record-tgid", "1"),
    ];
    for (rel, value) in preset {
        fs.write(rel, value).unwrap();
    }
    let events = events();
    let mut session =
        Session::start(&fs, &config(&events, false, &journal(&fs))).expect("tracing is off: nobody traces");
    let during = state(fs.root());
    for (rel, want) in [
        ("trace_clock", "local"),
        ("set_event_pid", ""),
        ("events/kmem/mm_page_alloc/filter", "0"),
        ("options/irq-info", "1"),
        ("options/record-tgid", "0"),
        ("buffer_size_kb", "65536"),
    ] {
        assert_eq!(during[rel], want, "{rel} during the recording");
    }
    session.restore().unwrap();
    let after = state(fs.root());
    for (rel, want) in [
        ("tracing_on", "0"),
        ("per_cpu/cpu0/buffer_size_kb", "1024"),
        ("per_cpu/cpu1/buffer_size_kb", "2048"),
        ("trace_clock", "global"),
        ("set_event_pid", "12 345"),
        ("events/kmem/mm_page_alloc/filter", "order > 2"),
        ("events/kmem/mm_page_alloc/enable", "1"),
        ("options/irq-info", "0"),
        ("options/record-tgid", "1"),
    ] {
        assert_eq!(after[rel], want, "{rel} after restore");
    }
}

#[test]
fn dropping_the_session_restores_and_a_failed_start_undoes_itself() {
    let (_dir, fs) = fake();
    let before = state(fs.root());
    let events = events();
    drop(Session::start(&fs, &config(&events, false, &journal(&fs))).unwrap());
    let mut after = state(fs.root());
    after.insert("buffer_size_kb".into(), before["buffer_size_kb"].clone());
    after.insert("trace".into(), before["trace"].clone());
    assert_eq!(after, before, "drop restores");

    // The second event has a filter but no enable file: the start fails after enabling the
    // first event and resizing the buffer.
    std::fs::create_dir_all(fs.path("events/kmem/no_such_event")).unwrap();
    std::fs::write(fs.path("events/kmem/no_such_event/filter"), "none\n").unwrap();
    let broken = vec!["kmem/mm_page_alloc".to_owned(), "kmem/no_such_event".to_owned()];
    let err = Session::start(&fs, &config(&broken, false, &journal(&fs))).expect_err("no enable file");
    assert!(err.contains("no_such_event/enable"), "{err}");
    let after = state(fs.root());
    assert_eq!(after["tracing_on"], "1");
    assert_eq!(after["events/kmem/mm_page_alloc/enable"], "0");
    assert_eq!(after["buffer_size_kb"], "1408");
}

#[test]
fn someone_else_tracing_is_refused_unless_forced() {
    let (_dir, fs) = fake();
    fs.write("set_event", "kmem:mm_page_alloc\nsched:sched_switch\n").unwrap();
    let untouched = state(fs.root());
    let events = events();
    let err =
        Session::start(&fs, &config(&events, false, &journal(&fs))).expect_err("tracing on with events");
    assert!(
        err.contains("enabled events: kmem:mm_page_alloc, sched:sched_switch") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(state(fs.root()), untouched, "a refusal touches nothing");
    fs.write("tracing_on", "0").unwrap();
    drop(
        Session::start(&fs, &config(&events, false, &journal(&fs)))
            .expect("enabled but off: nobody is tracing"),
    );
    fs.write("tracing_on", "1").unwrap();
    fs.write("set_event", "").unwrap();
    fs.write("current_tracer", "function").unwrap();
    let err = Session::start(&fs, &config(&events, false, &journal(&fs))).expect_err("another tracer");
    assert!(err.contains("current_tracer is function"), "{err}");
    let mut session = Session::start(&fs, &config(&events, true, &journal(&fs))).expect("--force takes over");
    assert_eq!(fs.read_trimmed("current_tracer").unwrap(), "nop");
    session.restore().unwrap();
    assert_eq!(fs.read_trimmed("current_tracer").unwrap(), "function");
}

#[test]
fn a_recording_that_dies_is_named_and_restored_from_its_journal() {
    let (_dir, fs) = fake();
    let before = state(fs.root());
    let (events, copies) = (events(), journal(&fs));
    let mut session = Session::start(&fs, &config(&events, false, &copies)).unwrap();
    session.tracing_on().unwrap();
    let err = Session::start(&fs, &config(&events, true, &copies)).expect_err("one recording at a time");
    let me = std::process::id();
    assert!(err.contains(&format!("another pageblock record (pid {me}) is recording")), "{err}");
    // The recording dies: no restore, and its journal names a process that is gone.
    std::mem::forget(session);
    let during = state(fs.root());
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    for path in &copies {
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        json["owner"]["pid"] = dead.into();
        std::fs::write(path, json.to_string()).unwrap();
    }
    let err = Session::start(&fs, &config(&events, true, &copies)).expect_err("not even with --force");
    assert!(
        err.contains(&format!(
            "a pageblock record (pid {dead}, no longer running) left tracing on; run `pageblock record --restore`"
        )),
        "{err}"
    );
    assert_eq!(state(fs.root()), during, "a refusal touches nothing");
    let restored = restore_journal(&fs, &copies[1]).expect("restores from the directory's copy");
    assert_eq!(restored.owner.pid, dead);
    let mut after = state(fs.root());
    assert_eq!(after.remove("buffer_size_kb").as_deref(), Some("1408"), "the expanded size comes back");
    let mut expected = before;
    expected.remove("buffer_size_kb");
    after.remove("trace");
    expected.remove("trace");
    assert_eq!(after, expected, "every file is back");
    assert!(copies.iter().all(|p| !p.exists()), "both copies of the journal are gone");
    let err = restore_journal(&fs, &copies[0]).expect_err("nothing left to restore");
    assert!(err.contains("record.state"), "{err}");
    drop(Session::start(&fs, &config(&events, false, &copies)).expect("the next recording starts"));
    assert!(copies.iter().all(|p| !p.exists()), "a clean restore removes the journal");
}

#[test]
fn event_lists_resolve_against_the_events_tree() {
    let (_dir, fs) = fake();
    let set =
        resolve_events(&fs, "kmem:mm_page_alloc, compaction:*,mm_page_free,kmem,nosuch:x,mm_nope").unwrap();
    assert_eq!(set.events, ["kmem/mm_page_alloc", "compaction/mm_compaction_begin", "kmem/mm_page_free"]);
    assert_eq!(set.missing, ["nosuch:x", "mm_nope"]);
    assert_eq!(resolve_events(&fs, "kmem/mm_page_free").unwrap().events, ["kmem/mm_page_free"]);
}

#[test]
fn the_pipe_and_the_cpu_counters_read_like_the_kernel_files() {
    let (_dir, fs) = fake();
    fs.write("trace_pipe", "a line\n").unwrap();
    fs.write("per_cpu/cpu1/stats", "entries: 3\noverrun: 42\ndropped events: 1\n").unwrap();
    let mut pipe = TracePipe::open(&fs).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(pipe.read_available(&mut buf), Ok(7));
    assert_eq!(pipe.read_available(&mut buf), Ok(0), "empty reads 0 instead of blocking");
    let stats = cpu_stats(&fs).unwrap();
    assert_eq!(
        stats,
        [CpuStats { cpu: 0, overrun: 0, dropped: 0 }, CpuStats { cpu: 1, overrun: 42, dropped: 1 }]
    );
}
