//! `bench fastpath`'s text: the table, the fast path's goals (cases a, b, e and f) checked
//! against this run's medians, and the bulk-free settings.

use std::fmt::Write as _;

use super::{CaseResult, FastpathConfig, FastpathReport, CASES};

fn result<'a>(r: &'a FastpathReport, allocator: &str, case: &str) -> Option<&'a CaseResult> {
    r.results.iter().find(|c| c.allocator == allocator && c.case == case)
}

fn value(r: &FastpathReport, allocator: &str, case: &str) -> f64 {
    result(r, allocator, case).and_then(|c| c.ns_per_op.or(c.mops_per_s)).unwrap_or(f64::NAN)
}

/// `min..max` of a result's repetitions: how far one run's median can be from another's.
fn spread(r: &FastpathReport, allocator: &str, case: &str) -> String {
    let samples = result(r, allocator, case).map(|c| &c.samples);
    let min = samples.into_iter().flatten().copied().fold(f64::INFINITY, f64::min);
    let max = samples.into_iter().flatten().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.1}..{max:.1}")
}

/// `min..max` over the repetitions of `peer`'s time over pageblock's in `case`, each
/// repetition's pair measured seconds apart: the spread of the speed-up with the machine's
/// slow and fast phases paired instead of mixed.
fn ratio_spread(r: &FastpathReport, peer: &str, case: &str) -> String {
    let samples = |a| result(r, a, case).map(|c| c.samples.as_slice()).unwrap_or_default();
    let ratios = samples(peer).iter().zip(samples("pageblock")).map(|(p, b)| p / b);
    let (min, max) = ratios.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    format!("{min:.1}..{max:.1}")
}

/// The table of medians per case and allocator, the fast path's goals (cases a, b, e and f)
/// checked against them, and pageblock's bulk-free settings side by side.
pub fn render(cfg: &FastpathConfig, r: &FastpathReport) -> String {
    let mut out = String::new();
    let peers = ["pageblock", "buddy_system_allocator", "buddy-alloc"];
    let _ = writeln!(
        out,
        "fast path, 4 GiB region, median of {} repetitions (wall clock: noisy); pageblock's memmap: {:?}\n",
        cfg.reps, cfg.memmap_layout
    );
    let _ = writeln!(out, "{:<8} {:>14} {:>24} {:>14}   unit", "case", peers[0], peers[1], peers[2]);
    for case in CASES {
        let unit = if case.starts_with("e_") { "Mops/s (higher is better)" } else { "ns/op" };
        let v: Vec<f64> = peers.iter().map(|p| value(r, p, case)).collect();
        let _ = writeln!(out, "{case:<8} {:>14.1} {:>24.1} {:>14.1}   {unit}", v[0], v[1], v[2]);
    }
    let a = value(r, "pageblock", "a");
    let bsa_a = value(r, "buddy_system_allocator", "a");
    let b_free = value(r, "pageblock", "b_free");
    let bsa_b_free = value(r, "buddy_system_allocator", "b_free");
    let e_a = value(r, "pageblock", "e_a");
    let f_free = value(r, "pageblock", "f_free");
    let bsa_f_free = value(r, "buddy_system_allocator", "f_free");
    let single = 1000.0 / a;
    let _ = writeln!(out, "\ngoals, this run:");
    let goal = |ok: bool| if ok { "met" } else { "NOT met" };
    let _ = writeln!(
        out,
        "  a: {a:.1} ns/pair, {:.1}x faster than buddy_system_allocator (goal: < 15 ns and >= 10x): {}",
        bsa_a / a,
        goal(a < 15.0 && bsa_a / a >= 10.0)
    );
    let _ = writeln!(
        out,
        "  b: free {b_free:.1} ns, {:.1}x faster than buddy_system_allocator (goal: >= 5x): {}",
        bsa_b_free / b_free,
        goal(bsa_b_free / b_free >= 5.0)
    );
    let _ = writeln!(
        out,
        "  e_a: {e_a:.1} Mpairs/s on 2 threads = {:.2}x the 1-thread rate {single:.1} (goal: >= 1.8x): {}",
        e_a / single,
        goal(e_a / single >= 1.8)
    );
    let _ = writeln!(
        out,
        "  f: random-order free {f_free:.1} ns (repetitions {}), {:.1}x faster than \
         buddy_system_allocator (repetitions {}) (goal: >= 5x and <= 88 ns, twice the 44 ns LLFree \
         took on the reference machine): {}",
        spread(r, "pageblock", "f_free"),
        bsa_f_free / f_free,
        ratio_spread(r, "buddy_system_allocator", "f_free"),
        goal(bsa_f_free / f_free >= 5.0 && f_free <= 88.0)
    );
    let _ = writeln!(out, "pageblock's case f frees by memmap layout and bulk-free setting, same run:");
    let before = r.bulk_free.first().map_or(f64::NAN, |b| b.ns_per_free);
    for b in &r.bulk_free {
        let _ = writeln!(
            out,
            "  {:<30} {:>7.1} ns/free  ({:.2}x the first)",
            b.setting,
            b.ns_per_free,
            before / b.ns_per_free
        );
    }
    // The batch runs in the table's layout and policy, so the table's f_free is its
    // per-page twin.
    let batch = r.free_pages_batch.ns_per_free;
    let _ = writeln!(
        out,
        "pageblock's case f in one free_pages_batch call: {batch:.1} ns/free ({:.2}x its per-page frees, same run)",
        f_free / batch
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastpath::BulkFreeResult;

    fn case(allocator: &'static str, samples: &[f64]) -> CaseResult {
        CaseResult {
            allocator,
            case: "f_free",
            ns_per_op: Some(0.0),
            mops_per_s: None,
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn ratio_spread_pairs_each_repetition_with_its_own() {
        let r = FastpathReport {
            results: vec![
                case("pageblock", &[60.0, 80.0, 70.0]),
                case("buddy_system_allocator", &[300.0, 480.0, 280.0]),
            ],
            bulk_free: Vec::new(),
            free_pages_batch: BulkFreeResult { setting: "", ns_per_free: 0.0, samples: Vec::new() },
        };
        // 300/60, 480/80, 280/70: paired, not the extremes of each list (280/80 = 3.5).
        assert_eq!(ratio_spread(&r, "buddy_system_allocator", "f_free"), "4.0..6.0");
    }
}
