//! `replay`'s what-if knobs: another THP setting (`--thp-enabled`, `--thp-defrag`), a
//! smaller machine (`--mem`), another machine (`--zoneinfo`).

mod common;

use std::path::{Path, PathBuf};

use common::Trace;
use pageblock_core::named_policy::policy_named;
use pageblock_core::thp::{ThpDefrag, ThpEnabled};
use pageblock_formats::gfp::Gfp;
use pageblock_lab::replay::{self, Options, ReplayReport};

/// A madvised fault's first attempt under `defrag=madvise`.
const MADVISED_FIRST: Gfp = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
/// A fault outside madvised ranges under `enabled=always`, `defrag=madvise`.
const PLAIN_FIRST: Gfp = Gfp(Gfp::TRANSHUGE_LIGHT.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);

/// Two madvised faults and one outside madvised ranges, each served at once; the second
/// madvised one's first attempt failed in the kernel and its retry was served. Recorded
/// under `lab real`'s `dm0-always-madvise`.
fn faults(name: &str) -> PathBuf {
    let base = 0x100000u64;
    let mut t = Trace::default();
    t.alloc(0, Some(base), 9, MADVISED_FIRST);
    t.alloc(0, None, 9, MADVISED_FIRST).alloc(0, Some(base + 512), 9, Gfp::TRANSHUGE);
    t.alloc(1, Some(base + 1024), 9, PLAIN_FIRST);
    t.alloc(1, Some(base + 2048), 0, Gfp::KERNEL);
    let path = t.write(name);
    write_run_json(path.parent().unwrap(), "dm0-always-madvise");
    path
}

fn write_run_json(dir: &Path, setting: &str) {
    std::fs::write(dir.join("run.json"), format!(r#"{{"setting": "{setting}", "run": 1}}"#)).unwrap();
}

fn replay(path: &Path, options: Options) -> Result<ReplayReport, String> {
    replay::run(path, &[policy_named("vanilla").unwrap()], options, &mut |_| {})
}

fn thp(enabled: Option<ThpEnabled>, defrag: Option<ThpDefrag>) -> Options {
    Options { thp_enabled: enabled, thp_defrag: defrag, ..Options::default() }
}

#[test]
fn thp_enabled_never_maps_every_fault_in_base_pages() {
    let path = faults("thp-never");
    let as_recorded = replay(&path, Options::default()).unwrap();
    let p = &as_recorded.policies[0];
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (3, 0));
    assert!(as_recorded.thp.is_none());

    let never = replay(&path, thp(Some(ThpEnabled::Never), None)).unwrap();
    let p = &never.policies[0];
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (0, 0), "no huge page fault");
    let w = p.divergence.thp_what_if;
    assert_eq!((w.as_base_pages, w.dropped), (3, 1), "three served attempts, one the kernel failed");
    assert_eq!(
        p.events.mm_page_alloc,
        3 * 512 + 1,
        "each huge page as its base pages, and the kernel's page"
    );
    assert_eq!(p.divergence.huge.requests, 0, "no huge page was asked for");
    let side = never.thp.as_ref().unwrap();
    assert_eq!((side.recorded.as_str(), side.replayed.as_str()), ("always/madvise", "never/madvise"));
    let text = never.render();
    assert!(text.contains("THP: what if never/madvise (recorded under always/madvise)"), "{text}");
    assert!(text.contains("huge page attempts made base pages"), "{text}");
    assert!(!as_recorded.render().contains("huge page attempts made base pages"));
}

#[test]
fn thp_enabled_madvise_keeps_only_the_madvised_faults() {
    let path = faults("thp-madvise");
    let p = &replay(&path, thp(Some(ThpEnabled::Madvise), None)).unwrap().policies[0];
    assert_eq!((p.vmstat["thp_fault_alloc"], p.vmstat["thp_fault_fallback"]), (2, 0));
    assert_eq!(p.divergence.thp_what_if.as_base_pages, 1, "the fault outside madvised ranges");
}

/// Under `defrag=never` a fault neither reclaims nor compacts: where every pageblock holds
/// a page from before the trace, the madvised fault that compaction serves as recorded
/// falls back to base pages. (The machine is the trace's pfns: twelve pageblocks.)
#[test]
fn thp_defrag_never_does_not_compact() {
    let base = 0x1000u64;
    let mut t = Trace::default();
    t.alloc(0, Some(base + 512 + 7), 0, Gfp::KERNEL).alloc(0, Some(base), 9, MADVISED_FIRST).free(0, base, 9);
    for block in (0..8).chain(9..12) {
        t.free(1, block * 512 + 100, 0);
    }
    let path = t.write("thp-defrag-never");
    write_run_json(path.parent().unwrap(), "dm0-always-madvise");
    let closed =
        |thp_defrag| Options { mode: Some(replay::engine::Loop::Closed), thp_defrag, ..Options::default() };
    let recorded = &replay(&path, closed(None)).unwrap().policies[0];
    assert!(recorded.vmstat["compact_stall"] > 0);
    assert_eq!((recorded.vmstat["thp_fault_alloc"], recorded.vmstat["thp_fault_fallback"]), (1, 0));
    let never = &replay(&path, closed(Some(ThpDefrag::Never))).unwrap().policies[0];
    assert_eq!(never.vmstat["compact_stall"], 0);
    assert_eq!((never.vmstat["thp_fault_alloc"], never.vmstat["thp_fault_fallback"]), (0, 1));
    assert_eq!(never.divergence.fallbacks.base_pages, 512);
}

/// A setting equal to the recording's changes nothing, to the byte.
#[test]
fn the_recorded_thp_settings_replay_as_traced() {
    let path = faults("thp-same");
    let plain = replay(&path, Options::default()).unwrap().render();
    let same = replay(&path, thp(Some(ThpEnabled::Always), Some(ThpDefrag::Madvise))).unwrap().render();
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("end to end") && !l.contains("per second"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&plain), body(&same));
}

#[test]
fn thp_what_ifs_the_trace_cannot_answer_are_refused() {
    let path = faults("thp-refused");
    let dir = path.parent().unwrap();
    std::fs::remove_file(dir.join("run.json")).unwrap();
    let err = replay(&path, thp(Some(ThpEnabled::Never), None)).unwrap_err();
    assert!(err.contains("does not say its THP settings") && err.contains("thp.enabled"), "{err}");
    write_run_json(dir, "dm0-madvise-madvise");
    let err = replay(&path, thp(Some(ThpEnabled::Always), None)).unwrap_err();
    assert!(err.contains("cannot be replayed") && err.contains("base-page faults"), "{err}");
    write_run_json(dir, "dm1-always-always");
    let err = replay(&path, thp(None, Some(ThpDefrag::Madvise))).unwrap_err();
    assert!(err.contains("MADV_HUGEPAGE"), "{err}");
}

/// `--mem SIZE`: the balloon that leaves the recorded machine SIZE of managed memory; more
/// than the machine manages is refused, and a balloon larger than the free memory is
/// refused before the replay runs.
#[test]
fn mem_is_a_balloon_of_the_rest() {
    let path = common::anon_every_other_pfn().write("mem");
    let most = common::most_a_balloon_takes(&path);
    let too_much = replay(&path, Options { mem_pages: Some(1 << 40), ..Options::default() }).unwrap_err();
    assert!(too_much.contains("--mem") && too_much.contains("not add it"), "{too_much}");
    let mut replayed = 0;
    let err = replay::run(
        &path,
        &[policy_named("vanilla").unwrap()],
        Options { mem_pages: Some(1), ..Options::default() },
        &mut |s| {
            if let replay::Stage::Replaying { done, .. } = s {
                replayed = replayed.max(done);
            }
        },
    )
    .unwrap_err();
    assert!(err.contains("--mem") && err.contains("to give"), "{err}");
    assert_eq!(replayed, 0, "refused before a record was replayed");
    // `--mem 0` asks a balloon of every managed page, and the refusal says how many.
    let everything = replay(&path, Options { mem_pages: Some(0), ..Options::default() }).unwrap_err();
    let managed: u64 =
        everything.split("not ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    let squeezed = replay(&path, Options { balloon_pages: most - 1024, ..Options::default() }).unwrap();
    let mem =
        replay(&path, Options { mem_pages: Some(managed - (most - 1024)), ..Options::default() }).unwrap();
    assert_eq!(mem.policies[0].balloon_pages, most - 1024);
    assert_eq!(mem.policies[0].vmstat, squeezed.policies[0].vmstat, "the same balloon, the same replay");
    assert_eq!(mem.mode, replay::engine::Loop::Closed);
}

/// Swap as the recording had it (`before.swaps`) or a what-if says: a machine squeezed
/// below the anonymous memory it must hold swaps it out, one without swap cannot, and
/// fails the requests the kernel served instead.
#[test]
fn a_machine_without_swap_leaves_anonymous_memory_alone() {
    let path = common::anon_every_other_pfn().write("swap");
    let most = common::most_a_balloon_takes(&path);
    let squeezed = |swap| Options { balloon_pages: most - 1024, swap, ..Options::default() };
    let dir = path.parent().unwrap();
    let header = pageblock_formats::swaps::HEADER;
    std::fs::write(dir.join("before.swaps"), format!("{header}\n/swapfile file 4194300 0 -2\n")).unwrap();
    let with = replay(&path, squeezed(None)).unwrap();
    assert!(with.swap.swap && with.swap.source.contains("4194300 KiB in 1 area(s)"), "{:?}", with.swap);
    assert!(with.policies[0].vmstat["pswpout"] > 0, "squeezed, it swaps");
    std::fs::write(dir.join("before.swaps"), format!("{header}\n")).unwrap();
    let without = replay(&path, squeezed(None)).unwrap();
    assert_eq!(without.swap.source, "none (before.swaps lists no area)");
    let p = &without.policies[0];
    assert_eq!(p.vmstat["pswpout"], 0);
    assert!(
        p.failed_requests > with.policies[0].failed_requests,
        "what it could not swap it could not hold: {} failed, {} with swap",
        p.failed_requests,
        with.policies[0].failed_requests
    );
    assert!(without.render().contains("\nswap: none (before.swaps lists no area)\n"));
    let what_if = replay(&path, squeezed(Some(true))).unwrap();
    assert_eq!(what_if.swap.source, "what if: swap on");
    assert_eq!(what_if.policies[0].vmstat, with.policies[0].vmstat, "the same swap, the same replay");
}

/// `--zoneinfo FILE`: the machine is FILE's (its zones and CPUs), not the recording's.
#[test]
fn zoneinfo_replaces_the_recorded_machine() {
    let mut t = Trace::default();
    for k in 0..64u64 {
        t.alloc((k % 2) as u32, Some(0x1000 + k), 0, Gfp::KERNEL);
    }
    let path = t.write("zoneinfo");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pageblock-formats/tests/data/zoneinfo.txt");
    let r = replay(&path, Options { zoneinfo: Some(sample.clone()), ..Options::default() }).unwrap();
    assert_eq!(r.start.geometry, "--zoneinfo");
    let zones = |r: &ReplayReport| r.policies[0].pgalloc.keys().copied().collect::<Vec<_>>();
    assert_eq!(zones(&r), ["DMA", "DMA32", "Normal"], "the sample's zones");
    assert_eq!(r.policies[0].pgalloc.values().sum::<u64>(), 64);
    let bare = replay(&path, Options::default()).unwrap();
    assert_eq!(bare.start.geometry, "the trace's pfns");
    assert_eq!(zones(&bare), ["Normal"], "one zone over the trace's pfns");
    let missing =
        replay(&path, Options { zoneinfo: Some(sample.with_file_name("none")), ..Options::default() });
    assert!(missing.unwrap_err().contains("--zoneinfo"));
}
