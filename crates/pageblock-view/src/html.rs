//! Self-contained HTML reports: inline CSS and SVG, no script, no network. One builder
//! ([`Page`]) and the two pictures every report uses: the pageblock map (one cell per
//! pageblock, coloured by what it holds, mixed blocks outlined) and line charts over runs or
//! time.

use std::fmt::Write as _;

use crate::BlockKind;

/// Cells per row of a pageblock map.
pub const MAP_COLUMNS: usize = 128;
/// Side of one cell, in pixels.
const CELL: usize = 6;

/// Every block state, its CSS class, colour and legend text (kernel terms).
const KINDS: [(BlockKind, &str, &str, &str); 8] = [
    (BlockKind::Free, "k-free", "#dcedc8", "whole free pageblock"),
    (BlockKind::Thp, "k-thp", "#2e7d32", "one THP (PMD-mapped huge page)"),
    (BlockKind::Movable, "k-movable", "#64b5f6", "movable pages only (LRU, anon)"),
    (BlockKind::Unmovable, "k-unmovable", "#e57373", "unmovable pages only (slab, page tables, kernel)"),
    (BlockKind::Mixed, "k-mixed", "#ffb300", "mixed: movable and unmovable pages"),
    (BlockKind::Hugetlb, "k-hugetlb", "#7e57c2", "hugetlbfs"),
    (
        BlockKind::NotManaged,
        "k-not-managed",
        "#90a4ae",
        "not managed by the kernel (offline, not initialised)",
    ),
    (BlockKind::Hole, "k-hole", "#eeeeee", "no memory / not wholly free"),
];

fn class_of(k: BlockKind) -> &'static str {
    KINDS.iter().find(|(kind, ..)| *kind == k).map_or("k-hole", |(_, c, ..)| c)
}

/// A labelled pageblock map.
pub type LabelledMap<'a> = (String, &'a [BlockKind]);

/// A row of small multiples: its label and its maps, in time order.
pub type MapRow<'a> = (String, Vec<LabelledMap<'a>>);

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A report page being built.
#[derive(Default)]
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    /// A page titled `title`.
    pub fn new(title: &str) -> Page {
        Page { title: title.to_owned(), body: String::new() }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h2>{}</h2>", esc(text));
    }

    /// A paragraph of plain text.
    pub fn para(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", esc(text));
    }

    /// Preformatted text (a report as the terminal prints it).
    pub fn pre(&mut self, text: &str) {
        let _ = writeln!(self.body, "<pre>{}</pre>", esc(text));
    }

    /// A table: header cells, then rows.
    pub fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.body.push_str("<table><tr>");
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", esc(h));
        }
        self.body.push_str("</tr>\n");
        for r in rows {
            self.body.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let tag = if i == 0 { "th" } else { "td" };
                let _ = write!(self.body, "<{tag}>{}</{tag}>", esc(c));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// Pageblock maps side by side (one per label), with the legend once.
    pub fn maps(&mut self, maps: &[(String, &[BlockKind])]) {
        self.body.push_str("<div class=\"maps\">\n");
        for (label, kinds) in maps {
            let _ = writeln!(self.body, "<figure><figcaption>{}</figcaption>", esc(label));
            self.body.push_str(&map_svg(kinds, CELL));
            self.body.push_str("</figure>\n");
        }
        self.body.push_str("</div>\n<ul class=\"legend\">");
        for (_, class, _, text) in KINDS {
            let _ = write!(self.body, "<li><span class=\"sw {class}\"></span>{}</li>", esc(text));
        }
        self.body.push_str("</ul>\n");
    }

    /// The evolution of maps as small multiples: one row per series (a policy, a zone), one
    /// small map per point in time, left to right.
    pub fn small_multiples(&mut self, rows: &[MapRow<'_>]) {
        for (row, maps) in rows {
            let _ = writeln!(self.body, "<h3>{}</h3><div class=\"maps small\">", esc(row));
            for (label, kinds) in maps {
                let _ = writeln!(self.body, "<figure><figcaption>{}</figcaption>", esc(label));
                self.body.push_str(&map_svg(kinds, 2));
                self.body.push_str("</figure>\n");
            }
            self.body.push_str("</div>\n");
        }
    }

    /// Each policy's final maps side by side, zones of more than a few pageblocks only
    /// (DMA's 8 blocks say nothing), labelled "policy — zone".
    pub fn policy_maps<'a>(
        &mut self,
        policies: impl Iterator<Item = (&'a str, &'a [(String, Vec<BlockKind>)])>,
    ) {
        let maps: Vec<(String, &[BlockKind])> = policies
            .flat_map(|(name, zones)| {
                zones
                    .iter()
                    .filter(|(_, k)| k.len() > 8)
                    .map(move |(z, k)| (format!("{name} — {z}"), k.as_slice()))
            })
            .collect();
        self.maps(&maps);
    }

    /// A line chart: one series per label, x from 1, y in `unit`.
    pub fn chart(&mut self, title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<f64>)]) {
        self.body.push_str(&chart_svg(title, x_label, y_label, series));
    }

    /// The whole document.
    pub fn render(&self) -> String {
        let mut css = String::from(
            "body{font:14px/1.4 sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}\
             pre{font:12px monospace;background:#f7f7f7;padding:8px;overflow-x:auto}\
             table{border-collapse:collapse;font:12px monospace}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}\
             th:first-child{text-align:left}.maps{display:flex;flex-wrap:wrap;gap:24px}.maps.small{gap:12px}.small figcaption{font-weight:normal;font-size:11px}h3{font-size:14px;margin:12px 0 4px}figure{margin:0}\
             figcaption{font-weight:bold;margin-bottom:4px}.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:16px}\
             .sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #999}\
             rect.pb{stroke:none}rect.k-mixed{stroke:#6d4c00;stroke-width:1}",
        );
        for (_, class, colour, _) in KINDS {
            let _ = write!(css, ".{class}{{fill:{colour};background:{colour}}}");
        }
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{css}</style></head>\n<body><h1>{t}</h1>\n{}</body></html>\n",
            self.body,
            t = esc(&self.title)
        )
    }
}

/// One map: `MAP_COLUMNS` cells of `cell` pixels per row, lowest pfn top left.
fn map_svg(kinds: &[BlockKind], cell: usize) -> String {
    let rows = kinds.len().div_ceil(MAP_COLUMNS).max(1);
    let (w, h) = (MAP_COLUMNS * cell, rows * cell);
    let mut s = format!(
        "<svg class=\"map\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"pageblock map, {} pageblocks\">",
        kinds.len()
    );
    for (i, &k) in kinds.iter().enumerate() {
        let (x, y) = ((i % MAP_COLUMNS) * CELL, (i / MAP_COLUMNS) * CELL);
        let _ = write!(
            s,
            "<rect class=\"pb {}\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\"/>",
            class_of(k),
            CELL - 1,
            CELL - 1
        );
    }
    s.push_str("</svg>\n");
    s
}

const PALETTE: [&str; 6] = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f"];

/// A line chart with axes, ticks at the series' extremes and a legend.
fn chart_svg(title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<f64>)]) -> String {
    let (w, h, left, bottom, top, right) = (640.0, 300.0, 70.0, 40.0, 30.0, 180.0);
    let n = series.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(2);
    let max = series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0f64, f64::max);
    let min = series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0f64, f64::min);
    let span = if max > min { max - min } else { 1.0 };
    let x = |i: usize| left + (w - left - right) * i as f64 / (n - 1) as f64;
    let y = |v: f64| top + (h - top - bottom) * (1.0 - (v - min) / span);
    let mut s = format!(
        "<svg class=\"chart\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    let _ = write!(s, "<text x=\"{left}\" y=\"18\" font-weight=\"bold\">{}</text>", esc(title));
    let (x0, x1, y0, y1) = (left, w - right, h - bottom, top);
    let _ = write!(s, "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#444\"/>");
    let _ = write!(s, "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{y1}\" stroke=\"#444\"/>");
    for v in [min, (min + max) / 2.0, max] {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{v:.1}</text>",
            x0 - 4.0,
            y(v) + 4.0
        );
    }
    for i in [0, n - 1] {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x(i),
            y0 + 14.0,
            i + 1
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
        (x0 + x1) / 2.0,
        h - 6.0,
        esc(x_label)
    );
    let _ = write!(
        s,
        "<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>",
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        esc(y_label)
    );
    for (k, (label, values)) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let points: Vec<String> =
            values.iter().enumerate().map(|(i, &v)| format!("{:.1},{:.1}", x(i), y(v))).collect();
        let _ = write!(
            s,
            "<polyline class=\"series\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        let ly = top + 16.0 * k as f64;
        let _ = write!(
            s,
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"3\"/>",
            x1 + 10.0,
            x1 + 30.0
        );
        let _ =
            write!(s, "<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>", x1 + 34.0, ly + 4.0, esc(label));
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_has_one_cell_per_pageblock() {
        let kinds = vec![BlockKind::Free; 300];
        let mut p = Page::new("t <&>");
        p.maps(&[("zone".into(), &kinds)]);
        p.chart("c", "run", "%", &[("a".into(), vec![1.0, 2.0]), ("b".into(), vec![3.0])]);
        let html = p.render();
        assert_eq!(html.matches("<rect class=\"pb ").count(), 300);
        assert!(html.contains("<title>t &lt;&amp;&gt;</title>"));
        assert_eq!(html.matches("<polyline").count(), 2);
        assert!(!html.contains("<script"), "no script, no network");
    }
}
