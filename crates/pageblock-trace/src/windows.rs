//! Direct reclaim and direct compaction, told apart per task.
//!
//! A page a workload task frees between its own `mm_vmscan_direct_reclaim_begin` and
//! `mm_vmscan_direct_reclaim_end` is one reclaim chose; between its own `mm_compaction_begin`
//! and `mm_compaction_end`, a migration source. A closed-loop replay leaves those frees to
//! the simulation's own reclaim and compaction ([`Task::DirectReclaim`],
//! [`Task::DirectCompaction`]), and replays the rest.
//!
//! The window belongs to the task (its pid), not to the CPU it began on. The task can be
//! preempted inside it, and the task that runs meanwhile frees its own memory (on a
//! 2-CPU recording under pressure, a 512 MiB burst's unmap landed inside another task's
//! compaction window on the same CPU); and it can move to another CPU before its `_end`,
//! which would leave a CPU-wide window open. Counted by CPU, C10's first `defrag_mode=0`
//! run gave 803k pages of workload frees to reclaim and compaction.
//!
//! A window whose `_end` was lost (ring-buffer overrun) stays open for that task only.

use crate::{RecordKind, Task, TraceRecord, VmscanEvent};
use pageblock_formats::compaction::CompactionEventKind;

/// The tasks inside direct reclaim and inside direct compaction, by pid (a handful at most:
/// one per task that stalled).
#[derive(Clone, Debug, Default)]
pub(crate) struct Windows {
    reclaiming: Vec<u32>,
    compacting: Vec<u32>,
}

impl Windows {
    /// Track `r`, made by task `pid`, and mark it [`Task::DirectCompaction`] or
    /// [`Task::DirectReclaim`] if that task is inside such a window (a `_begin` and an `_end`
    /// belong to their window).
    #[inline]
    pub(crate) fn classify(&mut self, r: &mut TraceRecord, pid: u32) {
        if r.task != Task::Other {
            return;
        }
        // The window the record opens or closes, if any: (reclaim's or compaction's, opens).
        let edge = match r.kind {
            RecordKind::Vmscan(VmscanEvent::DirectReclaimBegin { .. }) => Some((true, true)),
            RecordKind::Vmscan(VmscanEvent::DirectReclaimEnd) => Some((true, false)),
            RecordKind::Compaction(CompactionEventKind::Begin) => Some((false, true)),
            RecordKind::Compaction(CompactionEventKind::End) => Some((false, false)),
            // The common case: no task inside either window.
            _ if self.reclaiming.is_empty() && self.compacting.is_empty() => return,
            _ => None,
        };
        if let Some((reclaim, true)) = edge {
            let open = self.open(reclaim);
            if !open.contains(&pid) {
                open.push(pid);
            }
        }
        if self.compacting.contains(&pid) {
            r.task = Task::DirectCompaction;
        } else if self.reclaiming.contains(&pid) {
            r.task = Task::DirectReclaim;
        }
        if let Some((reclaim, false)) = edge {
            self.open(reclaim).retain(|&p| p != pid);
        }
    }

    /// The tasks inside direct reclaim (`reclaim`) or inside direct compaction.
    fn open(&mut self, reclaim: bool) -> &mut Vec<u32> {
        if reclaim {
            &mut self.reclaiming
        } else {
            &mut self.compacting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GfpId;

    fn rec(cpu: u16, task: Task, kind: RecordKind) -> TraceRecord {
        TraceRecord { time_us: 0, pfn: 0, cpu, task, kind }
    }

    fn free(cpu: u16) -> TraceRecord {
        rec(cpu, Task::Other, RecordKind::Free { order: 0 })
    }

    fn begin() -> RecordKind {
        RecordKind::Vmscan(VmscanEvent::DirectReclaimBegin { order: 0, gfp: GfpId(0) })
    }

    /// The window is the task's: another task freeing on its CPU meanwhile frees its own
    /// memory; the task itself, moved to another CPU, frees reclaim's; its `_end` on that
    /// CPU closes the window everywhere.
    #[test]
    fn a_window_follows_its_task_not_its_cpu() {
        let mut w = Windows::default();
        let (reclaimer, other) = (7, 8);
        let mut r = rec(0, Task::Other, begin());
        w.classify(&mut r, reclaimer);
        assert_eq!(r.task, Task::DirectReclaim, "the begin is the window's");
        let mut r = free(0);
        w.classify(&mut r, other);
        assert_eq!(r.task, Task::Other, "preempted: the other task's free is its own");
        let mut r = free(1);
        w.classify(&mut r, reclaimer);
        assert_eq!(r.task, Task::DirectReclaim, "moved to CPU 1, still reclaiming");
        let mut r = rec(1, Task::Other, RecordKind::Vmscan(VmscanEvent::DirectReclaimEnd));
        w.classify(&mut r, reclaimer);
        assert_eq!(r.task, Task::DirectReclaim, "the end is the window's");
        for (cpu, pid) in [(0, reclaimer), (0, other), (1, reclaimer)] {
            let mut r = free(cpu);
            w.classify(&mut r, pid);
            assert_eq!(r.task, Task::Other, "closed on every CPU");
        }
    }

    /// Compaction inside reclaim's window counts as compaction; the daemons are left as
    /// they are; an `_end` with no `_begin` (lost, or before the trace) opens nothing.
    #[test]
    fn compaction_reclaim_and_the_daemons() {
        let mut w = Windows::default();
        let mut r = rec(0, Task::Other, RecordKind::Compaction(CompactionEventKind::End));
        w.classify(&mut r, 3);
        assert_eq!(r.task, Task::Other);
        for kind in [begin(), RecordKind::Compaction(CompactionEventKind::Begin)] {
            let mut r = rec(0, Task::Other, kind);
            w.classify(&mut r, 3);
        }
        let mut r = free(0);
        w.classify(&mut r, 3);
        assert_eq!(r.task, Task::DirectCompaction);
        let mut r = rec(0, Task::Kswapd, RecordKind::Free { order: 0 });
        w.classify(&mut r, 3);
        assert_eq!(r.task, Task::Kswapd, "a pid reused by a daemon's comm stays the daemon's");
        let mut r = rec(0, Task::Other, RecordKind::Compaction(CompactionEventKind::End));
        w.classify(&mut r, 3);
        let mut r = free(0);
        w.classify(&mut r, 3);
        assert_eq!(r.task, Task::DirectReclaim, "compaction over, reclaim still on");
    }
}
