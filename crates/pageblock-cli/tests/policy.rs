//! `--policy NAME`, one way on every command that simulates: `show` and `demo` run the named
//! policy (the sysctl flags change it), `lab seeds` switches each seed's knob on it, `replay`
//! and `lab thp` compare several, and an unknown name is refused everywhere with the names
//! there are.

mod common;
use common::{pageblock, stdout_of};

/// `show counters` of a short `fragment` run on 512 MiB, with `extra` arguments.
fn counters(extra: &[&str]) -> String {
    let mut args = vec!["show", "counters", "--mem", "512M", "--workload", "fragment", "--ops", "300000"];
    args.extend_from_slice(extra);
    stdout_of(&args)
}

fn counter(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.split(' ').next() == Some(name)).expect(name);
    line.split(' ').nth(1).and_then(|v| v.parse().ok()).expect("a number")
}

#[test]
fn show_runs_the_named_policy_as_its_flag_does() {
    let vanilla = counters(&[]);
    let named = counters(&["--policy", "defrag_mode"]);
    assert_eq!(named, counters(&["--defrag-mode"]), "--policy defrag_mode is --defrag-mode");
    assert_eq!(vanilla, counters(&["--policy", "vanilla"]), "vanilla is the default");
    let fragmenting = |text: &str| counter(text, "pgalloc_extfrag_fragmenting");
    assert!(
        fragmenting(&named) < fragmenting(&vanilla),
        "defrag_mode fragments fewer pageblocks: {} against vanilla's {}",
        fragmenting(&named),
        fragmenting(&vanilla)
    );
    let seed003_off = counters(&["--policy", "no_rmqueue_mode_memory"]);
    assert_eq!(seed003_off, counters(&["--no-rmqueue-mode-memory"]));
}

#[test]
fn the_demo_names_its_policy_and_whether_flags_changed_it() {
    let header = |extra: &[&str]| {
        let mut args = vec!["demo", "--mem", "1G", "--ops", "1000"];
        args.extend_from_slice(extra);
        stdout_of(&args).lines().next().expect("a header").to_owned()
    };
    assert!(header(&[]).contains(", policy `vanilla`, "), "{}", header(&[]));
    assert!(header(&["--policy", "pageblock"]).contains(", policy `pageblock`, "));
    let changed = header(&["--policy", "pageblock", "--watermark-scale-factor", "30"]);
    assert!(changed.contains("policy `pageblock` changed by its flags"), "{changed}");
}

#[test]
fn a_single_run_refuses_two_policies() {
    for cmd in [
        &["show", "buddyinfo"][..],
        &["demo", "--mem", "1G", "--ops", "1000"],
        &["lab", "seeds", "--only", "3"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--policy", "vanilla", "--policy", "defrag_mode"]);
        let out = pageblock(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("runs one policy, not 2 (vanilla, defrag_mode)"), "{args:?}: {err}");
    }
}

#[test]
fn every_command_that_simulates_refuses_an_unknown_policy_with_the_known_names() {
    let commands: [&[&str]; 5] = [
        &["show", "buddyinfo", "--policy", "nope"],
        &["demo", "--policy", "vanilla,nope"],
        &["replay", "no-such-trace", "--policy", "nope"],
        &["lab", "thp", "--quick", "--policy", "nope"],
        &["lab", "seeds", "--quick", "--policy", "nope"],
    ];
    for args in commands {
        let out = pageblock(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown policy `nope`; known: vanilla, defrag_mode, "), "{args:?}: {err}");
    }
}

/// `lab seeds` builds its fragmented zone under the named policy: defrag_mode leaves the free
/// lists in another state, so walking them for /proc/pagetypeinfo costs other work.
#[test]
fn lab_seeds_switches_each_knob_on_the_named_policy() {
    let work_after_fragment = |policy: &str| {
        let text = stdout_of(&["lab", "seeds", "--quick", "--only", "0", "--policy", policy]);
        assert!(text.starts_with(&format!("lab seeds on policy `{policy}`\n")), "{text}");
        let line = text.lines().find(|l| l.starts_with("Work  after-fragment-units")).expect("the work row");
        line.split_whitespace().nth(2).and_then(|v| v.parse::<f64>().ok()).expect("a figure")
    };
    assert_ne!(work_after_fragment("vanilla"), work_after_fragment("defrag_mode"));
}
