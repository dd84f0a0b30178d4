//! Reclaim's looks at the inactive lists: how the pages reclaim took off each list's tail
//! were judged — kept because young for the first time (`nr_ref_keep`), activated (used
//! again, dirty, under writeback), or reclaimed — and at what priority, the kernel's from
//! its `mm_vmscan_lru_shrink_inactive` records beside the simulation's from the same
//! counts of its own `shrink_inactive_list`.
//!
//! The vmstat delta says how much each side scanned; this says why: a kswapd that scans
//! millions of anonymous pages and keeps 96% of them (young huge pages, looked at once) is
//! a different machine from one that trims page cache at priority 10, though both free
//! about as much.

use std::fmt::Write as _;

use pageblock_core::VmEvent;
use pageblock_trace::{ShrinkInactive, Task};
use serde::Serialize;

use crate::thp::run_events::RunEvents;

/// One list kind's looks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Looks {
    /// Pages taken off the inactive list's tail and looked at (`nr_scanned`).
    pub scanned: u64,
    /// Kept on the inactive list, young for the first time (`nr_ref_keep`).
    pub kept_young: u64,
    /// Moved to the active list (`nr_activate_*`).
    pub activated: u64,
    /// Freed (`nr_reclaimed`).
    pub reclaimed: u64,
}

impl Looks {
    fn add(&mut self, s: &ShrinkInactive) {
        self.scanned += u64::from(s.scanned);
        self.kept_young += u64::from(s.ref_keep);
        self.activated += u64::from(s.activated);
        self.reclaimed += u64::from(s.reclaimed);
    }
}

/// One reclaimer's scanning and the priority it scanned at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Depth {
    /// Pages scanned.
    pub scanned: u64,
    /// Those pages, each times the priority it was scanned at: over `scanned`, the mean
    /// priority a page was scanned at (12 = lightest).
    pub priority_pages: u64,
}

impl Depth {
    /// The mean priority a page was scanned at, if any was.
    pub fn mean_priority(&self) -> Option<f64> {
        (self.scanned > 0).then(|| self.priority_pages as f64 / self.scanned as f64)
    }
}

/// Every look of a trace or a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimLooks {
    /// At the anonymous inactive list.
    pub anon: Looks,
    /// At the file inactive list.
    pub file: Looks,
    /// kswapd's.
    pub kswapd: Depth,
    /// Direct reclaimers' (every task but kswapd: the kernel's records of a task outside a
    /// direct reclaim window are a memory cgroup's reclaim, which the model does not have).
    pub direct: Depth,
}

impl ReclaimLooks {
    /// Adds one kernel record made in `task`.
    pub fn observe(&mut self, s: &ShrinkInactive, task: Task) {
        if s.file { &mut self.file } else { &mut self.anon }.add(s);
        let depth = if task == Task::Kswapd { &mut self.kswapd } else { &mut self.direct };
        depth.scanned += u64::from(s.scanned);
        depth.priority_pages += u64::from(s.scanned) * u64::from(s.priority);
    }

    /// The simulation's looks over a run, from its counters' increases.
    pub fn simulated(run: &RunEvents) -> ReclaimLooks {
        let e = |ev| run.get(ev);
        ReclaimLooks {
            anon: Looks {
                scanned: e(VmEvent::PgscanAnon),
                kept_young: e(VmEvent::NrRefKeepAnon),
                activated: e(VmEvent::NrActivateAnon),
                reclaimed: e(VmEvent::PgstealAnon),
            },
            file: Looks {
                scanned: e(VmEvent::PgscanFile),
                kept_young: e(VmEvent::NrRefKeepFile),
                activated: e(VmEvent::NrActivateFile),
                reclaimed: e(VmEvent::PgstealFile),
            },
            kswapd: Depth {
                scanned: e(VmEvent::PgscanKswapd),
                priority_pages: e(VmEvent::PgscanPriorityKswapd),
            },
            direct: Depth {
                scanned: e(VmEvent::PgscanDirect),
                priority_pages: e(VmEvent::PgscanPriorityDirect),
            },
        }
    }

    /// The report's rows: a label and the row's figure.
    pub fn rows(&self) -> Vec<(&'static str, Figure)> {
        let c = Figure::Count;
        vec![
            ("anon scanned", c(self.anon.scanned)),
            ("  kept young (nr_ref_keep)", c(self.anon.kept_young)),
            ("  activated", c(self.anon.activated)),
            ("  reclaimed", c(self.anon.reclaimed)),
            ("file scanned", c(self.file.scanned)),
            ("  kept young (nr_ref_keep)", c(self.file.kept_young)),
            ("  activated", c(self.file.activated)),
            ("  reclaimed", c(self.file.reclaimed)),
            ("kswapd scanned", c(self.kswapd.scanned)),
            ("  mean priority, by page", Figure::Priority(self.kswapd.mean_priority())),
            ("direct reclaim scanned", c(self.direct.scanned)),
            ("  mean priority, by page", Figure::Priority(self.direct.mean_priority())),
        ]
    }
}

/// One figure of a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    /// Pages.
    Count(u64),
    /// A mean priority (`None`: nothing scanned).
    Priority(Option<f64>),
}

impl Figure {
    /// The cell for a simulated figure, with its ratio to the real one where both are
    /// counts and the real one is not 0.
    pub fn cell(self, real: Option<Figure>) -> String {
        let mut s = self.to_string();
        if let (Figure::Count(v), Some(Figure::Count(r))) = (self, real) {
            if r > 0 {
                let _ = write!(s, " ({:.2}x)", v as f64 / r as f64);
            }
        }
        s
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Figure::Count(n) => write!(f, "{n}"),
            Figure::Priority(Some(p)) => write!(f, "{p:.1}"),
            Figure::Priority(None) => f.write_str("-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        scanned: u16,
        ref_keep: u16,
        activated: u16,
        reclaimed: u16,
        priority: u8,
        file: bool,
    ) -> ShrinkInactive {
        ShrinkInactive { scanned, reclaimed, activated, ref_keep, priority, file }
    }

    #[test]
    fn records_add_up_by_list_and_reclaimer() {
        let mut l = ReclaimLooks::default();
        l.observe(&rec(512, 512, 0, 0, 4, false), Task::Kswapd);
        l.observe(&rec(32, 0, 3, 29, 12, true), Task::Kswapd);
        l.observe(&rec(512, 0, 0, 512, 2, false), Task::DirectReclaim);
        assert_eq!(l.anon, Looks { scanned: 1024, kept_young: 512, activated: 0, reclaimed: 512 });
        assert_eq!(l.file, Looks { scanned: 32, kept_young: 0, activated: 3, reclaimed: 29 });
        let kswapd = l.kswapd.mean_priority().unwrap();
        assert!((kswapd - (512.0 * 4.0 + 32.0 * 12.0) / 544.0).abs() < 1e-9, "{kswapd}");
        assert_eq!(l.direct.mean_priority(), Some(2.0));
        assert_eq!(ReclaimLooks::default().kswapd.mean_priority(), None);
    }

    #[test]
    fn cells_give_the_ratio_to_a_real_count() {
        assert_eq!(Figure::Count(50).cell(Some(Figure::Count(100))), "50 (0.50x)");
        assert_eq!(Figure::Count(50).cell(Some(Figure::Count(0))), "50");
        assert_eq!(Figure::Priority(Some(10.26)).cell(Some(Figure::Priority(Some(4.0)))), "10.3");
        assert_eq!(Figure::Priority(None).cell(None), "-");
    }
}
