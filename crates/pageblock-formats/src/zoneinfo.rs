//! `/proc/zoneinfo`: watermarks, sizes, counters and per-CPU pagesets of every zone.
//!
//! Printed by `zoneinfo_show_print()` in `mm/vmstat.c`, for **all** zones, populated or not:
//!
//! ```text
//! "Node %d, zone %8s"
//! [first populated zone of the node] "\n  per-node stats", then "\n      %-12s %lu" per node stat
//! "\n  pages free     %lu"
//! "\n        boost    %lu"   min, low, high, promo (6.4+), spanned, present, managed, cma alike
//! "\n        protection: (%ld" then ", %ld" per further lowmem_reserve entry, then ")"
//! [unpopulated zone: "\n" and stop]
//! "\n      %-12s %lu" per zone stat, then per NUMA event (same layout)
//! "\n  pagesets"
//! per online CPU: "\n    cpu: %i"
//!                 "\n              count:    %i"   high:, batch:, high_min: and high_max: (6.7+)
//!                 "\n  vm stats threshold: %d"
//! "\n  node_unreclaimable:  %u"
//! "\n  start_pfn:           %lu"
//! "\n"
//! ```
//!
//! Stat lines are kept as ordered `(name, value)` lists so that stats this crate does not know
//! (they change with every kernel release) round-trip. `promo`, `high_min` and `high_max` are
//! optional so that pre-6.4 / pre-6.7 files parse too.

use std::fmt;
use std::iter::Peekable;

use crate::text::{self, quote, Lines};
use crate::ParseError;

/// The whole of `/proc/zoneinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfo {
    /// Every zone of every node, in file order.
    pub zones: Vec<ZoneInfoZone>,
}

/// One zone's block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfoZone {
    /// NUMA node id.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// The node's `per-node stats` block, printed inside the node's first populated zone.
    pub node_stats: Option<Vec<(String, u64)>>,
    /// `pages free`: `NR_FREE_PAGES`.
    pub pages_free: u64,
    /// `boost`: `watermark_boost`.
    pub boost: u64,
    /// `min` watermark (includes the boost).
    pub min: u64,
    /// `low` watermark.
    pub low: u64,
    /// `high` watermark.
    pub high: u64,
    /// `promo` watermark (Linux 6.4+; `None` when the line is absent).
    pub promo: Option<u64>,
    /// `spanned` pages.
    pub spanned: u64,
    /// `present` pages.
    pub present: u64,
    /// `managed` pages.
    pub managed: u64,
    /// `cma` pages.
    pub cma: u64,
    /// `protection`: `lowmem_reserve[]`, one entry per zone of the node.
    pub protection: Vec<i64>,
    /// Everything after `protection` that only populated zones print.
    pub populated: Option<PopulatedZone>,
}

/// The part of a zone's block that only populated zones print.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PopulatedZone {
    /// Zone stats then NUMA events, in file order (`nr_free_pages`, …, `numa_other`).
    pub stats: Vec<(String, u64)>,
    /// One pageset per online CPU.
    pub pagesets: Vec<Pageset>,
    /// `node_unreclaimable` (`kswapd_failures >= MAX_RECLAIM_RETRIES`).
    pub node_unreclaimable: u32,
    /// `start_pfn`: `zone_start_pfn`.
    pub start_pfn: u64,
}

/// One CPU's `per_cpu_pages` as printed under `pagesets`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pageset {
    /// CPU number.
    pub cpu: u32,
    /// `count`: pages on this CPU's lists.
    pub count: i32,
    /// `high`: current high mark.
    pub high: i32,
    /// `batch`.
    pub batch: i32,
    /// `high_min` (Linux 6.7+).
    pub high_min: Option<i32>,
    /// `high_max` (Linux 6.7+).
    pub high_max: Option<i32>,
    /// `vm stats threshold` (`per_cpu_zonestat.stat_threshold`).
    pub stat_threshold: i32,
}

impl ZoneInfoZone {
    /// A zone stat or NUMA event of a populated zone, by name.
    pub fn stat(&self, name: &str) -> Option<u64> {
        let stats = &self.populated.as_ref()?.stats;
        stats.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// A per-node stat, if this zone carries the node's block.
    pub fn node_stat(&self, name: &str) -> Option<u64> {
        let stats = self.node_stats.as_ref()?;
        stats.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

impl ZoneInfo {
    /// The file text, exactly as the kernel prints it.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The block of `(node, zone)`.
    pub fn zone(&self, node: u32, zone: &str) -> Option<&ZoneInfoZone> {
        self.zones.iter().find(|z| z.node == node && z.zone == zone)
    }

    /// Parses the file text. Fails on an empty file, a missing or misplaced line, a
    /// non-numeric value, or a truncated zone block.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut cur = Cursor { lines: text::lines(text).peekable(), end: text::line_count(text) + 1 };
        let mut zones = Vec::new();
        while let Some((no, line)) = cur.lines.next() {
            let mut toks = line.split_ascii_whitespace();
            let (node, zone) = text::node_zone(&mut toks, no)?;
            if let Some(extra) = toks.next() {
                return Err(ParseError::new(no, format!("unexpected {} after the zone name", quote(extra))));
            }
            zones.push(parse_zone(&mut cur, node, zone)?);
        }
        if zones.is_empty() {
            return Err(text::empty_input());
        }
        Ok(ZoneInfo { zones })
    }
}

struct Cursor<'a> {
    lines: Peekable<Lines<'a>>,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self, want: &str) -> Result<(usize, &'a str), ParseError> {
        self.lines
            .next()
            .ok_or_else(|| ParseError::new(self.end, format!("unexpected end of input, expected `{want}`")))
    }

    fn peek_tokens(&mut self) -> Option<(usize, [Option<&'a str>; 3])> {
        let &(no, line) = self.lines.peek()?;
        let mut t = line.split_ascii_whitespace();
        Some((no, [t.next(), t.next(), t.next()]))
    }

    /// The value of a `<key> <value>` line (`key` may contain spaces and a colon).
    fn keyed(&mut self, key: &str) -> Result<(usize, &'a str), ParseError> {
        let (no, line) = self.next(key)?;
        let value = line
            .trim_start()
            .strip_prefix(key)
            .filter(|rest| rest.starts_with(' '))
            .map(str::trim)
            .ok_or_else(|| {
            ParseError::new(no, format!("expected `{key} <value>`, found {}", quote(line)))
        })?;
        Ok((no, value))
    }

    fn keyed_u64(&mut self, key: &str) -> Result<u64, ParseError> {
        let (no, v) = self.keyed(key)?;
        text::dec_u64(v, no, key)
    }

    fn keyed_i32(&mut self, key: &str) -> Result<i32, ParseError> {
        let (no, v) = self.keyed(key)?;
        text::dec_i32(v, no, key)
    }

    fn optional_i32(&mut self, key: &str) -> Result<Option<i32>, ParseError> {
        match self.peek_tokens() {
            Some((_, [Some(k), _, _])) if k == key => self.keyed_i32(key).map(Some),
            _ => Ok(None),
        }
    }

    /// A `name value` stat line.
    fn stat(&mut self) -> Result<(String, u64), ParseError> {
        let (no, line) = self.next("name value")?;
        let mut t = line.split_ascii_whitespace();
        match (t.next(), t.next(), t.next()) {
            (Some(name), Some(v), None) => Ok((name.to_owned(), text::dec_u64(v, no, name)?)),
            _ => {
                Err(ParseError::new(no, format!("expected a `name value` stat line, found {}", quote(line))))
            }
        }
    }
}

fn parse_zone(cur: &mut Cursor<'_>, node: u32, zone: &str) -> Result<ZoneInfoZone, ParseError> {
    let mut node_stats = None;
    if matches!(cur.peek_tokens(), Some((_, [Some("per-node"), Some("stats"), None]))) {
        cur.lines.next();
        let mut stats = Vec::new();
        while !matches!(cur.peek_tokens(), Some((_, [Some("pages"), Some("free"), _])) | None) {
            stats.push(cur.stat()?);
        }
        node_stats = Some(stats);
    }
    let pages_free = cur.keyed_u64("pages free")?;
    let boost = cur.keyed_u64("boost")?;
    let min = cur.keyed_u64("min")?;
    let low = cur.keyed_u64("low")?;
    let high = cur.keyed_u64("high")?;
    let promo = match cur.peek_tokens() {
        Some((_, [Some("promo"), _, _])) => Some(cur.keyed_u64("promo")?),
        _ => None,
    };
    let spanned = cur.keyed_u64("spanned")?;
    let present = cur.keyed_u64("present")?;
    let managed = cur.keyed_u64("managed")?;
    let cma = cur.keyed_u64("cma")?;
    let protection = parse_protection(cur)?;
    let populated = match cur.lines.peek() {
        None => None,
        Some(&(_, line)) if line.starts_with("Node") => None,
        Some(_) => Some(parse_populated(cur)?),
    };
    Ok(ZoneInfoZone {
        node,
        zone: zone.to_owned(),
        node_stats,
        pages_free,
        boost,
        min,
        low,
        high,
        promo,
        spanned,
        present,
        managed,
        cma,
        protection,
        populated,
    })
}

fn parse_protection(cur: &mut Cursor<'_>) -> Result<Vec<i64>, ParseError> {
    let (no, v) = cur.keyed("protection:")?;
    let inner = v.strip_prefix('(').and_then(|s| s.strip_suffix(')')).ok_or_else(|| {
        ParseError::new(no, format!("protection: expected `(a, b, …)`, found {}", quote(v)))
    })?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner.split(',').map(|t| text::dec_i64(t.trim(), no, "protection")).collect()
}

fn parse_populated(cur: &mut Cursor<'_>) -> Result<PopulatedZone, ParseError> {
    let mut stats = Vec::new();
    while !matches!(cur.peek_tokens(), Some((_, [Some("pagesets"), None, _])) | None) {
        stats.push(cur.stat()?);
    }
    cur.next("pagesets")?;
    let mut pagesets = Vec::new();
    while matches!(cur.peek_tokens(), Some((_, [Some("cpu:"), _, _]))) {
        let (no, v) = cur.keyed("cpu:")?;
        let cpu = text::dec_u32(v, no, "cpu")?;
        let count = cur.keyed_i32("count:")?;
        let high = cur.keyed_i32("high:")?;
        let batch = cur.keyed_i32("batch:")?;
        let high_min = cur.optional_i32("high_min:")?;
        let high_max = cur.optional_i32("high_max:")?;
        let stat_threshold = cur.keyed_i32("vm stats threshold:")?;
        pagesets.push(Pageset { cpu, count, high, batch, high_min, high_max, stat_threshold });
    }
    let (no, v) = cur.keyed("node_unreclaimable:")?;
    let node_unreclaimable = text::dec_u32(v, no, "node_unreclaimable")?;
    let start_pfn = cur.keyed_u64("start_pfn:")?;
    Ok(PopulatedZone { stats, pagesets, node_unreclaimable, start_pfn })
}

fn write_stats(f: &mut fmt::Formatter<'_>, stats: &[(String, u64)]) -> fmt::Result {
    for (name, v) in stats {
        f.write_str("\n      ")?;
        text::pad_right(f, name, 12)?;
        write!(f, " {v}")?;
    }
    Ok(())
}

impl fmt::Display for Pageset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n    cpu: {}", self.cpu)?;
        write!(f, "\n              count:    {}", self.count)?;
        write!(f, "\n              high:     {}", self.high)?;
        write!(f, "\n              batch:    {}", self.batch)?;
        if let Some(v) = self.high_min {
            write!(f, "\n              high_min: {v}")?;
        }
        if let Some(v) = self.high_max {
            write!(f, "\n              high_max: {v}")?;
        }
        write!(f, "\n  vm stats threshold: {}", self.stat_threshold)
    }
}

impl fmt::Display for ZoneInfoZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Node {}, zone ", self.node)?;
        text::pad_left(f, &self.zone, 8)?;
        if let Some(stats) = &self.node_stats {
            f.write_str("\n  per-node stats")?;
            write_stats(f, stats)?;
        }
        write!(f, "\n  pages free     {}", self.pages_free)?;
        write!(f, "\n        boost    {}", self.boost)?;
        write!(f, "\n        min      {}", self.min)?;
        write!(f, "\n        low      {}", self.low)?;
        write!(f, "\n        high     {}", self.high)?;
        if let Some(p) = self.promo {
            write!(f, "\n        promo    {p}")?;
        }
        write!(f, "\n        spanned  {}", self.spanned)?;
        write!(f, "\n        present  {}", self.present)?;
        write!(f, "\n        managed  {}", self.managed)?;
        write!(f, "\n        cma      {}", self.cma)?;
        f.write_str("\n        protection: (")?;
        for (i, p) in self.protection.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        f.write_str(")")?;
        let Some(pz) = &self.populated else {
            return f.write_str("\n");
        };
        write_stats(f, &pz.stats)?;
        f.write_str("\n  pagesets")?;
        pz.pagesets.iter().try_for_each(|p| p.fmt(f))?;
        write!(f, "\n  node_unreclaimable:  {}", pz.node_unreclaimable)?;
        write!(f, "\n  start_pfn:           {}\n", pz.start_pfn)
    }
}

impl fmt::Display for ZoneInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.zones.iter().try_for_each(|z| z.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6.1-style zone: no `promo`, no `high_min`/`high_max`.
    const OLD: &str = "\
Node 0, zone   Normal
  pages free     1000
        boost    0
        min      10
        low      20
        high     30
        spanned  4096
        present  4096
        managed  4000
        cma      0
        protection: (0, 0)
      nr_free_pages 1000
  pagesets
    cpu: 0
              count:    5
              high:     6
              batch:    1
  vm stats threshold: 2
  node_unreclaimable:  0
  start_pfn:           4096
Node 0, zone  Movable
  pages free     0
        boost    0
        min      0
        low      0
        high     0
        spanned  0
        present  0
        managed  0
        cma      0
        protection: ()
";

    #[test]
    fn older_layout_round_trips() {
        let z = ZoneInfo::parse(OLD).unwrap();
        let n = z.zone(0, "Normal").unwrap();
        assert_eq!((n.promo, n.stat("nr_free_pages")), (None, Some(1000)));
        let ps = n.populated.as_ref().unwrap().pagesets[0];
        assert_eq!((ps.high_min, ps.high_max, ps.stat_threshold), (None, None, 2));
        assert!(z.zone(0, "Movable").unwrap().protection.is_empty());
        assert_eq!(z.render(), OLD);
    }

    #[test]
    fn accessors() {
        let z = ZoneInfo::parse(OLD).unwrap();
        let n = z.zone(0, "Normal").unwrap();
        assert_eq!(n.node_stat("nr_free_pages"), None);
        assert_eq!(n.stat("missing"), None);
        assert_eq!(z.zone(0, "Movable").unwrap().stat("nr_free_pages"), None);
    }
}
