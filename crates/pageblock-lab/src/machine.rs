//! A simulated machine shaped like a real one: the zones of a `/proc/zoneinfo` file.
//!
//! zoneinfo gives each populated zone's span (`start_pfn`, `spanned`, `present`) and its
//! `managed` pages, and one pageset per online CPU. The model needs more: which pages are
//! online (they have a memmap and count in `/proc/pagetypeinfo`'s block table), which of those
//! the kernel reserved at boot, and where they lie in the span. It decides:
//!
//! * **reserved** = `present - managed` when that is small (at most a quarter of managed:
//!   firmware areas, the kernel image, early allocations, all online), else 0 (the rest of
//!   `present` is memory that is not online — a VM's unplugged memory); a pagetypeinfo block
//!   count, when known, settles it: online pages = blocks × pageblock size, at most present;
//! * **where**: the online pages are contiguous, reserved pages first. A zone with holes
//!   keeps them at the top of its span (ZONE_DMA's firmware area and ZONE_DMA32's PCI hole are
//!   at the bottom and top), a zone without holes at the bottom; a caller that knows better —
//!   a trace whose pfns show where the managed pages are — passes the lowest managed pfn it
//!   saw.

use pageblock_core::config::ZoneSpan;
use pageblock_core::{NodeConfig, ZoneConfig, ZoneType};
use pageblock_formats::zoneinfo::ZoneInfo;

/// What is known about a zone beyond zoneinfo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneHints {
    /// Pageblocks `/proc/pagetypeinfo` counts in the zone.
    pub blocks: Option<u64>,
    /// The lowest pfn known to be managed (seen in a trace).
    pub lowest_managed_pfn: Option<u64>,
    /// Pages that were offline and were onlined later (a later zoneinfo's managed pages
    /// minus this one's): memory placed after the managed pages, offline at the start.
    pub offline_pages: u64,
}

/// Build the node that `zi` describes (node 0; the CPU count is the number of pagesets),
/// with `hints(zone)` where the caller knows more.
pub fn node_from_zoneinfo(
    zi: &ZoneInfo,
    hints: &dyn Fn(ZoneType) -> ZoneHints,
) -> Result<NodeConfig, String> {
    let mut zones = Vec::new();
    for z in zi.zones.iter().filter(|z| z.node == 0 && z.managed > 0) {
        let t = ZoneType::from_name(&z.zone)
            .ok_or_else(|| format!("zoneinfo: unknown zone type `{}`", z.zone))?;
        let populated =
            z.populated.as_ref().ok_or_else(|| format!("zoneinfo: zone {} has no pagesets", z.zone))?;
        let span =
            ZoneSpan { start_pfn: populated.start_pfn, spanned_pages: z.spanned, present_pages: z.present };
        let h = hints(t);
        let reserved = reserved_pages(z.present, z.managed, h.blocks, pageblock_core::types::PAGEBLOCK_ORDER);
        let start =
            online_start(span, reserved + z.managed + h.offline_pages, reserved, h.lowest_managed_pfn);
        let cpus =
            u32::try_from(populated.pagesets.len()).map_err(|_| "zoneinfo: too many CPUs".to_owned())?;
        zones.push(ZoneConfig {
            span,
            reserved_pages: reserved,
            offline_pages: h.offline_pages,
            nr_cpus: cpus,
            cma_pages: 0,
            ..ZoneConfig::new(t, start, z.managed)
        });
    }
    if zones.is_empty() {
        return Err("zoneinfo: no populated zone on node 0".to_owned());
    }
    let node = NodeConfig { zones };
    node.validate().map_err(|e| format!("zoneinfo: {e}"))?;
    Ok(node)
}

/// Reserved (online, unmanaged) pages of a zone (see the module docs).
fn reserved_pages(present: u64, managed: u64, blocks: Option<u64>, pageblock_order: u32) -> u64 {
    let unmanaged = present.saturating_sub(managed);
    match blocks {
        Some(b) => (b << pageblock_order).min(present).saturating_sub(managed),
        None if unmanaged <= managed / 4 => unmanaged,
        None => 0,
    }
}

/// The first online pfn of a zone with `online` pages, `reserved` of them first.
fn online_start(span: ZoneSpan, online: u64, reserved: u64, lowest_managed: Option<u64>) -> u64 {
    let end = span.start_pfn.saturating_add(span.spanned_pages);
    let top = end.saturating_sub(online).max(span.start_pfn);
    let max_order_pages = 1u64 << pageblock_core::types::MAX_PAGE_ORDER;
    match lowest_managed {
        Some(pfn) => (pfn & !(max_order_pages - 1)).saturating_sub(reserved).clamp(span.start_pfn, top),
        None if span.spanned_pages > span.present_pages => top,
        None => span.start_pfn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE_ZONEINFO: &str = include_str!("../../pageblock-formats/tests/data/snapshots/before.zoneinfo");

    #[test]
    fn the_trace_machine_has_three_zones_and_two_cpus() {
        let zi = ZoneInfo::parse(TRACE_ZONEINFO).unwrap();
        let node = node_from_zoneinfo(&zi, &|_| ZoneHints::default()).unwrap();
        let z: Vec<(ZoneType, u64, u64, u64, u32)> = node
            .zones
            .iter()
            .map(|z| (z.zone_type, z.start_pfn, z.reserved_pages, z.managed_pages, z.nr_cpus))
            .collect();
        assert_eq!(
            z,
            [
                (ZoneType::Dma, 4096 - 3998, 158, 3840, 2),
                (ZoneType::Dma32, 0x100000 - 782336, 9421, 772915, 2),
                (ZoneType::Normal, 0x100000, 0, 655360, 2),
            ]
        );
        // The pageblocks pagetypeinfo counts: 8, 1528 and 1280.
        let blocks: Vec<u64> =
            node.zones.iter().map(|z| z.end_pfn().div_ceil(512) - z.start_pfn / 512).collect();
        assert_eq!(blocks, [8, 1528, 1280]);
        let hinted = node_from_zoneinfo(&zi, &|t| ZoneHints {
            lowest_managed_pfn: (t == ZoneType::Dma32).then_some(0x10345),
            ..ZoneHints::default()
        })
        .unwrap();
        assert_eq!(hinted.zones[1].first_managed_pfn(), 0x10000, "the hint's max-order block");
    }
}
