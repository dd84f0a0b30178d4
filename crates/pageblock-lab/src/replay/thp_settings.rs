//! `replay --thp-enabled/--thp-defrag`: the trace's huge page faults replayed under other
//! THP settings than the recording machine's.
//!
//! The trace shows each huge page fault as its attempts (`mm_page_alloc` of the pageblock
//! order with an anonymous `GFP_TRANSHUGE*` mask: the first on the local node with
//! `__GFP_THISNODE|__GFP_NORETRY`, the retry without). What a fault would ask under other
//! settings follows from two facts about it:
//!
//! * **Whether its range was madvised** (`MADV_HUGEPAGE`). Under `enabled=madvise` every
//!   huge page fault was. Under `defrag=madvise` or `defer+madvise` the mask tells:
//!   `vma_thp_gfp_mask()` gives only a madvised range `__GFP_DIRECT_RECLAIM`. Under
//!   `enabled=always` with `defrag=always`, `defer` or `never` every fault carries the same
//!   mask: a what-if whose answer depends on it is refused.
//! * **Whether it happens at all**: `enabled` decides. A fault the new setting does not make
//!   a huge page fault maps base pages (`do_anonymous_page`: `GFP_HIGHUSER_MOVABLE|
//!   __GFP_ZERO`, the workload touches each): for an attempt the kernel served, the replay
//!   takes the block's base pages; for one it failed, nothing (the base pages the kernel
//!   fell back to are in the trace). The faults a recording made as base pages cannot be
//!   told from other base-page faults, so `always` over a `madvise` recording (and anything
//!   but `never` over a `never` one) is refused.
//!
//! The new mask is `vma_thp_gfp_mask()` of the new `defrag` for the fault's range: its first
//! attempt adds `__GFP_THISNODE|__GFP_NORETRY`, and a fault that may reclaim retries
//! ([`super::fallback`]). A traced retry the new mask would not make is dropped; if the
//! kernel served it, the fault's outcome is its first attempt's: the simulation's huge page
//! if it served that (given back when the kernel failed it, so asked for again), else base
//! pages. One thing is left out and counted: a first attempt the kernel failed and did not
//! retry, which the new mask would retry. The trace goes on with the fault's base pages,
//! and a retry on top of them would map the range twice.

use std::path::Path;

use pageblock_core::thp::{ThpDefrag, ThpEnabled};
use pageblock_core::Gfp;
use serde::Serialize;

use super::fallback::Caller;

/// `/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThpSettings {
    /// `enabled`.
    pub enabled: ThpEnabled,
    /// `defrag`.
    pub defrag: ThpDefrag,
}

impl ThpSettings {
    /// `enabled/defrag`, as the report names a setting.
    pub fn label(self) -> String {
        format!("{}/{}", self.enabled.name(), self.defrag.name())
    }

    /// The settings the recording in `dir` was made under: `thp.enabled` and `thp.defrag`
    /// (the sysfs files' text, `always [madvise] never`, as `record` copies them), else the
    /// setting `lab real` named its run by in `run.json` (`dm0-always-madvise`). `None` if
    /// the recording says neither; a file that is there but unreadable is an error.
    pub fn recorded(dir: &Path) -> Result<Option<ThpSettings>, String> {
        let (enabled, defrag) = (dir.join("thp.enabled"), dir.join("thp.defrag"));
        if enabled.is_file() || defrag.is_file() {
            let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
            let (e, d) = (read(&enabled)?, read(&defrag)?);
            let bad = |p: &Path, text: &str| format!("{}: not a THP setting: {:?}", p.display(), text.trim());
            let enabled_setting =
                sysfs_choice(&e).and_then(ThpEnabled::from_name).ok_or_else(|| bad(&enabled, &e))?;
            let defrag_setting =
                sysfs_choice(&d).and_then(ThpDefrag::from_name).ok_or_else(|| bad(&defrag, &d))?;
            return Ok(Some(ThpSettings { enabled: enabled_setting, defrag: defrag_setting }));
        }
        Ok(RealSetting::recorded(dir)?.map(|r| r.thp))
    }
}

/// The bracketed word of a sysfs choice file (`always [madvise] never` → `madvise`).
fn sysfs_choice(text: &str) -> Option<&str> {
    text.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

/// A `lab real` setting as its label names it: `dm{0,1}-ENABLED-DEFRAG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealSetting {
    /// `vm.defrag_mode`.
    pub defrag_mode: u8,
    /// The THP settings.
    pub thp: ThpSettings,
}

impl RealSetting {
    /// The setting the `lab real` run in `dir` was made under, as its `run.json` names it
    /// (`None`: no `run.json`, or no setting label in it); an unreadable file is an error.
    pub fn recorded(dir: &Path) -> Result<Option<RealSetting>, String> {
        let run = dir.join("run.json");
        if !run.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&run).map_err(|e| format!("{}: {e}", run.display()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", run.display()))?;
        Ok(json.get("setting").and_then(serde_json::Value::as_str).and_then(RealSetting::parse))
    }

    /// The setting `label` names (`None`: not a `lab real` setting label).
    pub fn parse(label: &str) -> Option<RealSetting> {
        let (dm, rest) = label.strip_prefix("dm")?.split_once('-')?;
        let (enabled, defrag) = rest.split_once('-')?;
        Some(RealSetting {
            defrag_mode: dm.parse().ok().filter(|d| *d <= 1)?,
            thp: ThpSettings {
                enabled: ThpEnabled::from_name(enabled)?,
                defrag: ThpDefrag::from_name(defrag)?,
            },
        })
    }
}

/// The flags of a fault's attempts that `defrag` and the attempt decide.
const SET_BY_DEFRAG: Gfp =
    Gfp(Gfp::DIRECT_RECLAIM.0 | Gfp::KSWAPD_RECLAIM.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);

/// What a replay does with one of the trace's huge page fault attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Ask for the block with this mask, as the given caller.
    Ask(Caller, Gfp),
    /// The workload maps the block's base pages instead; `fault` if it is still a huge page
    /// fault (its outcome a fallback), not if the setting makes no huge page fault of it.
    BasePages {
        /// Still a huge page fault (counted as a fallback).
        fault: bool,
    },
    /// Nothing happens; `fault` as for `BasePages`.
    Nothing {
        /// Still a huge page fault.
        fault: bool,
    },
}

/// What the what-if changed, over a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThpWhatIfCounts {
    /// Attempts the kernel served with a huge page that became base pages.
    pub as_base_pages: u64,
    /// Attempts the kernel failed that the new settings do not make.
    pub dropped: u64,
    /// First attempts the kernel failed without a retry that the new mask would retry (not
    /// replayed: the trace goes on with the fault's base pages).
    pub retries_not_replayed: u64,
}

impl ThpWhatIfCounts {
    /// Nothing changed (or no what-if).
    pub fn is_none(&self) -> bool {
        *self == ThpWhatIfCounts::default()
    }
}

/// The trace's huge page faults under other THP settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThpWhatIf {
    /// The recording machine's.
    pub recorded: ThpSettings,
    /// The replay's.
    pub replayed: ThpSettings,
}

impl ThpWhatIf {
    /// The what-if from `recorded` to `replayed`, or why the trace cannot answer it.
    pub fn new(recorded: ThpSettings, replayed: ThpSettings) -> Result<ThpWhatIf, String> {
        let cannot = |why: &str| {
            Err(format!(
                "THP {} cannot be replayed from a trace recorded under {}: {why}",
                replayed.label(),
                recorded.label()
            ))
        };
        let gains_faults = match recorded.enabled {
            ThpEnabled::Always => false,
            ThpEnabled::Madvise => replayed.enabled == ThpEnabled::Always,
            ThpEnabled::Never => replayed.enabled != ThpEnabled::Never,
        };
        if gains_faults {
            return cannot(
                "the faults that would become huge page faults were base-page faults there, and the trace does not \
                 tell them from the others",
            );
        }
        let told = recorded.enabled != ThpEnabled::Always
            || matches!(recorded.defrag, ThpDefrag::Madvise | ThpDefrag::DeferMadvise);
        let depends = replayed.enabled == ThpEnabled::Madvise
            || replayed.defrag.gfp(true) != replayed.defrag.gfp(false);
        if !told && depends && replayed.enabled != ThpEnabled::Never {
            return cannot(
                "the answer depends on which faults lay in MADV_HUGEPAGE ranges, and under that setting every fault's \
                 mask is the same",
            );
        }
        Ok(ThpWhatIf { recorded, replayed })
    }

    /// Whether the fault whose attempt carried `traced` lay in a madvised range.
    fn madvised(&self, traced: Gfp) -> bool {
        match (self.recorded.enabled, self.recorded.defrag) {
            (ThpEnabled::Madvise, _) => true,
            (_, ThpDefrag::Madvise | ThpDefrag::DeferMadvise) => traced.contains(Gfp::DIRECT_RECLAIM),
            // Refused in `new` wherever it matters.
            _ => true,
        }
    }

    /// What to do with a traced attempt by `caller` (a fault's first attempt or retry) with
    /// mask `traced`, which the kernel `served` or not; `first_served` says whether the
    /// simulation served the fault's first attempt (for a retry). Counts into `counts`.
    pub fn attempt(
        &self,
        caller: Caller,
        traced: Gfp,
        served: bool,
        first_served: bool,
        counts: &mut ThpWhatIfCounts,
    ) -> Attempt {
        let madvised = self.madvised(traced);
        let gone = |fault, counts: &mut ThpWhatIfCounts| {
            if served {
                counts.as_base_pages += 1;
                Attempt::BasePages { fault }
            } else {
                counts.dropped += 1;
                Attempt::Nothing { fault }
            }
        };
        if !self.replayed.enabled.huge(madvised) {
            return gone(false, counts);
        }
        // The traced mask's other flags stay.
        let mask = (traced & !SET_BY_DEFRAG) | self.replayed.defrag.gfp(madvised);
        let first = mask | Gfp::THISNODE | Gfp::NORETRY;
        match caller {
            Caller::ThpFirst => {
                let recorded_retries = traced.contains(Gfp::DIRECT_RECLAIM);
                if !served && !recorded_retries && Caller::thp_retry(first).is_some() {
                    counts.retries_not_replayed += 1;
                }
                Attempt::Ask(Caller::ThpFirst, first)
            }
            _ if Caller::thp_retry(first).is_some() => Attempt::Ask(Caller::ThpRetry, mask),
            // No retry under the new mask: the fault ends with its first attempt.
            _ if served && first_served => Attempt::Ask(Caller::ThpRetry, first),
            _ => gone(true, counts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALWAYS_MADVISE: ThpSettings =
        ThpSettings { enabled: ThpEnabled::Always, defrag: ThpDefrag::Madvise };
    /// A madvised fault's first attempt under `defrag=madvise`, as the recordings show it.
    const MADVISED_FIRST: Gfp = Gfp(Gfp::TRANSHUGE.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);
    /// A fault outside madvised ranges under `enabled=always defrag=madvise`.
    const PLAIN_FIRST: Gfp = Gfp(Gfp::TRANSHUGE_LIGHT.0 | Gfp::NORETRY.0 | Gfp::THISNODE.0);

    fn settings(enabled: ThpEnabled, defrag: ThpDefrag) -> ThpSettings {
        ThpSettings { enabled, defrag }
    }

    #[test]
    fn recorded_settings_come_from_the_sysfs_copies_or_the_harness_label() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ThpSettings::recorded(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join("run.json"), r#"{"setting": "dm1-always-madvise", "run": 2}"#)
            .unwrap();
        assert_eq!(ThpSettings::recorded(dir.path()).unwrap(), Some(ALWAYS_MADVISE));
        std::fs::write(dir.path().join("thp.enabled"), "always madvise [never]\n").unwrap();
        std::fs::write(dir.path().join("thp.defrag"), "always defer [defer+madvise] madvise never\n")
            .unwrap();
        assert_eq!(
            ThpSettings::recorded(dir.path()).unwrap(),
            Some(settings(ThpEnabled::Never, ThpDefrag::DeferMadvise)),
            "the sysfs copies come first"
        );
        std::fs::write(dir.path().join("thp.defrag"), "always defer\n").unwrap();
        let err = ThpSettings::recorded(dir.path()).unwrap_err();
        assert!(err.contains("thp.defrag") && err.contains("not a THP setting"), "{err}");
        std::fs::remove_file(dir.path().join("thp.defrag")).unwrap();
        let err = ThpSettings::recorded(dir.path()).unwrap_err();
        assert!(err.contains("thp.defrag"), "one file without the other: {err}");
    }

    #[test]
    fn what_the_trace_cannot_tell_is_refused() {
        let madvise_only = settings(ThpEnabled::Madvise, ThpDefrag::Madvise);
        let err = ThpWhatIf::new(madvise_only, ALWAYS_MADVISE).unwrap_err();
        assert!(err.contains("base-page faults"), "{err}");
        let always_always = settings(ThpEnabled::Always, ThpDefrag::Always);
        let err = ThpWhatIf::new(always_always, ALWAYS_MADVISE).unwrap_err();
        assert!(err.contains("MADV_HUGEPAGE"), "{err}");
        // Settings that treat every fault alike need no such knowledge.
        for d in [ThpDefrag::Defer, ThpDefrag::Never] {
            assert!(ThpWhatIf::new(always_always, settings(ThpEnabled::Always, d)).is_ok());
        }
        assert!(ThpWhatIf::new(always_always, settings(ThpEnabled::Never, ThpDefrag::Madvise)).is_ok());
        assert!(ThpWhatIf::new(ALWAYS_MADVISE, madvise_only).is_ok());
    }

    /// Each `(caller, traced mask, served by the kernel, first attempt served here)` case
    /// of `w` gives its expected attempt; returns the counts.
    fn check(w: ThpWhatIf, cases: &[(Caller, Gfp, bool, bool, Attempt)]) -> ThpWhatIfCounts {
        let mut c = ThpWhatIfCounts::default();
        for (i, &(caller, gfp, served, first_served, expected)) in cases.iter().enumerate() {
            assert_eq!(w.attempt(caller, gfp, served, first_served, &mut c), expected, "case {i}");
        }
        c
    }

    #[test]
    fn enabled_madvise_turns_the_faults_outside_madvised_ranges_into_base_pages() {
        let w = ThpWhatIf::new(ALWAYS_MADVISE, settings(ThpEnabled::Madvise, ThpDefrag::Madvise)).unwrap();
        let c = check(
            w,
            &[
                (Caller::ThpFirst, PLAIN_FIRST, true, false, Attempt::BasePages { fault: false }),
                (Caller::ThpFirst, PLAIN_FIRST, false, false, Attempt::Nothing { fault: false }),
                (
                    Caller::ThpFirst,
                    MADVISED_FIRST,
                    true,
                    false,
                    Attempt::Ask(Caller::ThpFirst, MADVISED_FIRST),
                ),
            ],
        );
        assert_eq!(c, ThpWhatIfCounts { as_base_pages: 1, dropped: 1, retries_not_replayed: 0 });
    }

    /// `never`: no reclaim, no compaction beyond the first attempt's, and no retry: where
    /// the kernel retried, the fault ends with its first attempt (asked again if the
    /// simulation served it, else base pages if the kernel's retry was served).
    #[test]
    fn defrag_never_rewrites_the_masks_and_drops_the_retries() {
        let never = ThpWhatIf::new(ALWAYS_MADVISE, settings(ThpEnabled::Always, ThpDefrag::Never)).unwrap();
        let retry = Gfp::TRANSHUGE;
        let c = check(
            never,
            &[
                (Caller::ThpFirst, MADVISED_FIRST, true, false, Attempt::Ask(Caller::ThpFirst, PLAIN_FIRST)),
                (Caller::ThpRetry, retry, true, true, Attempt::Ask(Caller::ThpRetry, PLAIN_FIRST)),
                (Caller::ThpRetry, retry, true, false, Attempt::BasePages { fault: true }),
                (Caller::ThpRetry, retry, false, false, Attempt::Nothing { fault: true }),
            ],
        );
        assert_eq!(c, ThpWhatIfCounts { as_base_pages: 1, dropped: 1, retries_not_replayed: 0 });
    }

    /// `always`: every fault reclaims; a first attempt the kernel failed without retrying
    /// would be retried, which the replay counts and does not make.
    #[test]
    fn defrag_always_counts_the_retries_it_cannot_replay() {
        let always = ThpWhatIf::new(ALWAYS_MADVISE, settings(ThpEnabled::Always, ThpDefrag::Always)).unwrap();
        let direct_first = Gfp::TRANSHUGE | Gfp::NORETRY | Gfp::THISNODE;
        let ask_first = Attempt::Ask(Caller::ThpFirst, direct_first);
        let c = check(
            always,
            &[
                (Caller::ThpFirst, PLAIN_FIRST, true, false, ask_first),
                (Caller::ThpFirst, PLAIN_FIRST, false, false, ask_first),
                (
                    Caller::ThpRetry,
                    Gfp::TRANSHUGE,
                    true,
                    false,
                    Attempt::Ask(Caller::ThpRetry, Gfp::TRANSHUGE),
                ),
            ],
        );
        assert_eq!(c.retries_not_replayed, 1, "the second: the kernel failed it and did not retry");
    }

    #[test]
    fn the_recorded_settings_leave_every_attempt_as_traced() {
        let same = ThpWhatIf::new(ALWAYS_MADVISE, ALWAYS_MADVISE).unwrap();
        let mut c = ThpWhatIfCounts::default();
        for (caller, gfp) in [
            (Caller::ThpFirst, MADVISED_FIRST),
            (Caller::ThpFirst, PLAIN_FIRST),
            (Caller::ThpRetry, Gfp::TRANSHUGE),
        ] {
            for served in [true, false] {
                assert_eq!(same.attempt(caller, gfp, served, false, &mut c), Attempt::Ask(caller, gfp));
            }
        }
        assert_eq!(c, ThpWhatIfCounts::default());
    }
}
