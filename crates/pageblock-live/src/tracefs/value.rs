//! The text forms of tracefs control files, and the value that writes each state back.

/// What `buffer_size_kb` reads (`tracing_entries_read` in `kernel/trace/trace.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferSize {
    /// `N`: every CPU's buffer holds N KiB.
    Kb(u64),
    /// `N (expanded: M)`: the boot-time minimal buffer, not yet expanded; the first user
    /// (enabling any event, or writing a size) expands it to M KiB.
    Unexpanded {
        /// KiB per CPU now.
        current: u64,
        /// KiB per CPU once expanded.
        expanded: u64,
    },
    /// `X`: the CPUs' buffers have different sizes (see `per_cpu/cpuN/buffer_size_kb`).
    PerCpu,
}

impl BufferSize {
    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| format!("bad buffer_size_kb `{t}`"));
        if t == "X" {
            return Ok(BufferSize::PerCpu);
        }
        match t.split_once('(') {
            None => Ok(BufferSize::Kb(number(t)?)),
            Some((current, rest)) => {
                let expanded = rest
                    .strip_prefix("expanded:")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| format!("bad buffer_size_kb `{t}`"))?;
                Ok(BufferSize::Unexpanded { current: number(current)?, expanded: number(expanded)? })
            }
        }
    }

    /// The size to write back to restore this state: the size itself, or for an
    /// unexpanded buffer the size it expands to (expansion cannot be undone, and is what
    /// the next tracer would get anyway). `None` for per-CPU sizes.
    pub fn restore_kb(self) -> Option<u64> {
        match self {
            BufferSize::Kb(kb) => Some(kb),
            BufferSize::Unexpanded { expanded, .. } => Some(expanded),
            BufferSize::PerCpu => None,
        }
    }
}

/// The selected clock of `trace_clock`, which lists all with the current one in brackets:
/// `[local] global counter ...`.
pub fn current_clock(text: &str) -> Option<&str> {
    text.split_whitespace().find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
}

/// `set_event_pid` (one pid a line) as the value that writes it back: pids separated by
/// spaces; empty when no pid is set.
pub fn pid_list(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An event's `filter` file as the value that writes it back: `0` clears, otherwise the
/// expression as it reads.
pub fn filter_restore(text: &str) -> String {
    match text.trim() {
        "none" | "" => "0".to_owned(),
        expr => expr.to_owned(),
    }
}

/// Whether an event `filter` file shows a filter.
pub fn filter_is_set(text: &str) -> bool {
    !matches!(text.trim(), "none" | "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_size_kb_forms() {
        assert_eq!(BufferSize::parse("1408\n"), Ok(BufferSize::Kb(1408)));
        assert_eq!(
            BufferSize::parse("7 (expanded: 1408)\n"),
            Ok(BufferSize::Unexpanded { current: 7, expanded: 1408 })
        );
        assert_eq!(BufferSize::parse("X\n"), Ok(BufferSize::PerCpu));
        assert_eq!(BufferSize::parse("7 (expanded: 1408)").map(BufferSize::restore_kb), Ok(Some(1408)));
        assert_eq!(BufferSize::Kb(65536).restore_kb(), Some(65536));
        assert_eq!(BufferSize::PerCpu.restore_kb(), None);
        for bad in ["", "x", "7 (expanded 1408)", "7 (expanded: 1408", "-1", "7 (expanded: y)"] {
            assert!(BufferSize::parse(bad).is_err(), "{bad:?} must not parse");
        }
    }

    #[test]
    fn clock_pids_and_filters() {
        let clocks = "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n";
        assert_eq!(current_clock(clocks), Some("local"));
        assert_eq!(current_clock("local global [counter] uptime\n"), Some("counter"));
        assert_eq!(current_clock("local global\n"), None);
        assert_eq!(pid_list(""), "");
        assert_eq!(pid_list("12\n345\n"), "12 345");
        assert_eq!(filter_restore("none\n"), "0");
        assert_eq!(filter_restore("order > 2\n"), "order > 2");
        assert!(filter_is_set("order > 2\n"));
        assert!(!filter_is_set("none\n"));
    }
}
