//! `/proc/pagetypeinfo`: free blocks per zone × migratetype × order, and pageblocks per
//! migratetype.
//!
//! Printed by `pagetypeinfo_show()` in `mm/vmstat.c` and its helpers
//! `pagetypeinfo_showfree_print()`, `pagetypeinfo_showblockcount_print()` and
//! `pagetypeinfo_showmixedcount()`. The block below repeats for every node with memory:
//!
//! ```text
//! "Page block order: %d\n"
//! "Pages per block:  %lu\n"                     (two spaces after the colon)
//! "\n"
//! "%-43s " "Free pages count per migrate type at order", then "%6d " per order, "\n"
//! per populated zone, per migratetype:
//!   "Node %4d, zone %8s, type %12s ", then per order "%s%6lu " ("%s" is ">" when the walk
//!   stopped at the 100000 cap), "\n"
//! "\n%-23s" "Number of blocks type ", then "%12s " per migratetype name, "\n"
//! per populated zone: "Node %d, zone %8s ", then "%12lu " per migratetype, "\n"
//! [page_owner only] "\n%-23s" "Number of mixed blocks ", then the same table layout
//! ```
//!
//! Note the `%4d` node in the free table against `%d` in the block tables. The number of
//! orders and the migratetype names (`Unmovable, Movable, Reclaimable, HighAtomic, [CMA],
//! [Isolate]`) depend on the kernel configuration, so both are data here.

use std::fmt;
use std::iter::Peekable;

use crate::text::{self, quote, Lines};
use crate::ParseError;

/// The kernel stops counting a free list at this many entries and prints `>100000`.
pub const FREE_COUNT_CAP: u64 = 100_000;

const FREE_HEADER: &str = "Free pages count per migrate type at order";
const BLOCKS_HEADER: &str = "Number of blocks type ";
const MIXED_HEADER: &str = "Number of mixed blocks ";

/// The whole of `/proc/pagetypeinfo`: one block per node with memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTypeInfo {
    /// Per-node blocks, in file order.
    pub nodes: Vec<PageTypeInfoNode>,
}

/// One node's part of `/proc/pagetypeinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTypeInfoNode {
    /// `pageblock_order` (`Page block order:`).
    pub pageblock_order: u32,
    /// `pageblock_nr_pages` (`Pages per block:`).
    pub pages_per_block: u64,
    /// `NR_PAGE_ORDERS`: the columns `0 .. nr_page_orders` of the free table header.
    pub nr_page_orders: usize,
    /// The free table: one row per populated zone and migratetype.
    pub free: Vec<FreeRow>,
    /// The `Number of blocks type` table.
    pub blocks: BlockTable,
    /// The `Number of mixed blocks` table (only with `page_owner` enabled).
    pub mixed: Option<BlockTable>,
}

/// One row of the free table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FreeRow {
    /// NUMA node id.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Migratetype name (`migratetype_names[]`).
    pub migratetype: String,
    /// Entries on `free_area[order].free_list[migratetype]`, per order.
    pub counts: Vec<FreeCount>,
}

/// One cell of the free table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FreeCount {
    /// The printed count.
    pub count: u64,
    /// True when the kernel's walk hit [`FREE_COUNT_CAP`] and printed `>` before the count.
    pub overflow: bool,
}

impl FreeCount {
    /// The cell the kernel prints for a list of `n` entries: `n`, or `>100000` once `n`
    /// reaches the cap.
    pub fn capped(n: u64) -> Self {
        if n >= FREE_COUNT_CAP {
            FreeCount { count: FREE_COUNT_CAP, overflow: true }
        } else {
            FreeCount { count: n, overflow: false }
        }
    }
}

/// A `Number of blocks type` (or `Number of mixed blocks`) table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockTable {
    /// Column names: the migratetype names.
    pub migratetypes: Vec<String>,
    /// One row per populated zone.
    pub rows: Vec<BlockRow>,
}

/// One row of a block table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockRow {
    /// NUMA node id.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Pageblocks per migratetype column.
    pub counts: Vec<u64>,
}

/// Raw counts of one zone, the input of [`PageTypeInfoNode::from_counts`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounts {
    /// NUMA node id.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// `free[migratetype][order]`: true list lengths (uncapped).
    pub free: Vec<Vec<u64>>,
    /// `blocks[migratetype]`: pageblocks of each type.
    pub blocks: Vec<u64>,
}

impl PageTypeInfoNode {
    /// Builds a node's tables from true counts: with `cap` (what the kernel prints) free
    /// counts at or above 100000 become `>100000`; without it every count is printed exactly
    /// (the field widens). `pages_per_block` is `1 << pageblock_order`. Missing entries in
    /// `zones` count as 0; extra ones are ignored. No mixed table.
    pub fn from_counts(
        pageblock_order: u32,
        nr_page_orders: usize,
        migratetypes: &[&str],
        zones: &[ZoneCounts],
        cap: bool,
    ) -> Self {
        let mut free = Vec::with_capacity(zones.len() * migratetypes.len());
        let mut rows = Vec::with_capacity(zones.len());
        for z in zones {
            for (mt, name) in migratetypes.iter().enumerate() {
                let per_order = z.free.get(mt).map(Vec::as_slice).unwrap_or(&[]);
                let counts = (0..nr_page_orders)
                    .map(|o| {
                        let n = per_order.get(o).copied().unwrap_or(0);
                        if cap {
                            FreeCount::capped(n)
                        } else {
                            FreeCount { count: n, overflow: false }
                        }
                    })
                    .collect();
                free.push(FreeRow {
                    node: z.node,
                    zone: z.zone.clone(),
                    migratetype: (*name).to_owned(),
                    counts,
                });
            }
            let counts = (0..migratetypes.len()).map(|mt| z.blocks.get(mt).copied().unwrap_or(0)).collect();
            rows.push(BlockRow { node: z.node, zone: z.zone.clone(), counts });
        }
        PageTypeInfoNode {
            pageblock_order,
            pages_per_block: 1u64.checked_shl(pageblock_order).unwrap_or(0),
            nr_page_orders,
            free,
            blocks: BlockTable { migratetypes: migratetypes.iter().map(|s| (*s).to_owned()).collect(), rows },
            mixed: None,
        }
    }

    /// Per-order free counts of one zone summed over its migratetypes (what buddyinfo shows,
    /// when no count hit the cap). Empty if the zone is not in the free table.
    pub fn zone_free_by_order(&self, node: u32, zone: &str) -> Vec<u64> {
        let mut sum = Vec::new();
        for row in self.free.iter().filter(|r| r.node == node && r.zone == zone) {
            sum.resize(sum.len().max(row.counts.len()), 0u64);
            for (s, c) in sum.iter_mut().zip(&row.counts) {
                *s = s.saturating_add(c.count);
            }
        }
        sum
    }

    /// Pageblocks of `migratetype` in one zone (the `Number of blocks type` table; 0 when the
    /// zone or the column is not there).
    pub fn zone_blocks(&self, node: u32, zone: &str, migratetype: &str) -> u64 {
        let col = self.blocks.migratetypes.iter().position(|m| m == migratetype);
        let row = self.blocks.rows.iter().find(|r| r.node == node && r.zone == zone);
        match (col, row) {
            (Some(c), Some(r)) => r.counts.get(c).copied().unwrap_or(0),
            _ => 0,
        }
    }

    /// Free pages of one zone that a movable request could only steal: those on the
    /// Unmovable and Reclaimable lists below the pageblock order. A whole free pageblock of
    /// either type a movable request may claim; a smaller block stays a foreign pageblock's.
    /// A count the kernel capped counts as the cap.
    pub fn zone_steal_only_pages(&self, node: u32, zone: &str) -> u64 {
        let foreign = |r: &&FreeRow| {
            r.node == node && r.zone == zone && matches!(r.migratetype.as_str(), "Unmovable" | "Reclaimable")
        };
        let mut pages = 0u64;
        for row in self.free.iter().filter(foreign) {
            for (order, c) in row.counts.iter().enumerate().take(self.pageblock_order as usize) {
                pages = pages.saturating_add(
                    c.count.saturating_mul(1u64.checked_shl(order as u32).unwrap_or(u64::MAX)),
                );
            }
        }
        pages
    }
}

impl PageTypeInfo {
    /// Free pages a movable request could only steal, over every node's zones
    /// ([`PageTypeInfoNode::zone_steal_only_pages`]).
    pub fn steal_only_pages(&self) -> u64 {
        let zones = self.nodes.iter().flat_map(|n| n.blocks.rows.iter().map(move |z| (n, z)));
        zones.fold(0u64, |pages, (n, z)| pages.saturating_add(n.zone_steal_only_pages(z.node, &z.zone)))
    }

    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// Parses the file text. Fails on an empty file, a missing section, a malformed or
    /// non-numeric cell, or a row whose column count does not match its table header.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let end = text::line_count(text) + 1;
        let mut lines = text::lines(text).peekable();
        let mut nodes = Vec::new();
        while lines.peek().is_some() {
            nodes.push(parse_node(&mut lines, end)?);
        }
        if nodes.is_empty() {
            return Err(text::empty_input());
        }
        Ok(PageTypeInfo { nodes })
    }
}

type Cursor<'a> = Peekable<Lines<'a>>;

fn next_line<'a>(lines: &mut Cursor<'a>, end: usize, want: &str) -> Result<(usize, &'a str), ParseError> {
    lines.next().ok_or_else(|| ParseError::new(end, format!("unexpected end of input, expected {want}")))
}

fn expect_blank(lines: &mut Cursor<'_>, end: usize) -> Result<(), ParseError> {
    let (no, line) = next_line(lines, end, "an empty line")?;
    if line.trim().is_empty() {
        Ok(())
    } else {
        Err(ParseError::new(no, format!("expected an empty line, found {}", quote(line))))
    }
}

fn labelled<'a>(lines: &mut Cursor<'a>, end: usize, label: &str) -> Result<(usize, &'a str), ParseError> {
    let (no, line) = next_line(lines, end, &format!("`{label}`"))?;
    match line.strip_prefix(label) {
        Some(rest) => Ok((no, rest)),
        None => Err(ParseError::new(no, format!("expected `{label}`, found {}", quote(line)))),
    }
}

fn parse_node(lines: &mut Cursor<'_>, end: usize) -> Result<PageTypeInfoNode, ParseError> {
    let (no, rest) = labelled(lines, end, "Page block order:")?;
    let pageblock_order = text::dec_u32(rest.trim(), no, "page block order")?;
    let (no, rest) = labelled(lines, end, "Pages per block:")?;
    let pages_per_block = text::dec_u64(rest.trim(), no, "pages per block")?;
    expect_blank(lines, end)?;
    let (no, rest) = labelled(lines, end, FREE_HEADER)?;
    let mut nr_page_orders = 0usize;
    for tok in rest.split_ascii_whitespace() {
        if text::digits_u64(tok.as_bytes(), 10) != Some(nr_page_orders as u64) {
            return Err(ParseError::new(
                no,
                format!("order column {nr_page_orders} is labelled {}", quote(tok)),
            ));
        }
        nr_page_orders += 1;
    }
    if nr_page_orders == 0 {
        return Err(ParseError::new(no, "free table header lists no orders"));
    }
    let mut free = Vec::new();
    while let Some(&(no, line)) = lines.peek() {
        if !line.starts_with("Node") {
            break;
        }
        lines.next();
        free.push(parse_free_row(line, no, nr_page_orders)?);
    }
    expect_blank(lines, end)?;
    let blocks = parse_block_table(lines, end, BLOCKS_HEADER)?;
    let mut mixed = None;
    if matches!(lines.peek(), Some(&(_, l)) if l.trim().is_empty()) {
        lines.next();
        mixed = Some(parse_block_table(lines, end, MIXED_HEADER)?);
    }
    Ok(PageTypeInfoNode { pageblock_order, pages_per_block, nr_page_orders, free, blocks, mixed })
}

fn parse_free_row(line: &str, no: usize, nr_page_orders: usize) -> Result<FreeRow, ParseError> {
    let mut toks = line.split_ascii_whitespace();
    let (node, zone) = text::node_zone(&mut toks, no)?;
    let zone = zone.strip_suffix(',').ok_or_else(|| {
        ParseError::new(no, format!("expected `<zone>,` in the free table, found {}", quote(zone)))
    })?;
    text::expect_tok(&mut toks, "type", no)?;
    let migratetype = toks.next().ok_or_else(|| ParseError::new(no, "line ends after `type`"))?;
    let mut counts = Vec::with_capacity(nr_page_orders);
    while let Some(tok) = toks.next() {
        let (digits, overflow) = match tok.strip_prefix('>') {
            Some("") => (toks.next().unwrap_or(""), true),
            Some(d) => (d, true),
            None => (tok, false),
        };
        let count = text::digits_u64(digits.as_bytes(), 10).ok_or_else(|| {
            ParseError::new(
                no,
                format!("free count at order {}: {} is not a number", counts.len(), quote(tok)),
            )
        })?;
        counts.push(FreeCount { count, overflow });
    }
    if counts.len() != nr_page_orders {
        return Err(ParseError::new(
            no,
            format!("{} free counts, but the header lists {nr_page_orders} orders", counts.len()),
        ));
    }
    Ok(FreeRow { node, zone: zone.to_owned(), migratetype: migratetype.to_owned(), counts })
}

fn parse_block_table(lines: &mut Cursor<'_>, end: usize, header: &str) -> Result<BlockTable, ParseError> {
    let (no, rest) = labelled(lines, end, header.trim_end())?;
    let migratetypes: Vec<String> = rest.split_ascii_whitespace().map(str::to_owned).collect();
    if migratetypes.is_empty() {
        return Err(ParseError::new(no, "block table header lists no migratetypes"));
    }
    let mut rows = Vec::new();
    while let Some(&(no, line)) = lines.peek() {
        if !line.starts_with("Node") {
            break;
        }
        lines.next();
        let mut toks = line.split_ascii_whitespace();
        let (node, zone) = text::node_zone(&mut toks, no)?;
        let counts = toks
            .map(|t| {
                text::digits_u64(t.as_bytes(), 10)
                    .ok_or_else(|| ParseError::new(no, format!("block count {} is not a number", quote(t))))
            })
            .collect::<Result<Vec<u64>, _>>()?;
        if counts.len() != migratetypes.len() {
            return Err(ParseError::new(
                no,
                format!(
                    "{} block counts, but the header lists {} migratetypes",
                    counts.len(),
                    migratetypes.len()
                ),
            ));
        }
        rows.push(BlockRow { node, zone: zone.to_owned(), counts });
    }
    if let Some(&(no, line)) = lines.peek() {
        if !line.trim().is_empty() && !line.starts_with("Page block order:") {
            return Err(ParseError::new(
                no,
                format!("unexpected line after the block table: {}", quote(line)),
            ));
        }
    }
    Ok(BlockTable { migratetypes, rows })
}

impl fmt::Display for FreeCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.overflow {
            f.write_str(">")?;
        }
        write!(f, "{:6}", self.count)
    }
}

impl fmt::Display for FreeRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Node {:4}, zone ", self.node)?;
        text::pad_left(f, &self.zone, 8)?;
        f.write_str(", type ")?;
        text::pad_left(f, &self.migratetype, 12)?;
        f.write_str(" ")?;
        for c in &self.counts {
            write!(f, "{c} ")?;
        }
        f.write_str("\n")
    }
}

impl BlockTable {
    fn write(&self, f: &mut fmt::Formatter<'_>, header: &str) -> fmt::Result {
        f.write_str("\n")?;
        text::pad_right(f, header, 23)?;
        for name in &self.migratetypes {
            text::pad_left(f, name, 12)?;
            f.write_str(" ")?;
        }
        f.write_str("\n")?;
        for row in &self.rows {
            write!(f, "Node {}, zone ", row.node)?;
            text::pad_left(f, &row.zone, 8)?;
            f.write_str(" ")?;
            for c in &row.counts {
                write!(f, "{c:12} ")?;
            }
            f.write_str("\n")?;
        }
        Ok(())
    }
}

impl fmt::Display for PageTypeInfoNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Page block order: {}\nPages per block:  {}\n\n",
            self.pageblock_order, self.pages_per_block
        )?;
        text::pad_right(f, FREE_HEADER, 43)?;
        f.write_str(" ")?;
        for order in 0..self.nr_page_orders {
            write!(f, "{order:6} ")?;
        }
        f.write_str("\n")?;
        self.free.iter().try_for_each(|r| r.fmt(f))?;
        self.blocks.write(f, BLOCKS_HEADER)?;
        match &self.mixed {
            Some(m) => m.write(f, MIXED_HEADER),
            None => Ok(()),
        }
    }
}

impl fmt::Display for PageTypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.nodes.iter().try_for_each(|n| n.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMA_TYPES: [&str; 6] = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "CMA", "Isolate"];

    fn node() -> PageTypeInfoNode {
        let z = ZoneCounts {
            node: 1,
            zone: "Normal".into(),
            free: vec![vec![99_999, 100_000, 250_000], vec![0, 1]],
            blocks: vec![45, 565, 30, 0, 8],
        };
        PageTypeInfoNode::from_counts(9, 3, &CMA_TYPES, &[z], true)
    }

    #[test]
    fn cap_rule() {
        assert_eq!(FreeCount::capped(99_999), FreeCount { count: 99_999, overflow: false });
        assert_eq!(FreeCount::capped(100_000), FreeCount { count: 100_000, overflow: true });
        assert_eq!(FreeCount::capped(7_000_000), FreeCount { count: 100_000, overflow: true });
    }

    #[test]
    fn from_counts_renders_like_the_kernel() {
        let n = node();
        assert_eq!(n.pages_per_block, 512);
        assert_eq!(n.free.len(), 6);
        let text = PageTypeInfo { nodes: vec![n.clone()] }.render();
        let want = "\
Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2 
Node    1, zone   Normal, type    Unmovable  99999 >100000 >100000 
Node    1, zone   Normal, type      Movable      0      1      0 
Node    1, zone   Normal, type  Reclaimable      0      0      0 
Node    1, zone   Normal, type   HighAtomic      0      0      0 
Node    1, zone   Normal, type          CMA      0      0      0 
Node    1, zone   Normal, type      Isolate      0      0      0 

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate 
Node 1, zone   Normal           45          565           30            0            8            0 
";
        assert_eq!(text, want);
        assert_eq!(PageTypeInfo::parse(&text).unwrap().nodes, vec![n]);
    }

    #[test]
    fn from_counts_without_the_cap_prints_exact_counts() {
        let z = ZoneCounts {
            node: 0,
            zone: "Normal".into(),
            free: vec![vec![7_000_000, 100_000]],
            blocks: vec![1],
        };
        let n = PageTypeInfoNode::from_counts(9, 2, &["Unmovable"], &[z], false);
        let row = PageTypeInfo { nodes: vec![n] }.render();
        assert!(row.contains("type    Unmovable 7000000 100000 \n"), "{row}");
    }

    #[test]
    fn mixed_table_and_two_nodes_round_trip() {
        let mut a = node();
        a.mixed = Some(a.blocks.clone());
        let mut b = node();
        b.free.iter_mut().for_each(|r| r.node = 2);
        let m = PageTypeInfo { nodes: vec![a, b] };
        let text = m.render();
        assert!(text.contains("\n\nNumber of mixed blocks    Unmovable "), "{text}");
        assert_eq!(PageTypeInfo::parse(&text), Ok(m));
    }

    #[test]
    fn zone_free_by_order_sums_types() {
        assert_eq!(node().zone_free_by_order(1, "Normal"), vec![99_999, 100_001, 100_000]);
        assert!(node().zone_free_by_order(0, "Normal").is_empty());
    }

    #[test]
    fn steal_only_pages_are_foreign_lists_below_the_pageblock_order() {
        // Unmovable: 99,999 + 2 x 100,000 (capped) + 4 x 100,000; Movable's are not counted.
        assert_eq!(node().zone_steal_only_pages(1, "Normal"), 699_999);
        let mut n = node();
        n.pageblock_order = 2;
        assert_eq!(n.zone_steal_only_pages(1, "Normal"), 299_999, "order 2 is a whole pageblock");
        n.free[2].counts = vec![FreeCount { count: 3, overflow: false }];
        assert_eq!(n.zone_steal_only_pages(1, "Normal"), 300_002, "Reclaimable counts");
        assert_eq!(n.zone_steal_only_pages(1, "DMA"), 0);
        n.pageblock_order = 200;
        n.free[0].counts = vec![FreeCount { count: u64::MAX, overflow: false }; 80];
        assert_eq!(n.zone_steal_only_pages(1, "Normal"), u64::MAX, "saturates");
        let two = PageTypeInfo { nodes: vec![node(), node()] };
        assert_eq!(two.steal_only_pages(), 2 * 699_999, "every node's zones");
        assert_eq!(
            (node().zone_blocks(1, "Normal", "Reclaimable"), node().zone_blocks(1, "Normal", "CMA")),
            (30, 8)
        );
        assert_eq!(
            (node().zone_blocks(1, "DMA", "Movable"), node().zone_blocks(1, "Normal", "Nope")),
            (0, 0)
        );
    }
}
