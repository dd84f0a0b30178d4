//! `/proc/buddyinfo`: free blocks per order, per populated zone.
//!
//! Printed by `frag_show_print()` in `mm/vmstat.c`. One line per **populated** zone, nodes in
//! order, zones in index order:
//!
//! ```text
//! "Node %d, zone %8s "   then "%6lu " per order (free_area[order].nr_free), then "\n"
//! ```
//!
//! Every line therefore ends with a space before the newline. Counts wider than six digits
//! widen their field. The number of columns is `NR_PAGE_ORDERS` (11 on x86_64); here it is
//! data: every line must have the same count, like every real file.
//!
//! Parsing splits on ASCII whitespace, so any text the kernel produced re-renders byte for byte;
//! the last line may lack its `\n`. An empty file is an error (a real one always lists at least
//! one zone).

use std::fmt;

use crate::text::{self, quote};
use crate::ParseError;

/// The whole of `/proc/buddyinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuddyInfo {
    /// One row per populated zone, in file order.
    pub zones: Vec<BuddyInfoZone>,
}

/// One line of `/proc/buddyinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuddyInfoZone {
    /// NUMA node id.
    pub node: u32,
    /// Zone name (`DMA`, `DMA32`, `Normal`, `HighMem`, `Movable`, `Device`).
    pub zone: String,
    /// `free_area[order].nr_free` for each order, all migratetypes together.
    pub nr_free: Vec<u64>,
}

impl BuddyInfoZone {
    /// Free base pages in this zone: `Σ nr_free[order] << order` (saturating).
    pub fn free_pages(&self) -> u64 {
        free_blocks_of(&self.nr_free, 0)
    }
}

/// Free memory in `nr_free` (free blocks per order, as a buddyinfo row holds them) counted in
/// blocks of `order`: `Σ nr_free[o] << (o − order)` over `o ≥ order`; order 0 gives free
/// pages. Saturating: a row read from a file may hold any counts and any number of orders.
pub fn free_blocks_of(nr_free: &[u64], order: u32) -> u64 {
    nr_free
        .iter()
        .enumerate()
        .skip(order as usize)
        .map(|(o, &n)| {
            let shift = u32::try_from(o).unwrap_or(u32::MAX) - order;
            if n == 0 {
                0
            } else {
                n.checked_shl(shift).filter(|v| v >> shift == n).unwrap_or(u64::MAX)
            }
        })
        .fold(0u64, u64::saturating_add)
}

impl BuddyInfo {
    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The row for `(node, zone)`, if that zone is listed.
    pub fn zone(&self, node: u32, zone: &str) -> Option<&BuddyInfoZone> {
        self.zones.iter().find(|z| z.node == node && z.zone == zone)
    }

    /// Parses the file text. Fails on an empty file, a malformed line, a non-numeric count, or
    /// a line whose number of orders differs from the first line's.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut zones: Vec<BuddyInfoZone> = Vec::new();
        for (no, line) in text::lines(text) {
            let row = parse_line(line, no)?;
            if let Some(first) = zones.first() {
                if first.nr_free.len() != row.nr_free.len() {
                    return Err(ParseError::new(
                        no,
                        format!(
                            "{} orders on this line, but {} on the first line",
                            row.nr_free.len(),
                            first.nr_free.len()
                        ),
                    ));
                }
            }
            zones.push(row);
        }
        if zones.is_empty() {
            return Err(text::empty_input());
        }
        Ok(BuddyInfo { zones })
    }
}

fn parse_line(line: &str, no: usize) -> Result<BuddyInfoZone, ParseError> {
    let mut toks = line.split_ascii_whitespace();
    if line.trim().is_empty() {
        return Err(ParseError::new(no, "empty line"));
    }
    let (node, zone) = text::node_zone(&mut toks, no)?;
    let nr_free = toks
        .enumerate()
        .map(|(order, t)| {
            text::digits_u64(t.as_bytes(), 10).ok_or_else(|| {
                ParseError::new(
                    no,
                    format!("nr_free at order {order}: {} is not an unsigned decimal number", quote(t)),
                )
            })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    if nr_free.is_empty() {
        return Err(ParseError::new(no, format!("zone {} has no free counts", quote(zone))));
    }
    Ok(BuddyInfoZone { node, zone: zone.to_owned(), nr_free })
}

impl fmt::Display for BuddyInfoZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Node {}, zone ", self.node)?;
        text::pad_left(f, &self.zone, 8)?;
        f.write_str(" ")?;
        for n in &self.nr_free {
            write!(f, "{n:6} ")?;
        }
        f.write_str("\n")
    }
}

impl fmt::Display for BuddyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.zones.iter().try_for_each(|z| z.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
Node 0, zone   Normal    173     52     45    166    168    200    129     88     38     53 1234567 \n";

    #[test]
    fn round_trip() {
        let b = BuddyInfo::parse(SAMPLE).unwrap();
        assert_eq!(b.zones[1].nr_free[10], 1234567);
        assert_eq!(b.render(), SAMPLE);
        assert_eq!(b.zone(0, "DMA").unwrap().free_pages(), 256 + 512 + 3 * 1024);
    }

    #[test]
    fn free_blocks_count_in_blocks_of_the_order_and_saturate() {
        let row = [1, 0, 3, 1];
        assert_eq!(free_blocks_of(&row, 0), 1 + 3 * 4 + 8);
        assert_eq!(free_blocks_of(&row, 2), 3 + 2, "an order-3 block is two of order 2");
        assert_eq!(free_blocks_of(&row, 9), 0, "past the row");
        // A file may hold any counts and any number of orders.
        assert_eq!(free_blocks_of(&[u64::MAX / 2, 1], 0), u64::MAX / 2 + 2);
        assert_eq!(free_blocks_of(&[0, u64::MAX / 2 + 1], 0), u64::MAX, "a bit shifted out");
        let wide: Vec<u64> = (0..100).map(|_| 1).collect();
        assert_eq!(free_blocks_of(&wide, 0), u64::MAX, "orders past 63");
        assert_eq!(free_blocks_of(&wide, 90), (1 << 10) - 1);
    }

    #[test]
    fn errors_name_the_line() {
        let e = BuddyInfo::parse("Node 0, zone DMA 1 2 3 \nNode 0, zone Normal 1 2 \n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = BuddyInfo::parse("Node 0, zone DMA 1 x 3 \n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.reason.contains("order 1"), "{e}");
        assert_eq!(BuddyInfo::parse("").unwrap_err().line, 1);
        assert_eq!(BuddyInfo::parse("Node 0, zone DMA 1\n\n").unwrap_err().line, 2);
        assert_eq!(BuddyInfo::parse("Node 0 zone DMA 1\n").unwrap_err().line, 1);
        assert_eq!(BuddyInfo::parse("Node 0, zone DMA\n").unwrap_err().line, 1);
    }
}
