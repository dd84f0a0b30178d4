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
