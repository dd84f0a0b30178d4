//! debugfs `extfrag/unusable_index` and `extfrag/extfrag_index`, and the integer formulas
//! behind them.
//!
//! Printed by `unusable_show_print()` and `extfrag_show_print()` in `mm/vmstat.c`
//! (CONFIG_COMPACTION, under `/sys/kernel/debug/extfrag/`), one line per populated zone:
//!
//! ```text
//! unusable_index: "Node %d, zone %8s " then "%d.%03d "  per order, "\n"
//! extfrag_index:  "Node %d, zone %8s " then "%2d.%03d " per order, "\n"
//! ```
//!
//! Each value is an `int` in thousandths printed as `v / 1000, v % 1000` with C's truncating
//! division, so −1000 prints `-1.000` and 0 prints ` 0.000` in the extfrag file. The model keeps
//! the thousandths (`i32`); any `i32` renders and parses back, including C's odd output for
//! negative values that are not whole (−500 prints `0.-500`).
//!
//! The formulas (`fill_contig_page_info`, `__fragmentation_index`, `unusable_free_index`,
//! `extfrag_for_order`) are reproduced with the kernel's unsigned 64-bit arithmetic and its
//! final conversion to `int`, so the results match the kernel bit for bit, including the
//! negative fragmentation indices that tiny free totals produce.

use std::fmt;

use crate::buddyinfo::BuddyInfo;
use crate::text::{self, quote};
use crate::ParseError;

/// One line of either index file: values in thousandths, per order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexRow {
    /// NUMA node id.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Index per order, in thousandths (1000 = 1.000).
    pub values: Vec<i32>,
}

/// `/sys/kernel/debug/extfrag/unusable_index`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnusableIndex {
    /// One row per populated zone.
    pub zones: Vec<IndexRow>,
}

/// `/sys/kernel/debug/extfrag/extfrag_index`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtfragIndex {
    /// One row per populated zone.
    pub zones: Vec<IndexRow>,
}

/// What `fill_contig_page_info()` reports for a zone and a requested order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ContigPageInfo {
    /// Free base pages: `Σ nr_free[o] << o`.
    pub free_pages: u64,
    /// Free blocks of any order: `Σ nr_free[o]`.
    pub free_blocks_total: u64,
    /// Free blocks of the requested size that the free lists could supply:
    /// `Σ_{o ≥ order} nr_free[o] << (o − order)`.
    pub free_blocks_suitable: u64,
}

/// `x << s` as an unsigned long shift: bits shifted out are lost (0 for `s >= 64`).
fn shl(x: u64, s: u32) -> u64 {
    if s < 64 {
        x.wrapping_shl(s)
    } else {
        0
    }
}

/// `fill_contig_page_info(zone, suitable_order)`, from a zone's per-order `nr_free` counts.
pub fn fill_contig_page_info(nr_free: &[u64], suitable_order: u32) -> ContigPageInfo {
    let mut info = ContigPageInfo::default();
    for (order, &blocks) in (0u32..).zip(nr_free) {
        info.free_blocks_total = info.free_blocks_total.wrapping_add(blocks);
        info.free_pages = info.free_pages.wrapping_add(shl(blocks, order));
        if order >= suitable_order {
            info.free_blocks_suitable =
                info.free_blocks_suitable.wrapping_add(shl(blocks, order - suitable_order));
        }
    }
    info
}

/// `__fragmentation_index(order, info)`: 0 with no free blocks (or `order` beyond the last
/// order, i.e. `order >= nr_page_orders`), −1000 if a suitable block exists, otherwise
/// `1000 − (1000 + free_pages·1000 / 2^order) / free_blocks_total` — near 0 means the
/// allocation fails for lack of memory, near 1000 for fragmentation. Tiny totals can give
/// negative values (one free order-0 page, order 1: −500), exactly as in the kernel.
pub fn fragmentation_index_of(info: &ContigPageInfo, order: u32, nr_page_orders: usize) -> i32 {
    if order as usize >= nr_page_orders || info.free_blocks_total == 0 {
        return 0;
    }
    if info.free_blocks_suitable != 0 {
        return -1000;
    }
    let requested = shl(1, order);
    // `requested` is 0 only for orders >= 64, which no zone has; treat that as 0.
    let per_request = info.free_pages.wrapping_mul(1000).checked_div(requested).unwrap_or(0);
    let x = 1000u64.wrapping_add(per_request) / info.free_blocks_total;
    1000u64.wrapping_sub(x) as i32
}

/// The fragmentation index (`fragmentation_index()`) of a zone with these `nr_free` counts.
pub fn fragmentation_index(nr_free: &[u64], order: u32) -> i32 {
    fragmentation_index_of(&fill_contig_page_info(nr_free, order), order, nr_free.len())
}

/// `unusable_free_index(order, info)`: thousandths of the free memory that cannot satisfy
/// an allocation of `order`; 1000 when nothing is free.
pub fn unusable_free_index(nr_free: &[u64], order: u32) -> i32 {
    unusable_share(nr_free, order, 1000).unwrap_or(1000) as i32
}

/// `extfrag_for_order(zone, order)`: the percentage version of the unusable index, used by
/// proactive compaction's fragmentation score; 0 when nothing is free.
pub fn extfrag_for_order(nr_free: &[u64], order: u32) -> u32 {
    unusable_share(nr_free, order, 100).unwrap_or(0) as u32
}

/// The share of free memory in blocks smaller than `order`, in `1/scale` units; `None` when
/// nothing is free (the two callers disagree on what to report then).
fn unusable_share(nr_free: &[u64], order: u32, scale: u64) -> Option<u64> {
    let info = fill_contig_page_info(nr_free, order);
    if info.free_pages == 0 {
        return None;
    }
    let unusable = info.free_pages.wrapping_sub(shl(info.free_blocks_suitable, order));
    Some(unusable.wrapping_mul(scale) / info.free_pages)
}

fn rows_from(b: &BuddyInfo, f: fn(&[u64], u32) -> i32) -> Vec<IndexRow> {
    b.zones
        .iter()
        .map(|z| IndexRow {
            node: z.node,
            zone: z.zone.clone(),
            values: (0u32..).take(z.nr_free.len()).map(|o| f(&z.nr_free, o)).collect(),
        })
        .collect()
}

impl UnusableIndex {
    /// The file the kernel would print for zones with these free counts.
    pub fn from_buddyinfo(b: &BuddyInfo) -> Self {
        UnusableIndex { zones: rows_from(b, unusable_free_index) }
    }

    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// Parses the file text (same rules as [`BuddyInfo::parse`], values `int.frac`).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        parse_rows(text).map(|zones| UnusableIndex { zones })
    }
}

impl ExtfragIndex {
    /// The file the kernel would print for zones with these free counts.
    pub fn from_buddyinfo(b: &BuddyInfo) -> Self {
        ExtfragIndex { zones: rows_from(b, fragmentation_index) }
    }

    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// Parses the file text (same rules as [`BuddyInfo::parse`], values `int.frac`).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        parse_rows(text).map(|zones| ExtfragIndex { zones })
    }
}

/// `"%d.%03d"` (or `"%2d.%03d"`) of `v / 1000, v % 1000` → `v`.
fn parse_value(tok: &str, no: usize, order: usize) -> Result<i32, ParseError> {
    let bad = || {
        ParseError::new(no, format!("value at order {order}: {} is not `<int>.<thousandths>`", quote(tok)))
    };
    let (int, frac) = tok.split_once('.').ok_or_else(bad)?;
    if frac.len() < 3 {
        return Err(bad());
    }
    let int = text::dec_i64(int, no, "index").map_err(|_| bad())?;
    let frac = text::dec_i64(frac, no, "index").map_err(|_| bad())?;
    let v = i128::from(int) * 1000 + i128::from(frac);
    i32::try_from(v)
        .map_err(|_| ParseError::new(no, format!("value at order {order}: {} is out of range", quote(tok))))
}

fn parse_rows(text: &str) -> Result<Vec<IndexRow>, ParseError> {
    let mut rows: Vec<IndexRow> = Vec::new();
    for (no, line) in text::lines(text) {
        let mut toks = line.split_ascii_whitespace();
        let (node, zone) = text::node_zone(&mut toks, no)?;
        let values = toks.enumerate().map(|(o, t)| parse_value(t, no, o)).collect::<Result<Vec<i32>, _>>()?;
        if values.is_empty() {
            return Err(ParseError::new(no, format!("zone {} has no values", quote(zone))));
        }
        if let Some(first) = rows.first() {
            if first.values.len() != values.len() {
                return Err(ParseError::new(
                    no,
                    format!(
                        "{} orders on this line, but {} on the first line",
                        values.len(),
                        first.values.len()
                    ),
                ));
            }
        }
        rows.push(IndexRow { node, zone: zone.to_owned(), values });
    }
    if rows.is_empty() {
        return Err(text::empty_input());
    }
    Ok(rows)
}

fn write_rows(f: &mut fmt::Formatter<'_>, rows: &[IndexRow], int_width: usize) -> fmt::Result {
    for row in rows {
        write!(f, "Node {}, zone ", row.node)?;
        text::pad_left(f, &row.zone, 8)?;
        f.write_str(" ")?;
        for &v in &row.values {
            // Rust's `/`, `%` and `{:03}` on negatives behave like C's `/`, `%` and `%03d`.
            write!(f, "{:int_width$}.{:03} ", v / 1000, v % 1000)?;
        }
        f.write_str("\n")?;
    }
    Ok(())
}

impl fmt::Display for UnusableIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_rows(f, &self.zones, 0)
    }
}

impl fmt::Display for ExtfragIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_rows(f, &self.zones, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contig_info_by_hand() {
        // orders 0..3: 3 order-0, 1 order-1, 0 order-2, 2 order-3 blocks
        let nr_free = [3, 1, 0, 2];
        let i = fill_contig_page_info(&nr_free, 2);
        assert_eq!(
            i,
            ContigPageInfo { free_pages: 3 + 2 + 16, free_blocks_total: 6, free_blocks_suitable: 4 }
        );
        let i = fill_contig_page_info(&nr_free, 0);
        assert_eq!(i.free_blocks_suitable, 21);
    }

    #[test]
    fn fragmentation_index_by_hand() {
        // A suitable block exists → -1000.
        assert_eq!(fragmentation_index(&[3, 1, 0, 2], 3), -1000);
        // Nothing free → 0.
        assert_eq!(fragmentation_index(&[0, 0, 0], 1), 0);
        // Beyond the last order → 0.
        assert_eq!(fragmentation_index(&[5, 5], 2), 0);
        // 8 free order-0 pages, order 3 wanted: 1000 - (1000 + 8000/8)/8 = 1000 - 250 = 750.
        assert_eq!(fragmentation_index(&[8, 0, 0, 0], 3), 750);
        // 100 order-0 + 10 order-1 = 120 pages in 110 blocks, order 2:
        // 1000 - (1000 + 120000/4)/110 = 1000 - 31000/110 = 1000 - 281 = 719.
        assert_eq!(fragmentation_index(&[100, 10, 0, 0], 2), 719);
        // One order-0 page, order 1: 1000 - (1000 + 500)/1 = -500 (the kernel's value too).
        assert_eq!(fragmentation_index(&[1, 0], 1), -500);
    }

    #[test]
    fn unusable_and_percent_by_hand() {
        // 21 free pages; order 2: suitable = 4 blocks → 16 pages usable, 5 unusable.
        assert_eq!(unusable_free_index(&[3, 1, 0, 2], 2), 5 * 1000 / 21);
        assert_eq!(extfrag_for_order(&[3, 1, 0, 2], 2), 5 * 100 / 21);
        assert_eq!(unusable_free_index(&[3, 1, 0, 2], 0), 0);
        assert_eq!(unusable_free_index(&[0, 0], 0), 1000);
        assert_eq!(extfrag_for_order(&[0, 0], 0), 0);
        assert_eq!(unusable_free_index(&[4, 0, 0], 2), 1000);
        assert_eq!(extfrag_for_order(&[4, 0, 0], 2), 100);
    }

    #[test]
    fn printing_matches_c() {
        let row = |values: Vec<i32>| IndexRow { node: 0, zone: "Normal".into(), values };
        let e = ExtfragIndex { zones: vec![row(vec![-1000, 0, 945, -500, 1000])] };
        let t = e.render();
        assert_eq!(t, "Node 0, zone   Normal -1.000  0.000  0.945  0.-500  1.000 \n");
        assert_eq!(ExtfragIndex::parse(&t).unwrap(), e);
        let u = UnusableIndex { zones: vec![row(vec![0, 312, 1000])] };
        let t = u.render();
        assert_eq!(t, "Node 0, zone   Normal 0.000 0.312 1.000 \n");
        assert_eq!(UnusableIndex::parse(&t).unwrap(), u);
    }

    #[test]
    fn parse_errors() {
        assert_eq!(UnusableIndex::parse("").unwrap_err().line, 1);
        assert_eq!(UnusableIndex::parse("Node 0, zone DMA 0.5 \n").unwrap_err().line, 1);
        assert_eq!(
            UnusableIndex::parse("Node 0, zone DMA 0.500 \nNode 0, zone N x.000\n").unwrap_err().line,
            2
        );
        assert_eq!(
            ExtfragIndex::parse("Node 0, zone DMA 1.000\nNode 0, zone N 1.000 1.000\n").unwrap_err().line,
            2
        );
        assert!(ExtfragIndex::parse("Node 0, zone DMA 9999999999.000\n").is_err());
    }

    #[test]
    fn from_buddyinfo() {
        let b = BuddyInfo::parse("Node 0, zone   Normal      8      0      0      0 \n").unwrap();
        let e = ExtfragIndex::from_buddyinfo(&b);
        assert_eq!(e.zones[0].values, vec![-1000, 1000 - (1000 + 4000) / 8, 1000 - (1000 + 2000) / 8, 750]);
        let u = UnusableIndex::from_buddyinfo(&b);
        assert_eq!(u.zones[0].values, vec![0, 1000, 1000, 1000]);
    }
}
