//! An [`Inspection`] in the Prometheus text exposition format (version 0.0.4): HELP and TYPE
//! before each family, `pageblock_` prefix, bytes for memory, ratios for indices, `_total` for
//! counters, labels `node`, `zone`, `order`, `migratetype`, `state`.

use std::fmt::Write as _;

use pageblock_formats::extfrag;

use super::{Inspection, ZoneReport};

/// Bytes per page (x86-64).
pub const PAGE_SIZE: u64 = 4096;

/// A family being written: its samples follow the header.
pub struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl<'a> Family<'a> {
    /// Write the family's HELP and TYPE (`kind`: `gauge`, `counter`) lines.
    pub fn new(out: &'a mut String, name: &'static str, kind: &str, help: &str) -> Family<'a> {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        Family { out, name }
    }

    /// Write one sample.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        let _ = write!(self.out, "{}", self.name);
        if !labels.is_empty() {
            let body: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let _ = write!(self.out, "{{{}}}", body.join(","));
        }
        let _ = writeln!(self.out, " {value}");
    }
}

/// Label values escape `\`, `"` and newlines.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `unusable_free_index()` as a ratio: the share of free memory in blocks smaller than `order`.
pub fn unusable_index(free: &[u64], order: u32) -> f64 {
    f64::from(extfrag::unusable_free_index(free, order)) / 1000.0
}

/// `fragmentation_index()` as a ratio (-1: a block of `order` is free).
pub fn fragmentation_index(free: &[u64], order: u32) -> f64 {
    f64::from(extfrag::fragmentation_index(free, order)) / 1000.0
}

fn zl(z: &ZoneReport) -> [(&'static str, String); 2] {
    [("node", z.node.to_string()), ("zone", z.zone.clone())]
}

/// One sample of a zone, with extra labels.
fn emit(f: &mut Family, z: &ZoneReport, extra: &[(&'static str, String)], v: f64) {
    let labels: Vec<(&'static str, String)> = zl(z).into_iter().chain(extra.iter().cloned()).collect();
    let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    f.sample(&l, v);
}

/// Memory and free-list families.
fn free_memory(out: &mut String, zones: &[ZoneReport]) {
    let mut f = Family::new(
        out,
        "pageblock_zone_managed_bytes",
        "gauge",
        "Memory the zone's buddy allocator manages.",
    );
    for z in zones {
        emit(&mut f, z, &[], (z.managed * PAGE_SIZE) as f64);
    }
    let help = "Free memory in the zone (NR_FREE_PAGES; per-CPU cached pages excluded).";
    let mut f = Family::new(out, "pageblock_zone_free_bytes", "gauge", help);
    for z in zones {
        emit(&mut f, z, &[], (z.nr_free_pages * PAGE_SIZE) as f64);
    }
    let help = "Free blocks per order, all migratetypes (/proc/buddyinfo).";
    let mut f = Family::new(out, "pageblock_buddy_free_blocks", "gauge", help);
    for z in zones {
        for (o, &n) in z.buddy_free.iter().flatten().enumerate() {
            emit(&mut f, z, &[("order", o.to_string())], n as f64);
        }
    }
    let help = "Free blocks per order and migratetype (/proc/pagetypeinfo; the kernel stops counting a list at 100000).";
    let mut f = Family::new(out, "pageblock_buddy_free_blocks_by_migratetype", "gauge", help);
    for z in zones {
        for (mt, counts) in z.free_by_migratetype.iter().flatten() {
            for (o, &n) in counts.iter().enumerate() {
                emit(&mut f, z, &[("order", o.to_string()), ("migratetype", mt.clone())], n as f64);
            }
        }
    }
}

/// Pageblock families: by migratetype, by content, free and mixed.
fn pageblocks(out: &mut String, zones: &[ZoneReport]) {
    let mut f =
        Family::new(out, "pageblock_pageblocks", "gauge", "Pageblocks per migratetype (/proc/pagetypeinfo).");
    for z in zones {
        for (mt, n) in z.blocks_by_migratetype.iter().flatten() {
            emit(&mut f, z, &[("migratetype", mt.clone())], *n as f64);
        }
    }
    let help = "Pageblocks by what they hold (/proc/kpageflags): free, thp, movable, unmovable, mixed, hugetlb, not_managed (offline or not initialised), hole.";
    let mut f = Family::new(out, "pageblock_pageblocks_by_content", "gauge", help);
    for z in zones {
        if let Some(c) = &z.content {
            for (state, n) in [
                ("free", c.free_pageblocks),
                ("thp", c.thp_pageblocks),
                ("movable", c.movable_pageblocks),
                ("unmovable", c.unmovable_pageblocks),
                ("mixed", c.mixed_pageblocks),
                ("hugetlb", c.hugetlb_pageblocks),
                ("not_managed", c.not_managed_pageblocks),
                ("hole", c.hole_pageblocks),
            ] {
                emit(&mut f, z, &[("state", state.to_owned())], n as f64);
            }
        }
    }
    let help =
        "Mixed pageblocks whose unmovable pages include slab or page tables (a lower bound on mixed blocks).";
    let mut f = Family::new(out, "pageblock_mixed_slab_pageblocks", "gauge", help);
    for z in zones {
        if let Some(c) = &z.content {
            emit(&mut f, z, &[], c.mixed_slab_pageblocks as f64);
        }
    }
    let help = "Whole free pageblocks (by content when kpageflags is readable, else from buddyinfo).";
    let mut f = Family::new(out, "pageblock_free_pageblocks", "gauge", help);
    for z in zones {
        if let Some(n) = z.content.as_ref().map(|c| c.free_pageblocks).or(z.buddyinfo_free_pageblocks) {
            emit(&mut f, z, &[], n as f64);
        }
    }
}

/// An index of a zone's free blocks per order at an order.
type Index = fn(&[u64], u32) -> f64;

/// The unusable and fragmentation indices per order.
fn indices(out: &mut String, zones: &[ZoneReport]) {
    let kinds: [(&'static str, &str, Index); 2] = [
        (
            "pageblock_unusable_index",
            "Share of free memory in blocks too small for the order (0..1; the debugfs unusable_index / 1000).",
            unusable_index,
        ),
        (
            "pageblock_fragmentation_index",
            "Extfrag index per order (the debugfs extfrag_index / 1000): near 0 a failure would be lack of memory, near 1 fragmentation; -1 a block is free.",
            fragmentation_index,
        ),
    ];
    for (name, help, index) in kinds {
        let mut f = Family::new(out, name, "gauge", help);
        for z in zones {
            for o in 0..z.buddy_free.as_ref().map_or(0, |v| v.len() as u32) {
                emit(
                    &mut f,
                    z,
                    &[("order", o.to_string())],
                    index(z.buddy_free.as_deref().unwrap_or(&[]), o),
                );
            }
        }
    }
}

impl Inspection {
    /// The exposition text.
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        free_memory(&mut out, &self.zones);
        pageblocks(&mut out, &self.zones);
        indices(&mut out, &self.zones);
        for (item, n) in &self.vmstat {
            let name: &'static str = super::VMSTAT_METRICS
                .iter()
                .find(|(i, _)| i == item)
                .map_or("pageblock_vmstat_unknown_total", |(_, m)| m);
            let help = format!("/proc/vmstat {item} since boot.");
            Family::new(&mut out, name, "counter", &help).sample(&[], *n as f64);
        }
        let help = "Whether each source file could be read (1) or not (0: its families are left out).";
        let mut f = Family::new(&mut out, "pageblock_source_up", "gauge", help);
        for (source, up) in &self.sources {
            f.sample(&[("source", source)], f64::from(u8::from(*up)));
        }
        let help = "Time the inspection behind this scrape took.";
        Family::new(&mut out, "pageblock_inspect_duration_seconds", "gauge", help).sample(&[], self.seconds);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_kernels_formulas() {
        // 512 single free pages: nothing usable at order 9; pure fragmentation.
        let scattered = [512, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(unusable_index(&scattered, 9), 1.0);
        assert_eq!(unusable_index(&scattered, 0), 0.0);
        assert!((fragmentation_index(&scattered, 9) - 0.997).abs() < 1e-9);
        let one_block = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0];
        assert_eq!(fragmentation_index(&one_block, 9), -1.0);
        assert_eq!(unusable_index(&[0; 11], 3), 1.0, "no free memory: nothing usable");
        assert_eq!(escape("a\"b\\c"), "a\\\"b\\\\c");
    }
}
