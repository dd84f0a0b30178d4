//! What a `lab real` run measures beside the trace and its `/proc` snapshots: the mTHP
//! counters of every huge page size and the CPU time of kswapd0 and kcompactd0.

use std::path::Path;

use pageblock_formats::vmstat::VmStat;

/// The mTHP counters under `thp` (`/sys/kernel/mm/transparent_hugepage`): every
/// `hugepages-SIZE/stats/NAME`, named `hugepages-SIZE/NAME`, in name order, in vmstat's shape.
/// A kernel without them gives none.
pub fn mthp_counters(thp: &Path) -> VmStat {
    let mut all = std::collections::BTreeMap::new();
    let Ok(sizes) = std::fs::read_dir(thp) else { return VmStat::default() };
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
    VmStat { items: all.into_iter().collect() }
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
    fn mthp_counters_are_read_per_size() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("hugepages-2048kB/stats");
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::write(stats.join("anon_fault_alloc"), "12\n").unwrap();
        std::fs::create_dir_all(dir.path().join("khugepaged")).unwrap();
        let c = mthp_counters(dir.path());
        assert_eq!(c.render(), "hugepages-2048kB/anon_fault_alloc 12\n");
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
