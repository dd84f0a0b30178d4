//! A simulated machine shaped like a real one: the zones of a `/proc/zoneinfo` file.
//!
//! zoneinfo gives each populated zone's span (`start_pfn`, `spanned`, `present`) and its
//! `managed` pages, and one pageset per online CPU. It does not say *where* in the span the
//! managed pages lie; the model keeps them contiguous (see [`pageblock_core::ZoneSpan`]) and
//! places them by a rule that fits the machines we have files from: a zone with holes keeps
//! its managed pages at the top of its span (the firmware and early-boot reservations of
//! ZONE_DMA sit at its bottom, and ZONE_DMA32 ends below the PCI hole), a zone without holes
//! keeps them at the bottom (memory reserved or offlined after boot sits above). A caller that
//! knows better — a trace whose pfns show where the managed pages are — passes the lowest pfn
//! it saw.

use pageblock_core::config::ZoneSpan;
use pageblock_core::{NodeConfig, ZoneConfig, ZoneType};
use pageblock_formats::zoneinfo::ZoneInfo;

/// Build the node that `zi` describes (node 0 only; the CPU count is the number of
/// pagesets). `lowest_pfn(zone)` may name the lowest pfn known to be managed in a zone.
pub fn node_from_zoneinfo(
    zi: &ZoneInfo,
    lowest_pfn: &dyn Fn(ZoneType) -> Option<u64>,
) -> Result<NodeConfig, String> {
    let mut zones = Vec::new();
    for z in zi.zones.iter().filter(|z| z.node == 0 && z.managed > 0) {
        let t = ZoneType::from_name(&z.zone)
            .ok_or_else(|| format!("zoneinfo: unknown zone type `{}`", z.zone))?;
        let populated =
            z.populated.as_ref().ok_or_else(|| format!("zoneinfo: zone {} has no pagesets", z.zone))?;
        let span =
            ZoneSpan { start_pfn: populated.start_pfn, spanned_pages: z.spanned, present_pages: z.present };
        let start = managed_start(span, z.managed, lowest_pfn(t));
        let cpus =
            u32::try_from(populated.pagesets.len()).map_err(|_| "zoneinfo: too many CPUs".to_owned())?;
        zones.push(ZoneConfig { span, nr_cpus: cpus, cma_pages: 0, ..ZoneConfig::new(t, start, z.managed) });
    }
    if zones.is_empty() {
        return Err("zoneinfo: no populated zone on node 0".to_owned());
    }
    let node = NodeConfig { zones };
    node.validate().map_err(|e| format!("zoneinfo: {e}"))?;
    Ok(node)
}

/// Where the `managed` pages of a zone spanning `span` start (see the module docs).
fn managed_start(span: ZoneSpan, managed: u64, lowest: Option<u64>) -> u64 {
    let end = span.start_pfn.saturating_add(span.spanned_pages);
    let top = end.saturating_sub(managed).max(span.start_pfn);
    match lowest {
        Some(pfn) => pfn.clamp(span.start_pfn, top),
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
        let node = node_from_zoneinfo(&zi, &|_| None).unwrap();
        let z: Vec<(ZoneType, u64, u64, u32)> =
            node.zones.iter().map(|z| (z.zone_type, z.start_pfn, z.managed_pages, z.nr_cpus)).collect();
        assert_eq!(
            z,
            [
                (ZoneType::Dma, 0x100, 3840, 2),
                (ZoneType::Dma32, 0x100000 - 772915, 772915, 2),
                (ZoneType::Normal, 0x100000, 655360, 2),
            ]
        );
        let hinted = node_from_zoneinfo(&zi, &|t| (t == ZoneType::Dma32).then_some(0x1000)).unwrap();
        assert_eq!(hinted.zones[1].start_pfn, 0x1000);
    }
}
