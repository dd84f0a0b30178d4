//! What a zone is ([`ZoneConfig`]: its geometry, fixed at construction) and how it behaves
//! ([`Policy`]: the kernel's tunables plus one switch per seed patch, so the lab can run
//! "before" and "after" side by side).
//!
//! Defaults follow Linux 6.18 on x86_64: 4 KiB pages, `MAX_PAGE_ORDER` 10, `pageblock_order` 9,
//! THP configured, no CMA, memory isolation configured, a single-node machine whose simulated
//! zone is ZONE_NORMAL starting at 4 GiB.

use std::fmt;

use crate::free_area::FreeAreaLayout;
use crate::types::{MAX_ORDER_LIMIT, MAX_PAGE_ORDER, PAGEBLOCK_ORDER};

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

    /// Zone index.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The geometry of a zone, fixed when it is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConfig {
    /// NUMA node id printed in reports.
    pub node: u32,
    /// Which zone this is.
    pub zone_type: ZoneType,
    /// First pfn (`zone_start_pfn`). Need not be aligned.
    pub start_pfn: u64,
    /// Pages in the zone (`spanned_pages` = `present_pages` = `managed_pages`: no holes).
    pub present_pages: u64,
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
}

impl ZoneConfig {
    /// A ZONE_NORMAL of `bytes` bytes at 4 GiB with the kernel's x86_64 defaults.
    pub fn normal(bytes: u64) -> ZoneConfig {
        ZoneConfig {
            node: 0,
            zone_type: ZoneType::Normal,
            start_pfn: 0x100000,
            present_pages: bytes / crate::types::PAGE_SIZE,
            max_order: MAX_PAGE_ORDER,
            pageblock_order: PAGEBLOCK_ORDER,
            config_cma: false,
            cma_pages: 0,
            thp: true,
            nr_cpus: 2,
        }
    }

    /// First pfn past the zone (`zone_end_pfn`).
    pub fn end_pfn(&self) -> u64 {
        self.start_pfn + self.present_pages
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
        if self.present_pages == 0 {
            return Err(E::Empty);
        }
        let align = 1u64 << self.pageblock_order;
        let span = self.end_pfn().div_ceil(align) * align - (self.start_pfn & !(align - 1));
        if span >= u32::MAX as u64 || self.end_pfn() > (1 << 52) {
            return Err(E::TooLarge(self.present_pages));
        }
        if self.cma_pages > 0 && !self.config_cma {
            return Err(E::CmaWithoutConfig);
        }
        if self.cma_pages % align != 0 || self.cma_pages > self.present_pages / 2 {
            return Err(E::CmaArea(self.cma_pages));
        }
        if self.nr_cpus == 0 || self.nr_cpus > 1024 {
            return Err(E::Cpus(self.nr_cpus));
        }
        Ok(())
    }
}

/// How the allocator behaves: kernel tunables and the seed switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// `vm.min_free_kbytes`; `None` computes the kernel's default for the zone size.
    pub min_free_kbytes: Option<u64>,
    /// `vm.watermark_scale_factor` (1..=3000, default 10).
    pub watermark_scale_factor: u32,
    /// `vm.watermark_boost_factor` (default 15000; 0 disables boosting).
    pub watermark_boost_factor: u32,
    /// `vm.defrag_mode` (6.15+): never fall back into foreign pageblocks before reclaim and
    /// compaction have failed.
    pub defrag_mode: bool,
    /// CONFIG_ZONE_DMA32: ALLOC_NOFRAGMENT exists (it compiles to 0 without it).
    pub nofragment: bool,
    /// Group pages by mobility (`page_group_by_mobility_disabled == 0`). The kernel also
    /// disables grouping by itself on tiny machines; see [`crate::Zone::group_by_mobility`].
    pub group_by_mobility: bool,
    /// Seed 003 (6.16+ `enum rmqueue_mode`): a bulk refill remembers the last fallback step
    /// that worked and restarts there for the next block instead of from the top.
    pub rmqueue_mode_memory: bool,
    /// Seed 000: `/proc/pagetypeinfo` reads the per-migratetype free counts instead of walking
    /// the free lists under the zone lock.
    pub pagetypeinfo_from_counts: bool,
    /// Seed 001: before a bulk free from a per-CPU list takes the zone lock, load the memmap
    /// records of the first `batch` pages' buddies (4.17–5.x kernels prefetched them; 6.18
    /// does not, so it is off by default).
    pub buddy_prefetch: bool,
    /// Per-CPU list batch; `None` computes `zone_batchsize()`.
    pub pcp_batch: Option<u32>,
    /// `vm.percpu_pagelist_high_fraction`: 0 auto-tunes `high` between the low watermark and
    /// an eighth of the zone (shared among CPUs); N ≥ 8 fixes it at managed/N shared.
    pub percpu_pagelist_high_fraction: u32,
    /// Seed 002: the memory layout of `free_area[]` (and whether it keeps per-type counts).
    pub free_area_layout: FreeAreaLayout,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            watermark_boost_factor: 15000,
            defrag_mode: false,
            nofragment: true,
            group_by_mobility: true,
            rmqueue_mode_memory: true,
            pagetypeinfo_from_counts: true,
            buddy_prefetch: false,
            pcp_batch: None,
            percpu_pagelist_high_fraction: 0,
            free_area_layout: FreeAreaLayout::Counts,
        }
    }
}

impl Policy {
    /// Check the tunables against the kernel's sysctl ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=3000).contains(&self.watermark_scale_factor) {
            return Err(ConfigError::WatermarkScaleFactor(self.watermark_scale_factor));
        }
        Ok(())
    }
}

/// A rejected configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `max_order` above the supported limit.
    MaxOrder(u32),
    /// `pageblock_order` above `max_order`.
    PageblockOrder {
        /// The requested pageblock order.
        pageblock_order: u32,
        /// The zone's max order.
        max_order: u32,
    },
    /// A zone without pages.
    Empty,
    /// More pages than the memmap can index.
    TooLarge(u64),
    /// A CMA area without CONFIG_CMA.
    CmaWithoutConfig,
    /// A CMA area that is not whole pageblocks or takes more than half the zone.
    CmaArea(u64),
    /// CPU count out of range.
    Cpus(u32),
    /// `watermark_scale_factor` outside 1..=3000.
    WatermarkScaleFactor(u32),
    /// `percpu_pagelist_high_fraction` neither 0 nor at least 8.
    HighFraction(u32),
    /// A per-CPU batch of 0.
    PcpBatch,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MaxOrder(o) => {
                write!(f, "max order {o} exceeds the limit {MAX_ORDER_LIMIT}")
            }
            ConfigError::PageblockOrder { pageblock_order, max_order } => {
                write!(f, "pageblock order {pageblock_order} exceeds max order {max_order}")
            }
            ConfigError::Empty => write!(f, "a zone needs at least one page"),
            ConfigError::TooLarge(n) => {
                write!(f, "{n} pages is more than a zone can index (< 2^32)")
            }
            ConfigError::CmaWithoutConfig => write!(f, "a CMA area needs config_cma"),
            ConfigError::CmaArea(n) => {
                write!(f, "CMA area of {n} pages must be whole pageblocks and at most half the zone")
            }
            ConfigError::Cpus(n) => write!(f, "{n} CPUs is outside 1..=1024"),
            ConfigError::WatermarkScaleFactor(n) => {
                write!(f, "watermark_scale_factor {n} is outside 1..=3000")
            }
            ConfigError::HighFraction(n) => {
                write!(f, "percpu_pagelist_high_fraction {n} must be 0 (auto) or at least 8")
            }
            ConfigError::PcpBatch => write!(f, "a per-CPU batch must be at least 1"),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_geometry_is_rejected() {
        let c = ZoneConfig::normal(16 << 30);
        assert_eq!(c.present_pages, 4 << 20);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(Policy::default().validate(), Ok(()));
        let bad = ZoneConfig { pageblock_order: 11, ..c.clone() };
        assert!(matches!(bad.validate(), Err(ConfigError::PageblockOrder { .. })));
        let empty = ZoneConfig { present_pages: 0, ..c.clone() };
        assert_eq!(empty.validate(), Err(ConfigError::Empty));
        let cma = ZoneConfig { cma_pages: 512, ..c.clone() };
        assert_eq!(cma.validate(), Err(ConfigError::CmaWithoutConfig));
        let huge = ZoneConfig { present_pages: 1 << 33, ..c };
        assert!(matches!(huge.validate(), Err(ConfigError::TooLarge(_))));
    }
}
