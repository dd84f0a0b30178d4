//! `/proc/vmstat`: one `name value` line per counter.
//!
//! Printed by `vmstat_show()` in `mm/vmstat.c`: the item name, then `seq_put_decimal_ull(m, " ",
//! value)`, then `'\n'` — that is `"%s %lu\n"`. Order: zone stats, NUMA events, node stats,
//! `nr_dirty_threshold`, `nr_dirty_background_threshold`, `nr_memmap_pages`,
//! `nr_memmap_boot_pages`, then the VM events, and finally the deprecated `nr_unstable 0` that
//! the kernel always appends. The names change with every release, so the model is an ordered
//! list, not a struct.

use std::fmt;

use crate::text::{self, quote};
use crate::ParseError;

/// The counters a run under memory pressure is judged by (reclaim, compaction, THP, swap, and
/// how often kcompactd and kswapd ran: `compact_daemon_wake`, `pageoutrun`), in the kernel's
/// names: what `lab real` tables and `replay` compares with the real delta.
pub const PRESSURE_ROWS: [&str; 21] = [
    "compact_stall",
    "compact_fail",
    "compact_success",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "compact_daemon_migrate_scanned",
    "compact_daemon_free_scanned",
    "compact_daemon_wake",
    "pageoutrun",
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "pgscan_direct",
    "pgsteal_direct",
    "allocstall_dma",
    "allocstall_dma32",
    "allocstall_normal",
    "allocstall_movable",
    "pgmigrate_success",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "pswpout",
];

/// THP success, percent: faults served with a huge page out of all huge page faults,
/// `thp_fault_alloc / (thp_fault_alloc + thp_fault_fallback)`, from a counter lookup (a
/// missing counter counts 0; `None` without any fault).
pub fn thp_success_percent(get: impl Fn(&str) -> Option<u64>) -> Option<f64> {
    let alloc = get("thp_fault_alloc").unwrap_or(0);
    let fallback = get("thp_fault_fallback").unwrap_or(0);
    (alloc + fallback > 0).then(|| 100.0 * alloc as f64 / (alloc + fallback) as f64)
}

/// Whether counter `name` is a gauge (`nr_free_pages`; mTHP's `hugepages-2048kB/nr_anon`): a
/// level, not a count of events, so its difference over a run means nothing.
pub fn is_gauge(name: &str) -> bool {
    name.rsplit('/').next().is_some_and(|n| n.starts_with("nr_"))
}

/// The whole of `/proc/vmstat`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmStat {
    /// `(name, value)` in file order.
    pub items: Vec<(String, u64)>,
}

impl VmStat {
    /// The value of counter `name`, if present.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.items.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// Parses the file text. Every line must be a name and an unsigned decimal value,
    /// separated by whitespace; an empty file is an error.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut items = Vec::new();
        for (no, line) in text::lines(text) {
            let mut toks = line.split_ascii_whitespace();
            match (toks.next(), toks.next(), toks.next()) {
                (Some(name), Some(v), None) => items.push((name.to_owned(), text::dec_u64(v, no, name)?)),
                (None, _, _) => return Err(ParseError::new(no, "empty line")),
                (Some(name), None, _) => {
                    return Err(ParseError::new(no, format!("counter {} has no value", quote(name))))
                }
                (Some(_), Some(_), Some(extra)) => {
                    return Err(ParseError::new(no, format!("unexpected {} after the value", quote(extra))))
                }
            }
        }
        if items.is_empty() {
            return Err(text::empty_input());
        }
        Ok(VmStat { items })
    }

    /// The event counters' growth from `before` to `after`, in `after`'s order: gauges are left
    /// out, and so is a counter that went down (only a reset does that).
    pub fn delta(before: &VmStat, after: &VmStat) -> VmStat {
        let items = after
            .items
            .iter()
            .filter(|(name, _)| !is_gauge(name))
            .filter_map(|(name, a)| a.checked_sub(before.get(name).unwrap_or(0)).map(|d| (name.clone(), d)))
            .collect();
        VmStat { items }
    }

    /// A delta as `name=value` lines (`vmstat-delta.txt`, written by `lab real`).
    pub fn render_delta(&self) -> String {
        self.items.iter().map(|(name, v)| format!("{name}={v}\n")).collect()
    }

    /// Parses `name=value` lines; an empty file is an error.
    pub fn parse_delta(text: &str) -> Result<Self, ParseError> {
        let mut items = Vec::new();
        for (no, line) in text::lines(text) {
            let Some((name, v)) = line.split_once('=') else {
                return Err(ParseError::new(no, format!("expected name=value, found {}", quote(line))));
            };
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(ParseError::new(no, format!("{} is not a counter name", quote(name))));
            }
            items.push((name.to_owned(), text::dec_u64(v.trim(), no, name)?));
        }
        if items.is_empty() {
            return Err(text::empty_input());
        }
        Ok(VmStat { items })
    }
}

impl fmt::Display for VmStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in &self.items {
            writeln!(f, "{name} {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_keeps_event_counters_and_reads_back() {
        let before = VmStat::parse("nr_free_pages 900\npgscan_kswapd 10\nthp_fault_alloc 3\n").unwrap();
        let after =
            VmStat::parse("nr_free_pages 800\npgscan_kswapd 25\nthp_fault_alloc 3\npswpout 4\n").unwrap();
        let d = VmStat::delta(&before, &after);
        assert_eq!(d.render_delta(), "pgscan_kswapd=15\nthp_fault_alloc=0\npswpout=4\n");
        assert_eq!(VmStat::parse_delta(&d.render_delta()).unwrap(), d);
        assert!(is_gauge("nr_dirtied") && is_gauge("hugepages-64kB/nr_anon") && !is_gauge("pswpout"));
    }

    #[test]
    fn a_malformed_delta_names_its_line() {
        assert_eq!(VmStat::parse_delta("a=1\nb 2\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse_delta("a=1\nb=x\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse_delta("a=1\n=2\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse_delta("a b=2\n").unwrap_err().line, 1);
        assert_eq!(VmStat::parse_delta("").unwrap_err().line, 1);
    }

    #[test]
    fn round_trip_and_errors() {
        let t = "nr_free_pages 1045740\nnr_unstable 0\n";
        let v = VmStat::parse(t).unwrap();
        assert_eq!(v.get("nr_free_pages"), Some(1045740));
        assert_eq!(v.render(), t);
        assert_eq!(VmStat::parse("a 1\nb\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse("a 1\nb -1\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse("a 1\nb 1 2\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse("a 1\n\nb 2\n").unwrap_err().line, 2);
        assert_eq!(VmStat::parse("").unwrap_err().line, 1);
    }
}
