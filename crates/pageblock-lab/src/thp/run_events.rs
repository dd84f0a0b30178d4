//! A run's vm event counts, read by [`VmEvent`]: every counter's increase over the run is
//! kept, so a table row names its counter by type (a misspelt name does not compile) and
//! never reads a counter that was not collected. The JSON carries the [`RUN_EVENTS`] only, by
//! name.

use pageblock_core::{NodeShared, VmEvent};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The vm events a run's JSON reports, by their `/proc/vmstat` (or pageblock) names.
pub const RUN_EVENTS: [VmEvent; 33] = [
    VmEvent::ThpFaultAlloc,
    VmEvent::ThpFaultFallback,
    VmEvent::CompactStall,
    VmEvent::CompactFail,
    VmEvent::CompactSuccess,
    VmEvent::CompactMigrateScanned,
    VmEvent::CompactFreeScanned,
    VmEvent::CompactDaemonWake,
    VmEvent::CompactDaemonMigrateScanned,
    VmEvent::CompactDaemonFreeScanned,
    VmEvent::PgMigrateSuccess,
    VmEvent::PgMigrateFail,
    VmEvent::PgscanKswapd,
    VmEvent::PgstealKswapd,
    VmEvent::PgscanDirect,
    VmEvent::PgstealDirect,
    VmEvent::Pswpout,
    VmEvent::Pswpin,
    VmEvent::WorkingsetRefaultFile,
    VmEvent::WorkingsetRefaultAnon,
    VmEvent::Pageoutrun,
    VmEvent::PgAllocFail,
    VmEvent::PgAllocOom,
    VmEvent::Extfrag,
    VmEvent::ClaimerUnmovable,
    VmEvent::ClaimerMovable,
    VmEvent::ClaimerReclaimable,
    VmEvent::StealUnmovable,
    VmEvent::StealMovable,
    VmEvent::StealReclaimable,
    VmEvent::PolluteUnmovable,
    VmEvent::PolluteMovable,
    VmEvent::PolluteReclaimable,
];

/// Every vm event counter of a node at one moment, indexed by [`VmEvent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSnapshot(Vec<u64>);

impl EventSnapshot {
    /// The node's counters now.
    pub fn of(node: &NodeShared) -> EventSnapshot {
        EventSnapshot(VmEvent::ALL.iter().map(|&e| node.event(e)).collect())
    }

    /// Each counter's increase since `before`.
    pub fn since(&self, before: &EventSnapshot) -> RunEvents {
        RunEvents(self.0.iter().zip(&before.0).map(|(a, b)| a - b).collect())
    }
}

/// Each vm event counter's increase over a run (serialized as the [`RUN_EVENTS`]' increases
/// by name, in name order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEvents(Vec<u64>);

impl Default for RunEvents {
    fn default() -> RunEvents {
        RunEvents(vec![0; VmEvent::ALL.len()])
    }
}

impl RunEvents {
    /// `e`'s increase over the run.
    pub fn get(&self, e: VmEvent) -> u64 {
        self.0[e as usize]
    }
}

impl Serialize for RunEvents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // In name order, as the map of names this replaced wrote them.
        let mut events = RUN_EVENTS;
        events.sort_unstable_by_key(|e| e.name());
        let mut map = s.serialize_map(Some(events.len()))?;
        for e in events {
            map.serialize_entry(e.name(), &self.get(e))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::{Gfp, Node, NodeConfig, Policy};

    #[test]
    fn every_counter_is_read_by_its_event_not_only_the_json_ones() {
        let node = Node::new(NodeConfig::x86_64(64 << 20, 2), Policy::default()).unwrap();
        let before = EventSnapshot::of(node.shared());
        // Order 4: not cached per CPU, so the zone counts it in `pgalloc`.
        let pfn = node.alloc_pages(0, 4, Gfp::KERNEL).unwrap();
        node.free_pages(0, pfn, 4).unwrap();
        let run = EventSnapshot::of(node.shared()).since(&before);
        // PgAlloc is not one of RUN_EVENTS: a lookup keyed by the JSON's names read 0 here.
        assert!(!RUN_EVENTS.contains(&VmEvent::PgAlloc));
        assert!(run.get(VmEvent::PgAlloc) > 0, "the run allocated");
        for &e in VmEvent::ALL {
            assert_eq!(run.get(e), node.shared().event(e) - before.0[e as usize], "{}", e.name());
        }
    }

    #[test]
    fn the_json_names_the_run_events_only() {
        let v = serde_json::to_value(RunEvents::default()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want: Vec<&str> = RUN_EVENTS.iter().map(|e| e.name()).collect();
        want.sort_unstable();
        assert_eq!(keys, want);
    }
}
