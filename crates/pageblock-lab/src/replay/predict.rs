//! Prediction checked against the real kernel: the traces of one setting of a `lab real`
//! session, replayed closed loop as recorded and under the session's other setting, predict
//! how the other setting's runs differ from them. Two settings are compared when they differ
//! in one knob:
//!
//! * `vm.defrag_mode` (`dm0-X` → `dm1-X`): the `dm0-X` traces under the `vanilla` and the
//!   `defrag_mode` policy;
//! * a THP setting (`dmD-always-madvise` → `dmD-always-never`): the first setting's traces
//!   under the policy of `defrag_mode=D`, as recorded and with the other THP setting
//!   ([`super::thp_settings`]); a pair whose what-if the trace cannot answer that way round is
//!   taken the other way round, or not at all.
//!
//! For each row the real change is the difference of the two settings' means over their
//! runs, and the real spread the larger of the two settings' (highest − lowest) / mean: the
//! run-to-run variation a change must exceed to mean anything. Each trace is replayed once
//! per seed (the daemons' timing the trace does not tell, drawn per seed:
//! [`super::daemon_timing`]) under each side, and the predicted change is the same quantity
//! as the real one: the mean of the second replays against the mean of the first, over every
//! trace and seed. Beside it, the range of each pair's own change (the second replay against
//! the first with the same trace and seed). A mean of those per-pair changes would not be the
//! real change's estimate: a count that varies hundredfold from run to run (B's
//! `pgscan_kswapd`) gives a pair with a small first value a change of hundreds of percent
//! that a change of the means weighs as little as the real side weighs such a run. A row
//! **agrees** when the real change exceeds the spread and the predicted change has its sign,
//! or when it does not and the predicted change lies within the spread.
//!
//! **From the other side.** A trace carries its run's starting state: where free memory
//! lay, in which pageblocks. The runs of two settings start from different states (each
//! begins where the one before it left the machine), and a state can decide the change on
//! its own: a run that begins with its free memory in Reclaimable pageblocks gives
//! `defrag_mode`, which may not take pages from them, a machine short of that memory, and
//! `vanilla`, which may, none. So the same change is also predicted from the second
//! setting's traces, each replayed as the first setting and as recorded (the THP what-if the
//! other way round, where the trace can answer it), and judged by the same rule. The first
//! prediction is the one `replay` makes of a user's trace; the second tells whether a miss
//! comes from the model or from where the first setting's runs began.
//!
//! **Traces that lost events.** A trace whose ring buffers dropped events (`[LOST n EVENTS]`)
//! dropped frees among them, and in closed loop a page whose free is missing stays allocated
//! until the trace allocates it again, if ever: the replay runs on a machine fuller than the
//! real one, and on this machine's recordings it runs away (A's `defrag_mode=0` run 2, 18% of
//! its events lost: 11,218 frees of pages the replay never saw allocated, and 114x the
//! kernel's `compact_stall`, against 25 and 2.5x on run 1). So a trace that lost more than
//! [`LOSSY_SHARE`] of its events is left out of a prediction when the setting has a trace
//! that did not; its own prediction is still shown. The real side counts every run: its
//! vmstat delta comes from `/proc`, which no ring buffer can drop.
//!
//! THP success is `thp_fault_alloc / (thp_fault_alloc + thp_fault_fallback)` on both sides:
//! the replay counts the trace's huge page faults as the kernel does, each served if the
//! simulation served its first attempt or the retry ([`super::fallback`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pageblock_core::named_policy::policy_named;
use pageblock_formats::pagetypeinfo::PageTypeInfo;
use pageblock_formats::vmstat::{thp_success_percent, VmStat};
use pageblock_view::Spread;
use serde::Serialize;

use super::engine::Loop;
use super::report::PolicyResult;
use super::thp_settings::{RealSetting, ThpWhatIf};

/// The rows compared.
pub const ROWS: [&str; 4] =
    ["THP success %", "compaction pfns scanned", "direct reclaim stalls", "pgscan_kswapd"];

/// The share of a trace's events lost above which a setting's cleaner traces predict without
/// it (see the module). On this machine's recordings a trace lost none or at least 1.8%.
pub const LOSSY_SHARE: f64 = 0.001;

/// The share of a trace's events its ring buffers lost, of `events` recorded and `lost`.
pub fn lost_share(events: u64, lost: u64) -> f64 {
    lost as f64 / events.saturating_add(lost).max(1) as f64
}

/// A row's value from a run's counters (`name`, count) and its THP success: the same sums on
/// the real side and the replay's.
fn row_value<'a>(row: &str, thp: Option<f64>, counters: impl Iterator<Item = (&'a str, u64)>) -> Option<f64> {
    let counted = |name: &str| match row {
        "compaction pfns scanned" => name == "compact_migrate_scanned" || name == "compact_free_scanned",
        "direct reclaim stalls" => name.starts_with("allocstall_"),
        _ => name == row,
    };
    match row {
        "THP success %" => thp,
        _ => Some(counters.filter(|(n, _)| counted(n)).map(|(_, v)| v as f64).sum()),
    }
}

/// A row's value in a real run's vmstat delta.
fn real_value(row: &str, d: &VmStat) -> Option<f64> {
    row_value(row, thp_success_percent(|n| d.get(n)), d.items.iter().map(|(n, v)| (n.as_str(), *v)))
}

/// A row's value in a replay's vmstat delta.
fn predicted_value(row: &str, vmstat: &BTreeMap<String, u64>) -> Option<f64> {
    let thp = thp_success_percent(|n| vmstat.get(n).copied());
    row_value(row, thp, vmstat.iter().map(|(n, v)| (n.as_str(), *v)))
}

/// Change from `a` to `b`, percent (`None` from 0).
fn change(a: f64, b: f64) -> Option<f64> {
    (a.abs() > f64::EPSILON).then(|| 100.0 * (b - a) / a.abs())
}

/// A change predicted by pairs of replays, one pair per trace and seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PredictedChange {
    /// The second replays' mean against the first replays', percent: the prediction.
    pub of_means: f64,
    /// Each pair's own change, percent (its mean, lowest and highest: the predicted range).
    pub per_pair: Spread,
}

impl PredictedChange {
    /// The change predicted by `pairs` of (first, second) values; `None` without a pair whose
    /// first value is not 0.
    fn of(pairs: &[(f64, f64)]) -> Option<PredictedChange> {
        let per_pair = Spread::of(pairs.iter().filter_map(|&(a, b)| change(a, b)).collect())?;
        let n = pairs.len() as f64;
        let mean = |side: fn(&(f64, f64)) -> f64| pairs.iter().map(side).sum::<f64>() / n;
        let of_means = change(mean(|p| p.0), mean(|p| p.1))?;
        Some(PredictedChange { of_means, per_pair })
    }
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PredictionRow {
    /// The row.
    pub name: &'static str,
    /// The first setting's runs.
    pub real_from: Option<Spread>,
    /// The second setting's runs.
    pub real_to: Option<Spread>,
    /// Real change of the means, percent.
    pub real_change: Option<f64>,
    /// Real run-to-run spread, percent.
    pub real_spread: f64,
    /// Predicted change from the first setting's traces.
    pub predicted: Option<PredictedChange>,
    /// Predicted change / real change.
    pub ratio: Option<f64>,
    /// Whether prediction and reality agree (see the module).
    pub agrees: Option<bool>,
    /// The same change predicted from the second setting's traces (each replayed as the
    /// first setting and as recorded), percent; `None` where they cannot answer it.
    pub predicted_from_second: Option<PredictedChange>,
    /// Whether that prediction and reality agree, by the same rule.
    pub agrees_from_second: Option<bool>,
}

/// A session's comparison of two settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The settings compared, the one whose traces are replayed first
    /// (`dm0-always-madvise`, `dm1-always-madvise`).
    pub settings: (String, String),
    /// The knob that differs, as the report says it (`vm.defrag_mode 0 -> 1`).
    pub knob: String,
    /// How the prediction is made (which policies and what-ifs replay the traces).
    pub replayed: String,
    /// How the second setting's traces are replayed to predict the same change, or why they
    /// are not.
    pub replayed_second: Result<String, String>,
    /// The rows.
    pub rows: Vec<PredictionRow>,
    /// Each trace replayed, with where its run began and what it predicts on its own.
    pub traces: Vec<TracePrediction>,
}

/// One trace's own prediction, beside the state its run began in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TracePrediction {
    /// The run, as `setting/runN`.
    pub run: String,
    /// Free pages at the start (`before.pagetypeinfo`), if the run has the snapshot.
    pub free: Option<u64>,
    /// Of them, those a movable request could only steal: on the Unmovable and Reclaimable
    /// lists below the pageblock order. `defrag_mode` does not take them for it; `vanilla`
    /// does, and claims their pageblocks.
    pub steal_only: Option<u64>,
    /// Events the trace recorded, and those its ring buffers dropped (`[LOST n EVENTS]`):
    /// frees among them leave pages allocated in the replay for good, so a trace that lost
    /// many predicts from a machine fuller than the real one was.
    pub events: u64,
    /// See [`TracePrediction::events`].
    pub lost_events: u64,
    /// Per row (as [`ROWS`]), the change its replays predict over the seeds, percent.
    pub changes: Vec<Option<f64>>,
    /// Whether the prediction of its setting leaves it out: it lost more than
    /// [`LOSSY_SHARE`] of its events and the setting has a trace that did not.
    pub left_out: bool,
}

/// Free pages in a run's `before.pagetypeinfo`, and those a movable request could only steal
/// (see [`TracePrediction::steal_only`]).
fn start_free(info: &PageTypeInfo) -> (u64, u64) {
    let row_pages = |row: &pageblock_formats::pagetypeinfo::FreeRow| {
        row.counts.iter().enumerate().map(|(order, c)| c.count << order).sum::<u64>()
    };
    let free = info.nodes.iter().flat_map(|n| &n.free).map(row_pages).sum();
    (free, info.steal_only_pages())
}

/// Each trace of `runs` (replayed as `replays` holds) on its own.
fn trace_predictions(runs: &[PathBuf], replays: &[TraceReplays]) -> Vec<TracePrediction> {
    runs.iter()
        .zip(replays)
        .map(|(run, one)| {
            let start = one.start;
            let left_out = !counted(replays).any(|t| std::ptr::eq(t, one));
            let name =
                |p: Option<&std::ffi::OsStr>| p.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            TracePrediction {
                run: format!("{}/{}", name(run.parent().and_then(Path::file_name)), name(run.file_name())),
                free: start.map(|s| s.0),
                steal_only: start.map(|s| s.1),
                events: one.events,
                lost_events: one.lost_events,
                changes: ROWS
                    .iter()
                    .map(|r| predicted_change(r, std::slice::from_ref(one)).map(|p| p.of_means))
                    .collect(),
                left_out,
            }
        })
        .collect()
}

impl RealSetting {
    /// The policy that stands for the setting's `vm.defrag_mode`.
    fn policy(self) -> &'static str {
        if self.defrag_mode == 1 {
            "defrag_mode"
        } else {
            "vanilla"
        }
    }
}

/// The two replays of each trace, as the first setting and as the second: the policy, and
/// the THP what-if if the setting is not the recorded one.
type Replays = [(&'static str, Option<ThpWhatIf>); 2];

/// How the traces of one setting predict another.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    /// The replays of each trace of the first setting.
    replays: Replays,
    /// The knob that differs.
    knob: String,
    /// How the traces are replayed.
    how: String,
    /// The replays of each trace of the second setting, predicting the same change from the
    /// state the second setting's runs started in, and how; or why its traces cannot be
    /// replayed as the first setting (a THP what-if the trace cannot tell).
    second: Result<(Replays, String), String>,
}

/// How the traces of setting `a` predict setting `b`; `None` if the settings differ in more
/// than one knob, or the trace cannot answer the what-if this way round.
fn plan(a: RealSetting, b: RealSetting) -> Option<Plan> {
    if a.thp == b.thp && (a.defrag_mode, b.defrag_mode) == (0, 1) {
        let how = "under vanilla and defrag_mode".to_owned();
        let replays = [("vanilla", None), ("defrag_mode", None)];
        return Some(Plan {
            replays,
            knob: "vm.defrag_mode 0 -> 1".into(),
            how: how.clone(),
            second: Ok((replays, how)),
        });
    }
    let one_thp_knob = (a.thp.enabled == b.thp.enabled) != (a.thp.defrag == b.thp.defrag);
    if a.defrag_mode != b.defrag_mode || !one_thp_knob {
        return None;
    }
    let what_if = ThpWhatIf::new(a.thp, b.thp).ok()?;
    let second = ThpWhatIf::new(b.thp, a.thp).map(|back| {
        let how = format!("under {}, with THP {} and as recorded", b.policy(), a.thp.label());
        ([(b.policy(), Some(back)), (b.policy(), None)], how)
    });
    Some(Plan {
        replays: [(a.policy(), None), (a.policy(), Some(what_if))],
        knob: format!("THP {} -> {}", a.thp.label(), b.thp.label()),
        how: format!("under {}, as recorded and with THP {}", a.policy(), b.thp.label()),
        second,
    })
}

/// The runs (directories holding `vmstat-delta.txt`) of each setting under `dir`, by label.
fn settings(dir: &Path) -> Result<Vec<(String, Vec<PathBuf>)>, String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| err(dir, e))? {
        let path = entry.map_err(|e| err(dir, e))?.path();
        let Some(label) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        if !path.is_dir() || !label.starts_with("dm") {
            continue;
        }
        let mut runs: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|e| err(&path, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("vmstat-delta.txt").is_file())
            .collect();
        runs.sort();
        if !runs.is_empty() {
            out.push((label, runs));
        }
    }
    out.sort();
    Ok(out)
}

fn delta(run: &Path) -> Result<VmStat, String> {
    let p = run.join("vmstat-delta.txt");
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    VmStat::parse_delta(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// Compares the settings under `dir` (a `lab real` output directory) that differ in one
/// knob, replaying each trace of the first `seeds` times per replay (the daemons' timing drawn
/// per seed, [`super::daemon_timing`]); `progress` is told which trace is replayed.
pub fn predict(dir: &Path, seeds: u32, progress: &mut dyn FnMut(&Path)) -> Result<Vec<Prediction>, String> {
    let all = settings(dir)?;
    let mut out = Vec::new();
    let mut compared: Vec<(usize, usize)> = Vec::new();
    for (i, (a_label, a_runs)) in all.iter().enumerate() {
        for (j, (b_label, b_runs)) in all.iter().enumerate() {
            let (Some(a), Some(b)) = (RealSetting::parse(a_label), RealSetting::parse(b_label)) else {
                continue;
            };
            let Some(plan) = plan(a, b) else { continue };
            if compared.contains(&(j, i)) {
                continue;
            }
            compared.push((i, j));
            let real = |runs: &[PathBuf]| runs.iter().map(|r| delta(r)).collect::<Result<Vec<_>, _>>();
            let (real_a, real_b) = (real(a_runs)?, real(b_runs)?);
            let replays = replay_each(a_runs, &plan.replays, seeds, progress)?;
            let untraced = b_runs.iter().find(|r| pageblock_trace::trace_file(r).is_err());
            let (second, replayed_second) = match (&plan.second, untraced) {
                (Ok((replays_of, how)), None) => {
                    (Some(replay_each(b_runs, replays_of, seeds, progress)?), Ok(how.clone()))
                }
                (Ok(_), Some(run)) => (None, Err(format!("{} has no trace", run.display()))),
                (Err(why), _) => (None, Err(why.clone())),
            };
            let rows =
                ROWS.iter().map(|&name| row(name, (&real_a, &real_b), &replays, second.as_deref())).collect();
            let mut traces = trace_predictions(a_runs, &replays);
            if let Some(second) = &second {
                traces.extend(trace_predictions(b_runs, second));
            }
            out.push(Prediction {
                settings: (a_label.clone(), b_label.clone()),
                knob: plan.knob,
                replayed: plan.how,
                replayed_second,
                rows,
                traces,
            });
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no two settings with runs that differ in one knob (defrag_mode, THP enabled or defrag) to compare \
             (a `lab real` output directory)",
            dir.display()
        ));
    }
    Ok(out)
}

/// One trace's two replays, and where its run began ([`start_free`] of its
/// `before.pagetypeinfo`, if it has one).
struct TraceReplays {
    pair: Vec<PolicyResult>,
    start: Option<(u64, u64)>,
    /// Events recorded, and lost.
    events: u64,
    lost_events: u64,
}

/// Replays each trace of `runs` as `replays_of` says, `seeds` times each.
fn replay_each(
    runs: &[PathBuf],
    replays_of: &Replays,
    seeds: u32,
    progress: &mut dyn FnMut(&Path),
) -> Result<Vec<TraceReplays>, String> {
    let mut replays = Vec::new();
    for run in runs {
        progress(run);
        // Read once, replayed twice.
        let trace = super::load_trace(run, &super::Options::default(), &mut |_| {})?;
        let mut pair = Vec::new();
        for (policy, what_if) in replays_of {
            let policies = [policy_named(policy).expect("a shipped policy")];
            let options = super::Options {
                mode: Some(Loop::Closed),
                seeds,
                thp_enabled: what_if.map(|w| w.replayed.enabled),
                thp_defrag: what_if.map(|w| w.replayed.defrag),
                ..Default::default()
            };
            let report = super::replay_trace(&trace, &policies, &options, &mut |_| {})?;
            pair.extend(report.policies);
        }
        replays.push(TraceReplays {
            pair,
            start: trace.snapshots.before_pagetypeinfo.as_ref().map(start_free),
            events: trace.counts.events.values().sum(),
            lost_events: trace.counts.lost_events,
        });
    }
    Ok(replays)
}

impl TraceReplays {
    /// Whether it lost more than [`LOSSY_SHARE`] of its events.
    fn lossy(&self) -> bool {
        lost_share(self.events, self.lost_events) > LOSSY_SHARE
    }
}

/// The traces of one setting that predict: those that did not lose more than [`LOSSY_SHARE`]
/// of their events, or all of them if every one did.
fn counted(replays: &[TraceReplays]) -> impl Iterator<Item = &TraceReplays> {
    let all_lossy = replays.iter().all(TraceReplays::lossy);
    replays.iter().filter(move |t| all_lossy || !t.lossy())
}

/// Row `name`'s change predicted by the counted traces' pairs of replays, one pair per trace
/// and seed.
fn predicted_change(name: &str, replays: &[TraceReplays]) -> Option<PredictedChange> {
    let pairs: Vec<(f64, f64)> = counted(replays)
        .flat_map(|t| t.pair[0].seeds.iter().zip(&t.pair[1].seeds))
        .filter_map(|(first, second)| {
            Some((predicted_value(name, &first.vmstat)?, predicted_value(name, &second.vmstat)?))
        })
        .collect();
    PredictedChange::of(&pairs)
}

/// The module's rule: a real change beyond the spread needs the predicted change's sign, one
/// within it a predicted change within it too.
fn agrees(real_change: Option<f64>, real_spread: f64, predicted: Option<&PredictedChange>) -> Option<bool> {
    real_change.zip(predicted).map(|(r, p)| {
        let p = p.of_means;
        if r.abs() > real_spread {
            p.signum() == r.signum() && p != 0.0
        } else {
            p.abs() <= real_spread
        }
    })
}

/// Row `name`: the real change between the runs of the two settings, and the change
/// predicted by each trace's pair of replays (the first setting's traces', and the second's
/// if they were replayed).
fn row(
    name: &'static str,
    (real_a, real_b): (&[VmStat], &[VmStat]),
    replays: &[TraceReplays],
    second: Option<&[TraceReplays]>,
) -> PredictionRow {
    let spread = |ds: &[VmStat]| Spread::of(ds.iter().filter_map(|d| real_value(name, d)).collect());
    let (ra, rb) = (spread(real_a), spread(real_b));
    let real_change = ra.as_ref().zip(rb.as_ref()).and_then(|(a, b)| change(a.mean, b.mean));
    let real_spread =
        [&ra, &rb].iter().filter_map(|s| s.as_ref()).map(Spread::relative_percent).fold(0.0, f64::max);
    let predicted = predicted_change(name, replays);
    let ratio = real_change
        .zip(predicted.as_ref())
        .and_then(|(r, p)| (r.abs() > f64::EPSILON).then(|| p.of_means / r));
    let agrees_first = agrees(real_change, real_spread, predicted.as_ref());
    let predicted_from_second = second.and_then(|s| predicted_change(name, s));
    let agrees_from_second = agrees(real_change, real_spread, predicted_from_second.as_ref());
    PredictionRow {
        name,
        real_from: ra,
        real_to: rb,
        real_change,
        real_spread,
        predicted,
        ratio,
        agrees: agrees_first,
        predicted_from_second,
        agrees_from_second,
    }
}

/// The comparison as a table: the prediction from the first setting's traces, then the same
/// change predicted from the second's.
pub fn render(predictions: &[Prediction]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for p in predictions {
        let _ = writeln!(
            o,
            "{} -> {} ({}): real change of the runs' means against predicted (the {} traces replayed {})",
            p.settings.0, p.settings.1, p.knob, p.settings.0, p.replayed
        );
        table(&mut o, &p.rows, |r| (r.predicted.as_ref(), r.agrees));
        match &p.replayed_second {
            Ok(how) => {
                let _ = writeln!(
                    o,
                    "the same change predicted from the {} traces (replayed {}), from the states those runs began in",
                    p.settings.1, how
                );
                table(&mut o, &p.rows, |r| (r.predicted_from_second.as_ref(), r.agrees_from_second));
            }
            Err(why) => {
                let _ = writeln!(o, "no prediction from the {} traces: {why}", p.settings.1);
            }
        }
        traces_table(&mut o, &p.traces);
        o.push('\n');
    }
    o
}

/// Each trace's own predicted change (of its replays' means over the seeds), beside the free
/// memory its run began with and how much of it a movable request could only steal.
fn traces_table(o: &mut String, traces: &[TracePrediction]) {
    use std::fmt::Write as _;
    let _ = writeln!(
        o,
        "each trace's predicted change over its seeds; free pages at its start, those a movable request could only steal, and the share of its events lost"
    );
    let _ = write!(o, "{:<26} {:>10} {:>11} {:>6}", "trace", "free", "steal-only", "lost");
    for r in ROWS {
        let _ = write!(o, " {:>24}", r);
    }
    o.push('\n');
    let count = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
    for t in traces {
        let lost = lost_share(t.events, t.lost_events);
        let _ = write!(
            o,
            "{:<26} {:>10} {:>11} {:>6}",
            t.run,
            count(t.free),
            count(t.steal_only),
            format!("{:.0}%", 100.0 * lost)
        );
        for c in &t.changes {
            let _ = write!(o, " {:>24}", c.map_or("-".to_owned(), |v| format!("{v:+.1}%")));
        }
        o.push('\n');
    }
    let left_out: Vec<&str> = traces.iter().filter(|t| t.left_out).map(|t| t.run.as_str()).collect();
    if !left_out.is_empty() {
        let _ = writeln!(
            o,
            "left out of the predictions above: {} (each lost more than {}% of its events, and its setting has a trace that did not; \
             a free among them leaves its pages allocated in the replay)",
            left_out.join(", "),
            100.0 * LOSSY_SHARE
        );
    }
}

/// One table of `rows`, with the prediction `pick` chooses.
fn table(
    o: &mut String,
    rows: &[PredictionRow],
    pick: impl Fn(&PredictionRow) -> (Option<&PredictedChange>, Option<bool>),
) {
    use std::fmt::Write as _;
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:+.1}%"));
    let _ = writeln!(
        o,
        "{:<26} {:>12} {:>10} {:>12} {:>22} {:>8} {:>7}",
        "", "real change", "spread", "predicted", "predicted range", "ratio", "agrees"
    );
    for r in rows {
        let (predicted, agrees) = pick(r);
        let range = predicted
            .map_or("-".to_owned(), |p| format!("{:+.1}% .. {:+.1}%", p.per_pair.min, p.per_pair.max));
        let ratio = r
            .real_change
            .zip(predicted)
            .filter(|(real, _)| real.abs() > f64::EPSILON)
            .map_or("-".to_owned(), |(real, p)| format!("{:.2}", p.of_means / real));
        let agrees = match agrees {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let _ = writeln!(
            o,
            "{:<26} {:>12} {:>10} {:>12} {:>22} {:>8} {:>7}",
            r.name,
            pct(r.real_change),
            format!("{:.1}%", r.real_spread),
            pct(predicted.map(|p| p.of_means)),
            range,
            ratio,
            agrees
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_from_the_real_delta() {
        let d = VmStat::parse_delta(
            "thp_fault_alloc=90\nthp_fault_fallback=10\ncompact_migrate_scanned=5\ncompact_free_scanned=7\n\
             allocstall_normal=2\nallocstall_movable=3\npgscan_kswapd=11\n",
        )
        .unwrap();
        let v: Vec<Option<f64>> = ROWS.iter().map(|r| real_value(r, &d)).collect();
        assert_eq!(v, [Some(90.0), Some(12.0), Some(5.0), Some(11.0)]);
        assert_eq!(real_value("THP success %", &VmStat::parse_delta("pswpout=1\n").unwrap()), None);
    }

    /// Settings that differ in one knob are compared, the THP what-if the way round the trace
    /// can answer; two knobs at once, or `defrag_mode` backwards, are not.
    #[test]
    fn settings_that_differ_in_one_knob_are_planned() {
        let s = |label| RealSetting::parse(label).unwrap();
        assert_eq!(RealSetting::parse("dm2-always-madvise"), None);
        assert_eq!(RealSetting::parse("dm0-sometimes-madvise"), None);
        assert_eq!(RealSetting::parse("summary.txt"), None);
        let dm = plan(s("dm0-always-madvise"), s("dm1-always-madvise")).unwrap();
        assert_eq!(dm.replays, [("vanilla", None), ("defrag_mode", None)]);
        assert_eq!(dm.second.map(|(r, _)| r), Ok(dm.replays), "the defrag_mode traces replayed alike");
        assert_eq!(plan(s("dm1-always-madvise"), s("dm0-always-madvise")), None);
        let never = plan(s("dm1-always-madvise"), s("dm1-always-never")).unwrap();
        assert_eq!(never.replays[0], ("defrag_mode", None));
        assert_eq!(never.replays[1].1.map(|w| w.replayed.label()), Some("always/never".to_owned()));
        assert_eq!(never.knob, "THP always/madvise -> always/never");
        // A `never` trace has no huge page faults to replay under `madvise`.
        assert!(never.second.unwrap_err().contains("always/never"));
        // Two madvise-dependent settings answer each other.
        let back = plan(s("dm0-always-madvise"), s("dm0-always-defer+madvise")).unwrap().second.unwrap().0;
        assert_eq!(back[0].1.map(|w| w.replayed.label()), Some("always/madvise".to_owned()));
        assert_eq!(back[1], ("vanilla", None));
        // `always` cannot be replayed from a `madvise` recording; the other way round can.
        assert_eq!(plan(s("dm0-madvise-madvise"), s("dm0-always-madvise")), None);
        assert!(plan(s("dm0-always-madvise"), s("dm0-madvise-madvise")).is_some());
        assert_eq!(plan(s("dm0-always-madvise"), s("dm1-always-never")), None, "two knobs");
        assert_eq!(plan(s("dm0-always-madvise"), s("dm0-madvise-never")), None, "two THP knobs");
    }

    /// Free pages a movable request could only steal: other mobility types' lists below the
    /// pageblock order; a whole free block of any type, Movable lists and HighAtomic are not.
    #[test]
    fn steal_only_pages_are_foreign_lists_below_the_pageblock_order() {
        use pageblock_formats::pagetypeinfo::{PageTypeInfoNode, ZoneCounts};
        let types = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"];
        let mut free = vec![vec![0u64; 11]; types.len()];
        free[0][3] = 2; // 16 pages, steal-only
        free[0][9] = 1; // a whole Unmovable block: claimable
        free[1][0] = 5;
        free[2][8] = 1; // 256 pages, steal-only
        free[3][2] = 1;
        let zone = ZoneCounts { node: 0, zone: "Normal".into(), free, blocks: vec![1, 10, 1, 0, 0] };
        let info = PageTypeInfo { nodes: vec![PageTypeInfoNode::from_counts(9, 11, &types, &[zone], true)] };
        // As the file reads back (the kernel's text caps nothing this small).
        let read = PageTypeInfo::parse(&info.render()).unwrap();
        assert_eq!(start_free(&read), (16 + 512 + 5 + 256 + 4, 16 + 256));
    }

    /// A setting's traces that lost more than [`LOSSY_SHARE`] of their events are left out
    /// while one that did not remains; if none remains, all are counted.
    #[test]
    fn a_lossy_trace_is_left_out_only_beside_a_clean_one() {
        let trace = |events, lost_events| TraceReplays { pair: Vec::new(), start: None, events, lost_events };
        let lost = |ts: &[TraceReplays]| -> Vec<u64> { counted(ts).map(|t| t.lost_events).collect() };
        // 18% lost beside none; 0.1% exactly is not more than the share.
        assert_eq!(lost(&[trace(820, 180), trace(1000, 0)]), [0]);
        assert_eq!(lost(&[trace(999_000, 1000), trace(820, 180)]), [1000]);
        assert_eq!(
            lost(&[trace(998_999, 1001), trace(820, 180)]),
            [1001, 180],
            "every trace lossy: all count"
        );
        assert_eq!(lost(&[trace(0, 0)]), [0], "an empty trace lost nothing");
    }

    /// The prediction is the change of the replays' means, as the real change is of the runs'
    /// means: a pair whose first value is small moves the range, not the prediction.
    #[test]
    fn the_predicted_change_is_of_the_means_and_the_range_per_pair() {
        let p = PredictedChange::of(&[(1.0, 4.0), (100.0, 110.0), (99.0, 100.0)]).unwrap();
        assert!((p.of_means - 7.0).abs() < 1e-9, "200 -> 214: {}", p.of_means);
        assert!((p.per_pair.min - 100.0 / 99.0).abs() < 1e-9 && p.per_pair.max == 300.0, "{:?}", p.per_pair);
        assert!(p.per_pair.mean > 100.0, "the per-pair mean would be {}", p.per_pair.mean);
        // A pair from 0 has no change of its own but counts in the means.
        let z = PredictedChange::of(&[(0.0, 10.0), (10.0, 10.0)]).unwrap();
        assert_eq!((z.of_means, z.per_pair.values.clone()), (100.0, vec![0.0]));
        assert_eq!(PredictedChange::of(&[(0.0, 5.0)]), None);
        assert_eq!(PredictedChange::of(&[]), None);
    }

    #[test]
    fn change_is_relative_to_the_first() {
        assert_eq!(change(10.0, 15.0), Some(50.0));
        assert_eq!(change(0.0, 15.0), None);
    }

    #[test]
    fn a_directory_without_both_settings_is_refused() {
        let dir = std::env::temp_dir().join(format!("pageblock-predict-{}", std::process::id()));
        let run = dir.join("dm0-always-madvise/run1");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("vmstat-delta.txt"), "pswpout=0\n").unwrap();
        let err = predict(&dir, 1, &mut |_| {}).unwrap_err();
        assert!(err.contains("no two settings with runs that differ in one knob"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
