//! What a `lab real` run measures beside the trace: the vmstat delta (after − before, in the
//! kernel's names), the mTHP counters of every huge page size, and the CPU time of kswapd0
//! and kcompactd0.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The vmstat rows issue 23 compares, in its order.
pub const VMSTAT_ROWS: [&str; 17] = [
    "compact_stall",
    "compact_fail",
    "compact_success",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "compact_daemon_migrate_scanned",
    "compact_daemon_free_scanned",
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "pgscan_direct",
    "pgsteal_direct",
    "allocstall_movable",
    "allocstall_normal",
    "pgmigrate_success",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "pswpout",
];

/// `name value` lines (`/proc/vmstat`, or the mTHP counters written the same way).
pub fn parse_counters(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_owned(), f.next()?.parse().ok()?))
        })
        .collect()
}

/// Whether `name` is a gauge (`nr_free_pages`, mTHP's `hugepages-2048kB/nr_anon`): a level,
/// not a count of events.
fn is_gauge(name: &str) -> bool {
    name.rsplit('/').next().is_some_and(|n| n.starts_with("nr_"))
}

/// After − before for every event counter in `after` (gauges are left out, and so is a
/// counter that went down, which only a reset can do).
pub fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter(|(k, _)| !is_gauge(k))
        .filter_map(|(k, &a)| {
            let b = before.get(k).copied().unwrap_or(0);
            (a >= b).then(|| (k.clone(), a - b))
        })
        .collect()
}

/// `name=value` lines, as `replay` reads a `vmstat-delta.txt`.
pub fn render_delta(delta: &BTreeMap<String, u64>) -> String {
    let mut s = String::new();
    for (k, v) in delta {
        let _ = writeln!(s, "{k}={v}");
    }
    s
}

/// `name value` lines.
pub fn render_counters(counters: &BTreeMap<String, u64>) -> String {
    let mut s = String::new();
    for (k, v) in counters {
        let _ = writeln!(s, "{k} {v}");
    }
    s
}

/// The mTHP counters under `thp` (`/sys/kernel/mm/transparent_hugepage`): every
/// `hugepages-SIZE/stats/NAME`, keyed `hugepages-SIZE/NAME`. A kernel without them gives none.
pub fn mthp_counters(thp: &Path) -> BTreeMap<String, u64> {
    let mut all = BTreeMap::new();
    let Ok(sizes) = std::fs::read_dir(thp) else { return all };
    for size in sizes.flatten() {
        let name = size.file_name().to_string_lossy().into_owned();
        if !name.starts_with("hugepages-") {
            continue;
        }
        let Ok(stats) = std::fs::read_dir(size.path().join("stats")) else { continue };
        for stat in stats.flatten() {
            let value = std::fs::read_to_string(stat.path()).ok().and_then(|t| t.trim().parse().ok());
            if let Some(v) = value {
                all.insert(format!("{name}/{}", stat.file_name().to_string_lossy()), v);
            }
        }
    }
    all
}

/// CPU time (user + system, clock ticks) of every process named `comm` under `proc`.
pub fn cpu_ticks(proc: &Path, comm: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir(proc) else { return 0 };
    let mut ticks = 0;
    for entry in dir.flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        if head.split_once('(').map(|(_, c)| c) != Some(comm) {
            continue;
        }
        // After the command: state is field 3, utime 14 and stime 15.
        let f: Vec<&str> = rest.split_whitespace().collect();
        ticks += f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    ticks
}

/// Clock ticks per second.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).unwrap_or(100).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delta_counts_events_and_leaves_gauges_out() {
        let before = parse_counters("nr_free_pages 900\nnr_dirtied 1\npgscan_kswapd 10\nthp_fault_alloc 3\n");
        let after = parse_counters(
            "nr_free_pages 800\nnr_dirtied 9\npgscan_kswapd 25\nthp_fault_alloc 3\npswpout 4\n",
        );
        let d = delta(&before, &after);
        assert_eq!(render_delta(&d), "pgscan_kswapd=15\npswpout=4\nthp_fault_alloc=0\n");
    }

    #[test]
    fn mthp_counters_are_read_per_size() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("hugepages-2048kB/stats");
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::write(stats.join("anon_fault_alloc"), "12\n").unwrap();
        std::fs::create_dir_all(dir.path().join("khugepaged")).unwrap();
        let c = mthp_counters(dir.path());
        assert_eq!(
            c.into_iter().collect::<Vec<_>>(),
            vec![("hugepages-2048kB/anon_fault_alloc".to_owned(), 12)]
        );
    }

    #[test]
    fn cpu_ticks_add_user_and_system_time_of_the_named_process() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("42");
        std::fs::create_dir(&p).unwrap();
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        std::fs::write(p.join("stat"), "42 (kswapd0) S 2 0 0 0 -1 0 0 0 0 0 7 5 0 0\n").unwrap();
        let q = dir.path().join("43");
        std::fs::create_dir(&q).unwrap();
        std::fs::write(q.join("stat"), "43 (a) b) S 2 0 0 0 -1 0 0 0 0 0 100 100 0 0\n").unwrap();
        assert_eq!(cpu_ticks(dir.path(), "kswapd0"), 12);
        assert_eq!(cpu_ticks(dir.path(), "a) b"), 200);
    }
}
