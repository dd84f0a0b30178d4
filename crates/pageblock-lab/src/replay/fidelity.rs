//! How far the replay under the traced kernel's own policy is from that kernel: the
//! simulation's own kernel events and its free memory at the end, next to the real trace's
//! events and the real machine's `after` snapshot, with the ratio per row. The own policy is
//! `vanilla`, or `defrag_mode` for a trace made under `vm.defrag_mode=1` ([`own_policy`]):
//! measured against a kernel running another policy, the distance would
//! mix the model's error with the policies' difference.

use serde::Serialize;

use super::engine::Replayed;
use super::kmem_counts::KmemCounts;
use super::load::LoadedTrace;
use super::thp_settings::RealSetting;
use super::type_samples::TypeSamples;
use super::zone_samples::{self, ZoneSamples};

/// One row: a quantity as simulated and as it really was.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FidelityRow {
    /// What is compared.
    pub name: String,
    /// The row this one counts a part of (`fragmenting` of `mm_page_alloc_extfrag`).
    pub part_of: Option<&'static str>,
    /// The simulation's value.
    pub simulated: u64,
    /// The real kernel's value.
    pub real: u64,
    /// simulated / real (`None` when real is 0).
    pub ratio: Option<f64>,
}

/// The fidelity report of one replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fidelity {
    /// The policy compared: the traced kernel's own ([`own_policy`]).
    pub policy: &'static str,
    /// The rows, events first, then free pages per order at the end.
    pub rows: Vec<FidelityRow>,
    /// The zones during the run, sampled and simulated (`null` without `buddyinfo.samples`).
    pub zones: Option<ZoneSamples>,
    /// The zones' migratetypes during the run, sampled and simulated (`null` without
    /// `pagetypeinfo.samples`).
    pub zone_types: Option<TypeSamples>,
}

fn row(name: impl Into<String>, simulated: u64, real: u64) -> FidelityRow {
    let ratio = (real != 0).then(|| simulated as f64 / real as f64);
    FidelityRow { name: name.into(), part_of: None, simulated, real, ratio }
}

/// A row that counts a part of the row `of`.
fn part(of: &'static str, name: &str, simulated: u64, real: u64) -> FidelityRow {
    FidelityRow { part_of: Some(of), ..row(name, simulated, real) }
}

/// The policy of the kernel that made trace `t`: `defrag_mode` if it ran under
/// `vm.defrag_mode=1`, as `record`'s copy `vm.defrag_mode` beside the trace says, or else
/// the setting a `lab real` run's `run.json` names; `vanilla` otherwise (a trace that says
/// neither: `defrag_mode` is off by default). A copy that is not 0 or 1 is an error.
pub fn own_policy(t: &LoadedTrace) -> Result<&'static str, String> {
    let dir = t.file.parent().unwrap_or(std::path::Path::new("."));
    let copy = dir.join("vm.defrag_mode");
    let defrag_mode = if copy.is_file() {
        let text = std::fs::read_to_string(&copy).map_err(|e| format!("{}: {e}", copy.display()))?;
        match text.trim() {
            "0" => false,
            "1" => true,
            other => return Err(format!("{}: not a defrag_mode (0 or 1): {other:?}", copy.display())),
        }
    } else {
        RealSetting::recorded(dir)?.is_some_and(|s| s.defrag_mode == 1)
    };
    Ok(if defrag_mode { "defrag_mode" } else { "vanilla" })
}

/// The fidelity rows of replay `r` (under `policy`) of trace `t`, with the zones'
/// migratetypes during the run as the replay's result already compared them.
pub fn table(
    t: &LoadedTrace,
    policy: &'static str,
    r: &Replayed,
    zone_types: Option<TypeSamples>,
) -> Fidelity {
    let (e, sim, real) = (&r.events, KmemCounts::simulated(&r.events), &t.counts.kmem);
    let mut rows = vec![
        row("mm_page_alloc", sim.mm_page_alloc, real.mm_page_alloc),
        row("mm_page_free", sim.mm_page_free, real.mm_page_free),
        row("mm_page_alloc_zone_locked", sim.mm_page_alloc_zone_locked, real.mm_page_alloc_zone_locked),
        part(
            "mm_page_alloc_zone_locked",
            "percpu_refill=1",
            e.zone_locked_refill,
            t.counts.zone_locked_refill,
        ),
        row("mm_page_pcpu_drain", sim.mm_page_pcpu_drain, real.mm_page_pcpu_drain),
        row("mm_page_alloc_extfrag", sim.mm_page_alloc_extfrag, real.mm_page_alloc_extfrag),
        part("mm_page_alloc_extfrag", "fragmenting", e.extfrag_fragmenting, t.counts.extfrag_fragmenting),
        part(
            "mm_page_alloc_extfrag",
            "change_ownership",
            e.extfrag_change_ownership,
            t.counts.extfrag_change_ownership,
        ),
    ];
    if let (Some(before), Some(after)) = (&t.snapshots.before_vmstat, &t.snapshots.after_vmstat) {
        let delta = |names: &[&str]| -> u64 {
            let sum =
                |v: &pageblock_formats::vmstat::VmStat| names.iter().filter_map(|n| v.get(n)).sum::<u64>();
            sum(after).saturating_sub(sum(before))
        };
        let pgalloc = ["pgalloc_dma", "pgalloc_dma32", "pgalloc_normal", "pgalloc_movable", "pgalloc_device"];
        rows.push(row("pages allocated (pgalloc_*)", r.pgalloc_pages, delta(&pgalloc)));
        rows.push(row("pages freed (pgfree)", r.pgfree_pages, delta(&["pgfree"])));
    }
    if let Some(after) = &t.snapshots.after_buddyinfo {
        let node = r.node.shared();
        let sim_buddy = pageblock_core::show::buddyinfo(node);
        let sim_zone = |name: &str, o: usize| {
            sim_buddy
                .zones
                .iter()
                .find(|z| z.zone == name)
                .and_then(|z| z.nr_free.get(o).copied())
                .unwrap_or(0)
        };
        let (mut sim_pages, mut real_pages) = (0, 0);
        for o in 0..=node.max_order() as usize {
            let real: u64 = after
                .zones
                .iter()
                .filter(|z| z.node == 0)
                .map(|z| z.nr_free.get(o).copied().unwrap_or(0))
                .sum();
            let sim: u64 = after.zones.iter().filter(|z| z.node == 0).map(|z| sim_zone(&z.zone, o)).sum();
            rows.push(row(format!("free blocks of order {o} at the end"), sim, real));
            sim_pages += sim << o;
            real_pages += real << o;
        }
        rows.push(row("free pages at the end", sim_pages, real_pages));
    }
    if let Some(after) = &t.snapshots.after_zoneinfo {
        let real: i64 = after
            .zones
            .iter()
            .filter(|z| z.node == 0)
            .filter_map(|z| z.populated.as_ref())
            .flat_map(|p| p.pagesets.iter().map(|s| i64::from(s.count)))
            .sum();
        rows.push(row(
            "pages on per-CPU lists at the end",
            r.node.shared().nr_pcp_pages(),
            real.max(0) as u64,
        ));
    }
    let zones = t
        .snapshots
        .buddyinfo_samples
        .as_ref()
        .map(|real| zone_samples::compare(real, &r.zone_samples, r.node.shared().pageblock_order()));
    Fidelity { policy, rows, zones, zone_types }
}
