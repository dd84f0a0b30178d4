//! Which tracepoints a recording enables: an event list (`kmem:mm_page_alloc,compaction:*`)
//! resolved against the `events/` tree of a tracefs.

use super::Tracefs;

/// Events resolved from a list: the directories under `events/` that exist, and the list
/// items that matched nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSet {
    /// `SYSTEM/EVENT` paths under `events/`, in list order, without duplicates.
    pub events: Vec<String>,
    /// Items of the list that named no existing event.
    pub missing: Vec<String>,
}

/// Resolves a comma-separated list. Items: `SYSTEM:EVENT` (or `SYSTEM/EVENT`), `SYSTEM:*`
/// or `SYSTEM` (every event of the system), or a bare `EVENT` of any system.
pub fn resolve_events(fs: &Tracefs, list: &str) -> Result<EventSet, String> {
    let mut set = EventSet::default();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let found = resolve_item(fs, item)?;
        if found.is_empty() {
            set.missing.push(item.to_owned());
        }
        for event in found {
            if !set.events.contains(&event) {
                set.events.push(event);
            }
        }
    }
    Ok(set)
}

fn is_event(fs: &Tracefs, rel: &str) -> bool {
    fs.exists(&format!("events/{rel}/enable")) && fs.exists(&format!("events/{rel}/format"))
}

/// The events of directory `events/SYSTEM`.
fn system_events(fs: &Tracefs, system: &str) -> Result<Vec<String>, String> {
    let names = fs.list(&format!("events/{system}"))?;
    Ok(names.into_iter().map(|n| format!("{system}/{n}")).filter(|rel| is_event(fs, rel)).collect())
}

fn resolve_item(fs: &Tracefs, item: &str) -> Result<Vec<String>, String> {
    if let Some((system, event)) = item.split_once([':', '/']) {
        if event == "*" {
            return if fs.path(&format!("events/{system}")).is_dir() {
                system_events(fs, system)
            } else {
                Ok(Vec::new())
            };
        }
        let rel = format!("{system}/{event}");
        return Ok(if is_event(fs, &rel) { vec![rel] } else { Vec::new() });
    }
    if fs.path(&format!("events/{item}")).is_dir() {
        return system_events(fs, item);
    }
    let mut found = Vec::new();
    for system in fs.list("events")? {
        let rel = format!("{system}/{item}");
        if is_event(fs, &rel) {
            found.push(rel);
        }
    }
    Ok(found)
}
