//! What a machine is ([`NodeConfig`]: its zones, each a [`ZoneConfig`], fixed at
//! construction). How its allocator behaves is [`crate::Policy`].
//!
//! Defaults follow Linux 6.18 on x86_64: 4 KiB pages, `MAX_PAGE_ORDER` 10, `pageblock_order` 9,
//! THP configured, no CMA, memory isolation configured, one NUMA node.
//!
//! Validated the way the kernel validates its boot parameters: a value the kernel would
//! reject or that this model cannot hold (a memmap index past `u32`) is a [`ConfigError`],
//! never a panic or a hang later.

mod error;
mod memmap_layout;

pub use error::ConfigError;
pub use memmap_layout::{
    MemmapLayout, KERNEL_STRUCT_PAGE_BYTES, MAX_STRUCT_PAGE_BYTES, MIN_STRUCT_PAGE_BYTES,
};

use crate::types::{MAX_ORDER_LIMIT, MAX_PAGE_ORDER, PAGEBLOCK_ORDER, PAGE_SIZE};

/// The kernel's zone types, in index order (`enum zone_type` on x86_64 with ZONE_DEVICE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ZoneType {
    /// ZONE_DMA: below 16 MiB.
    Dma,
    /// ZONE_DMA32: below 4 GiB.
    Dma32,
    /// ZONE_NORMAL.
    Normal,
    /// ZONE_MOVABLE.
    Movable,
    /// ZONE_DEVICE (never populated by the buddy allocator).
    Device,
}

/// Number of zone types (`MAX_NR_ZONES`), the length of the `protection:` tuple.
pub const MAX_NR_ZONES: usize = 5;

impl ZoneType {
    /// Every zone type in index order.
    pub const ALL: [ZoneType; MAX_NR_ZONES] =
        [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal, ZoneType::Movable, ZoneType::Device];

    /// The name the kernel prints (`zone_names[]`).
    pub const fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
            ZoneType::Movable => "Movable",
            ZoneType::Device => "Device",
        }
    }

    /// The lower-case suffix of per-zone vmstat events (`pgalloc_normal`).
    pub const fn vmstat_suffix(self) -> &'static str {
        match self {
            ZoneType::Dma => "dma",
            ZoneType::Dma32 => "dma32",
            ZoneType::Normal => "normal",
            ZoneType::Movable => "movable",
            ZoneType::Device => "device",
        }
    }

    /// Zone index (`zone_idx`).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The zone type for a name as `/proc/zoneinfo` prints it.
    pub fn from_name(name: &str) -> Option<ZoneType> {
        ZoneType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `sysctl_lowmem_reserve_ratio[]`: how much of the memory above it a zone keeps back from
    /// requests that could have used a higher zone (1/ratio; 0 keeps nothing back).
    pub const fn lowmem_reserve_ratio(self) -> u64 {
        match self {
            ZoneType::Dma | ZoneType::Dma32 => 256,
            ZoneType::Normal => 32,
            ZoneType::Movable | ZoneType::Device => 0,
        }
    }
}

/// A zone's span as `/proc/zoneinfo` reports it (`zone_start_pfn`, `spanned_pages`,
/// `present_pages`). Only the zone's online pages ([`ZoneConfig::start_pfn`] ..
/// [`ZoneConfig::end_pfn`]: reserved, then managed) have a memmap here; holes and offline
/// memory in the rest of the span are reported, never touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneSpan {
    /// `zone_start_pfn` (the `start_pfn:` line).
    pub start_pfn: u64,
    /// `spanned_pages`: pfns from the zone's start to its end, holes included.
    pub spanned_pages: u64,
    /// `present_pages`: pages that exist (spanned minus holes).
    pub present_pages: u64,
}

/// The geometry of one zone, fixed when it is built.
///
/// # Invariants (checked by [`ZoneConfig::validate`])
///
/// * `managed_pages > 0`, `reserved_pages + managed_pages <= span.present_pages <=
///   span.spanned_pages`;
/// * `span.start_pfn <= start_pfn` and `end_pfn() <= span.start_pfn + span.spanned_pages`;
/// * every pfn fits the model's 40-bit pfn space, and the memmap index (u32) covers the zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConfig {
    /// NUMA node id printed in reports.
    pub node: u32,
    /// Which zone this is.
    pub zone_type: ZoneType,
    /// First online pfn: the memmap covers `[start_pfn, end_pfn())`, the reserved pages first.
    /// Need not be aligned.
    pub start_pfn: u64,
    /// Online pages the kernel reserved at boot and never freed (firmware areas, the kernel
    /// image, early allocations: `present - managed` of a zone without offline memory). They
    /// count in the zone's pageblocks but are never allocatable (`PageReserved`).
    pub reserved_pages: u64,
    /// `managed_pages`: pages handed to the buddy allocator, after the reserved ones.
    pub managed_pages: u64,
    /// Pages after the managed ones that are offline at boot and may be onlined later
    /// (memory hotplug, a VM's hot-added memory): they have a memmap but are neither managed
    /// nor counted in the zone's pageblocks until onlined.
    pub offline_pages: u64,
    /// The span the reports print.
    pub span: ZoneSpan,
    /// Largest buddy order (`MAX_PAGE_ORDER`).
    pub max_order: u32,
    /// Order of a pageblock (`pageblock_order`).
    pub pageblock_order: u32,
    /// CONFIG_CMA: adds the CMA migratetype to reports.
    pub config_cma: bool,
    /// Pages at the top of the zone reserved as a CMA area (whole pageblocks; needs
    /// `config_cma`).
    pub cma_pages: u64,
    /// CONFIG_TRANSPARENT_HUGEPAGE: pcp lists for the pageblock order, and khugepaged's
    /// `min_free_kbytes` recommendation.
    pub thp: bool,
    /// Online CPUs (per-CPU pagesets, vmstat thresholds).
    pub nr_cpus: u32,
    /// How the memmap is laid out: pageblock's split state array (the default) or the
    /// kernel's one record per page, of a chosen size. Changes speed only, never a decision.
    pub memmap_layout: MemmapLayout,
}

/// The highest pfn + 1 the model accepts (`MAX_PHYSMEM_BITS` 52 on x86_64).
pub const MAX_PFN: u64 = 1 << (52 - crate::types::PAGE_SHIFT);

impl ZoneConfig {
    /// With THP, the pageblock size in pages (what khugepaged's `min_free_kbytes`
    /// recommendation is made of); `None` without.
    pub fn thp_pageblock_pages(&self) -> Option<u64> {
        self.thp.then_some(1u64 << self.pageblock_order)
    }

    /// A ZONE_NORMAL of `bytes` bytes at 4 GiB with the kernel's x86_64 defaults, every page
    /// managed.
    pub fn normal(bytes: u64) -> ZoneConfig {
        ZoneConfig::new(ZoneType::Normal, 0x100000, bytes / PAGE_SIZE)
    }

    /// A zone of `zone_type` whose `pages` pages from `start_pfn` are all managed, with the
    /// kernel's x86_64 defaults for everything else.
    pub fn new(zone_type: ZoneType, start_pfn: u64, pages: u64) -> ZoneConfig {
        ZoneConfig {
            node: 0,
            zone_type,
            start_pfn,
            reserved_pages: 0,
            managed_pages: pages,
            offline_pages: 0,
            span: ZoneSpan { start_pfn, spanned_pages: pages, present_pages: pages },
            max_order: MAX_PAGE_ORDER,
            pageblock_order: PAGEBLOCK_ORDER,
            config_cma: false,
            cma_pages: 0,
            thp: true,
            nr_cpus: 2,
            memmap_layout: MemmapLayout::Split,
        }
    }

    /// Pages with a memmap: reserved, managed and offline.
    pub fn nr_pages(&self) -> u64 {
        self.reserved_pages.saturating_add(self.managed_pages).saturating_add(self.offline_pages)
    }

    /// The first managed pfn.
    pub fn first_managed_pfn(&self) -> u64 {
        self.start_pfn.saturating_add(self.reserved_pages)
    }

    /// First pfn past the online range.
    pub fn end_pfn(&self) -> u64 {
        self.start_pfn.saturating_add(self.nr_pages())
    }

    /// Check the geometry; every constructor of a zone calls this first.
    pub fn validate(&self) -> Result<(), ConfigError> {
        use ConfigError as E;
        if self.max_order > MAX_ORDER_LIMIT {
            return Err(E::MaxOrder(self.max_order));
        }
        if self.pageblock_order > self.max_order {
            return Err(E::PageblockOrder {
                pageblock_order: self.pageblock_order,
                max_order: self.max_order,
            });
        }
        if self.managed_pages == 0 {
            return Err(E::Empty);
        }
        self.validate_span()?;
        let align = 1u64 << self.pageblock_order;
        let span = self.end_pfn().div_ceil(align) * align - (self.start_pfn & !(align - 1));
        if span >= u32::MAX as u64 {
            return Err(E::TooLarge(self.nr_pages()));
        }
        if self.cma_pages > 0 && !self.config_cma {
            return Err(E::CmaWithoutConfig);
        }
        if self.cma_pages % align != 0 || self.cma_pages > self.managed_pages / 2 {
            return Err(E::CmaArea(self.cma_pages));
        }
        if self.nr_cpus == 0 || self.nr_cpus > MAX_CPUS {
            return Err(E::Cpus(self.nr_cpus));
        }
        if let MemmapLayout::Records(bytes) = self.memmap_layout {
            if !self.memmap_layout.is_valid() {
                return Err(E::StructPageBytes(bytes));
            }
        }
        Ok(())
    }

    fn validate_span(&self) -> Result<(), ConfigError> {
        let s = &self.span;
        let span_end = s.start_pfn.checked_add(s.spanned_pages);
        let online = self
            .reserved_pages
            .checked_add(self.managed_pages)
            .and_then(|n| n.checked_add(self.offline_pages));
        let online_end = online.and_then(|n| self.start_pfn.checked_add(n));
        let (Some(span_end), Some(online), Some(online_end)) = (span_end, online, online_end) else {
            return Err(ConfigError::Span(self.zone_type));
        };
        if span_end > MAX_PFN {
            return Err(ConfigError::TooLarge(online));
        }
        let nested = s.start_pfn <= self.start_pfn && online_end <= span_end;
        let counts = online - self.offline_pages <= s.present_pages && s.present_pages <= s.spanned_pages;
        if !nested || !counts {
            return Err(ConfigError::Span(self.zone_type));
        }
        Ok(())
    }
}

/// The most CPUs a machine may have here.
pub const MAX_CPUS: u32 = 1024;

/// The largest per-CPU batch accepted ([`crate::policy::PcpBatch`]; the kernel computes at
/// most 63).
pub const MAX_PCP_BATCH: u32 = 1024;

/// A machine: one node's populated zones, lowest first.
///
/// # Invariants (checked by [`NodeConfig::validate`])
///
/// * at least one zone; zone types strictly ascending; zone spans ascending and disjoint;
/// * node-wide settings (node id, CPUs, orders, THP, CONFIG_CMA) are equal in every zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// The populated zones, in zone-index order.
    pub zones: Vec<ZoneConfig>,
}

impl NodeConfig {
    /// A node with one zone.
    pub fn single(zone: ZoneConfig) -> NodeConfig {
        NodeConfig { zones: vec![zone] }
    }

    /// A machine with `bytes` of RAM laid out as on x86_64 PCs: ZONE_DMA is the first 16 MiB
    /// (pfn 1 up, its lowest 255 pages reserved by the firmware and kernel, as on a real
    /// machine: 3840 managed pages), ZONE_DMA32 the RAM below the 3 GiB PCI hole, ZONE_NORMAL
    /// the rest from 4 GiB. Machines of 3 GiB or less have no ZONE_NORMAL.
    pub fn x86_64(bytes: u64, nr_cpus: u32) -> NodeConfig {
        const DMA_END: u64 = 0x1000;
        const DMA_RESERVED: u64 = 255;
        const HOLE_START: u64 = 0xc0000;
        let pages = bytes / PAGE_SIZE;
        let mut zones = Vec::new();
        let dma_managed = pages.min(DMA_END).saturating_sub(1 + DMA_RESERVED);
        if dma_managed > 0 {
            let mut dma = ZoneConfig::new(ZoneType::Dma, 1, dma_managed);
            dma.reserved_pages = DMA_RESERVED;
            dma.span = ZoneSpan { start_pfn: 1, spanned_pages: DMA_END - 1, present_pages: DMA_END - 1 };
            zones.push(dma);
        }
        if pages > DMA_END {
            zones.push(ZoneConfig::new(ZoneType::Dma32, DMA_END, pages.min(HOLE_START) - DMA_END));
        }
        if pages > HOLE_START {
            zones.push(ZoneConfig::new(ZoneType::Normal, 0x100000, pages - HOLE_START));
        }
        for z in &mut zones {
            z.nr_cpus = nr_cpus;
        }
        NodeConfig { zones }
    }

    /// Node-wide settings, read from the first zone.
    pub fn first(&self) -> Result<&ZoneConfig, ConfigError> {
        self.zones.first().ok_or(ConfigError::NoZones)
    }

    /// Pages handed to the buddy allocator in all zones.
    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.managed_pages).sum()
    }

    /// Each zone's type and managed pages at boot: what watermarks and reserves are made of.
    pub fn managed_sizes(&self) -> Vec<(ZoneType, u64)> {
        self.zones.iter().map(|z| (z.zone_type, z.managed_pages)).collect()
    }

    /// Check every zone and how they fit together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let first = self.first()?;
        for (i, z) in self.zones.iter().enumerate() {
            z.validate()?;
            let same = z.node == first.node
                && z.nr_cpus == first.nr_cpus
                && z.max_order == first.max_order
                && z.pageblock_order == first.pageblock_order
                && z.thp == first.thp
                && z.config_cma == first.config_cma
                && z.memmap_layout == first.memmap_layout;
            if !same {
                return Err(ConfigError::MixedZones(z.zone_type));
            }
            if let Some(prev) = i.checked_sub(1).map(|p| &self.zones[p]) {
                let prev_end = prev.span.start_pfn + prev.span.spanned_pages;
                if z.zone_type <= prev.zone_type || z.span.start_pfn < prev_end {
                    return Err(ConfigError::ZoneOrder(z.zone_type));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_geometry_is_rejected() {
        let c = ZoneConfig::normal(16 << 30);
        assert_eq!(c.managed_pages, 4 << 20);
        assert_eq!(c.validate(), Ok(()));
        let bad = ZoneConfig { pageblock_order: 11, ..c.clone() };
        assert!(matches!(bad.validate(), Err(ConfigError::PageblockOrder { .. })));
        let empty = ZoneConfig { managed_pages: 0, ..c.clone() };
        assert_eq!(empty.validate(), Err(ConfigError::Empty));
        let cma = ZoneConfig { cma_pages: 512, ..c.clone() };
        assert_eq!(cma.validate(), Err(ConfigError::CmaWithoutConfig));
        let huge = ZoneConfig::normal(1 << 45);
        assert!(matches!(huge.validate(), Err(ConfigError::TooLarge(_))));
        let outside = ZoneConfig { start_pfn: c.start_pfn + 1, ..c.clone() };
        assert_eq!(outside.validate(), Err(ConfigError::Span(ZoneType::Normal)));
        let wraps = ZoneConfig { start_pfn: u64::MAX - 3, ..c };
        assert_eq!(wraps.validate(), Err(ConfigError::Span(ZoneType::Normal)));
    }

    #[test]
    fn x86_64_layout_has_the_three_zones_of_a_pc() {
        let n = NodeConfig::x86_64(16 << 30, 4);
        n.validate().unwrap();
        let types: Vec<ZoneType> = n.zones.iter().map(|z| z.zone_type).collect();
        assert_eq!(types, [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
        assert_eq!(n.zones[0].managed_pages, 3840, "as on the sample machines");
        assert_eq!((n.zones[0].start_pfn, n.zones[0].first_managed_pfn()), (1, 256));
        assert_eq!(n.zones[0].span.spanned_pages, 4095);
        assert_eq!(n.zones[1].managed_pages, 0xc0000 - 0x1000);
        assert_eq!(n.zones[2].managed_pages, (16 << 18) - 0xc0000);
        assert_eq!(n.zones[2].start_pfn, 0x100000);
        assert_eq!(NodeConfig::x86_64(0, 2).validate(), Err(ConfigError::NoZones), "no underflow");
        assert_eq!(NodeConfig::x86_64(1 << 20, 2).zones.len(), 0, "1 MiB is all firmware");
        let small = NodeConfig::x86_64(1 << 30, 2);
        small.validate().unwrap();
        assert_eq!(small.zones.len(), 2, "no ZONE_NORMAL below 3 GiB");
        let mixed = NodeConfig { zones: vec![n.zones[2].clone(), n.zones[1].clone()] };
        assert_eq!(mixed.validate(), Err(ConfigError::ZoneOrder(ZoneType::Dma32)));
    }
}
