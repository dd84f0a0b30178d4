//! The ring buffer's per-CPU counters (`per_cpu/cpuN/stats`): how many events were
//! overwritten before anyone read them.

use super::Tracefs;

/// One CPU's ring buffer counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// The CPU number.
    pub cpu: u32,
    /// `overrun`: events overwritten because the buffer was full (lost to the reader).
    pub overrun: u64,
    /// `dropped events`: events refused because the buffer was full (overwrite off).
    pub dropped: u64,
}

impl CpuStats {
    /// Parses a `stats` file (`entries: 0\noverrun: 12\n...`); absent keys count 0.
    pub fn parse(cpu: u32, text: &str) -> Self {
        let mut stats = CpuStats { cpu, ..CpuStats::default() };
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim().parse::<u64>().unwrap_or(0);
            match key.trim() {
                "overrun" => stats.overrun = value,
                "dropped events" => stats.dropped = value,
                _ => {}
            }
        }
        stats
    }
}

/// The counters of every CPU under `per_cpu/`, by CPU number.
pub fn cpu_stats(fs: &Tracefs) -> Result<Vec<CpuStats>, String> {
    let mut all = Vec::new();
    for name in fs.list("per_cpu")? {
        let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else { continue };
        all.push(CpuStats::parse(cpu, &fs.read(&format!("per_cpu/{name}/stats"))?));
    }
    all.sort_by_key(|s| s.cpu);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_stats_file() {
        let text = "entries: 5\noverrun: 1234\ncommit overrun: 0\nbytes: 960\n\
                    oldest event ts:   553.071199\nnow ts:   553.071199\ndropped events: 7\nread events: 9\n";
        assert_eq!(CpuStats::parse(1, text), CpuStats { cpu: 1, overrun: 1234, dropped: 7 });
        assert_eq!(CpuStats::parse(0, ""), CpuStats::default());
    }
}
