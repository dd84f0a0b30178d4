//! What a machine is ([`NodeConfig`]: its zones, each a [`ZoneConfig`], fixed at
//! construction) and how its allocator behaves ([`Policy`]: the kernel's tunables plus one
//! switch per seed patch, so the lab can run "before" and "after" side by side).
//!
//! Defaults follow Linux 6.18 on x86_64: 4 KiB pages, `MAX_PAGE_ORDER` 10, `pageblock_order` 9,
//! THP configured, no CMA, memory isolation configured, CONFIG_ZONE_DMA32, one NUMA node.
//!
//! Both are validated the way the kernel validates its boot parameters and sysctls: a value
//! the kernel would reject (`percpu_pagelist_high_fraction` 4, `min_free_kbytes` above
//! `INT_MAX`) or that this model cannot hold (a memmap index past `u32`) is a
//! [`ConfigError`], never a panic or a hang later.

use std::fmt;

use crate::free_area::FreeAreaLayout;
use crate::memmap::{MemmapLayout, MAX_STRUCT_PAGE_BYTES, MIN_STRUCT_PAGE_BYTES};
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

/// How a bulk free from a per-CPU list reaches the memmap (seed 001's two settings, and
/// pageblock's own). The kernel's per-CPU lists thread through `struct page`, so walking them
/// touches every page's record; here the lists are rings of page indices, and the kernel
/// settings touch the records where the kernel's walk did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkFree {
    /// 2018–2022 ("mm/free_pcppages_bulk: do not hold lock when picking pages to free",
    /// Aaron Lu): pick the batch off the per-CPU lists first, outside the zone lock — a walk
    /// through every page's record, prefetching the first `batch` buddies with
    /// [`Policy::buddy_prefetch`] — then take the lock and merge.
    TwoPass,
    /// 2022 on ("mm/page_alloc: free pages in a single pass during bulk free", Mel Gorman):
    /// one pass under the zone lock, each page merged as it comes off its list (one step of
    /// the walk); with [`Policy::buddy_prefetch`] the buddy's record is prefetched just before
    /// the merge reads it (the same series then removed the prefetch).
    SinglePass,
    /// pageblock's (the default): one pass under the zone lock, with a software pipeline
    /// running ahead of the merge that prefetches each page's buddy records and then the list
    /// neighbours the buddy's unlink will write.
    Pipelined,
}

/// Which kernel's reclaim rules the model follows where they changed after seed 004 was
/// measured. A behaviour-by-release setting like [`BulkFree`]: the sysctls and switches of
/// [`Policy`] mean the same in every period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelPeriod {
    /// Linux 6.18 (the default): with "mm: vmscan: fix kswapd exit condition in defrag_mode"
    /// (6.15), kswapd under `defrag_mode` counts whole free pageblocks only while it works
    /// for an order above 0, so once it has reclaimed `compact_gap(order)` pages and dropped
    /// to order 0 it is balanced on free pages and hands the order to kcompactd.
    #[default]
    Linux6_18,
    /// The March 2025 kernel seed 004 measured, before that fix: kswapd under `defrag_mode`
    /// counts whole free pageblocks at every order, and reclaims until they reach the high
    /// watermark.
    Seed004,
}

impl KernelPeriod {
    /// Its name on the command line and in reports (`6.18`, `seed-004`).
    pub const fn name(self) -> &'static str {
        match self {
            KernelPeriod::Linux6_18 => "6.18",
            KernelPeriod::Seed004 => "seed-004",
        }
    }
}

/// How the allocator behaves: kernel tunables and the seed switches.
///
/// The 2026 `defrag_mode` fixes and pageblock's own switches act only under `defrag_mode`:
/// the allocator reads each through the method of the same name, which gates it there, so a
/// switch set without `defrag_mode` changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// `vm.min_free_kbytes`; `None` computes the kernel's default for the node (with THP,
    /// khugepaged's recommendation).
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
    /// disables grouping by itself on tiny machines; see
    /// [`crate::node::NodeShared::group_by_mobility`].
    pub group_by_mobility: bool,
    /// Seed 003 (6.16+ `enum rmqueue_mode`): a bulk refill remembers the last fallback step
    /// that worked and restarts there for the next block instead of from the top.
    pub rmqueue_mode_memory: bool,
    /// Seed 000: `/proc/pagetypeinfo` reads the per-migratetype free counts instead of walking
    /// the free lists under the zone lock.
    pub pagetypeinfo_from_counts: bool,
    /// Seed 001: prefetch the memmap records of the first `batch` pages' buddies in a bulk
    /// free from a per-CPU list (kernels from 2018, 4.17, to 2022 did; today's do not, so it
    /// is off by default). Where the prefetch happens, outside or under the zone lock, is
    /// [`Policy::bulk_free`]'s; [`BulkFree::Pipelined`] prefetches buddies anyway.
    pub buddy_prefetch: bool,
    /// How `free_pcppages_bulk()` brings the memmap records it touches into the cache.
    /// Speed only: every setting frees the same blocks to the same lists in the same order.
    pub bulk_free: BulkFree,
    /// Per-CPU list batch; `None` computes `zone_batchsize()`.
    pub pcp_batch: Option<u32>,
    /// `vm.percpu_pagelist_high_fraction`: 0 auto-tunes `high` between the low watermark and
    /// an eighth of the zone (shared among CPUs); N ≥ 8 fixes it at managed/N shared.
    pub percpu_pagelist_high_fraction: u32,
    /// Seed 002: the memory layout of `free_area[]` (and whether it keeps per-type counts).
    pub free_area_layout: FreeAreaLayout,
    /// The per-CPU data-cache slice in bytes (`zone_pcp_update_cacheinfo`): a CPU whose slice
    /// holds more than three batches of pages keeps high-order frees cached
    /// (`PCPF_FREE_HIGH_BATCH`). Default 2 MiB, a common L2 slice per core.
    pub cpu_cache_bytes: u64,
    /// The 2026 `defrag_mode` fix for non-reclaiming requests: a request that cannot
    /// reclaim but may wake kswapd (GFP_ATOMIC, GFP_NOWAIT) may fall back into foreign
    /// pageblocks before it fails, instead of failing with free memory in other
    /// migratetypes. One that may not wake kswapd either (`GFP_TRANSHUGE_LIGHT`) still fails.
    pub defrag_mode_atomic_fallback: bool,
    /// The 2026 `defrag_mode` fix for non-movable requests: when a whole free pageblock is
    /// what an unmovable or reclaimable request needs, direct reclaim and direct compaction
    /// work for one (`reclaim_order` and `compact_order` promoted to the pageblock order)
    /// instead of the request reclaiming without end; the request itself, and the block
    /// compaction captures for it, keep the requested order.
    pub defrag_mode_pageblock_compaction: bool,
    /// pageblock's own policy (not in any kernel): under `defrag_mode`, once free *pages* are
    /// above the high watermark, kswapd's further work toward whole free pageblocks reclaims
    /// page cache only — it never swaps anonymous memory out just to make blocks.
    pub blocks_without_swap: bool,
    /// pageblock's policy: under `defrag_mode`, an allocation that leaves its zone with fewer
    /// whole free pageblocks (`NR_FREE_PAGES_BLOCKS`) than the low watermark wakes kswapd for
    /// a pageblock, as `rmqueue()` wakes it for a boosted watermark. The kernel wakes kswapd
    /// only once free *pages* fall below low — whole blocks are long gone by then, and the
    /// next burst of huge page faults finds none.
    pub kswapd_wake_for_blocks: bool,
    /// pageblock's policy: under `defrag_mode`, `pgdat_balanced()` weighs the node's whole
    /// free pageblocks (summed over the zones the request may use) against the sum of their
    /// high watermarks, wherever it counts whole blocks at all (in 6.18, above order 0). The kernel accepts any one zone above its mark, so a small ZONE_DMA
    /// holding a few free blocks reports the node balanced while ZONE_DMA32 has none, and
    /// kswapd does not run until the shortage is acute.
    pub kswapd_balance_node_blocks: bool,
    /// pageblock's policy: under `defrag_mode`, `compaction_suitable()` also asks for `compact_gap(order)` free
    /// pages where the free scanner can migrate into — on the MIGRATE_MOVABLE lists, below the
    /// order being made. Free memory inside unmovable and reclaimable pageblocks passes the
    /// kernel's check, yet the scanners meet without a block and compaction is deferred for up
    /// to 64 attempts, long after reclaim has made room. Skipped instead, the request reclaims.
    pub compaction_suitable_targets: bool,
    /// `vm.extfrag_threshold` (0..=1000, default 500): direct compaction for a costly order
    /// is not tried when the zone's fragmentation index is at or below it (the failure is
    /// then a lack of memory, which reclaim must fix, not fragmentation).
    pub extfrag_threshold: u32,
    /// `vm.compaction_proactiveness` (0..=100, default 20): how low kcompactd keeps the
    /// node's fragmentation score in the background; 0 turns proactive compaction off.
    pub compaction_proactiveness: u32,
    /// `vm.compact_unevictable_allowed` (default 1; 0 on PREEMPT_RT): compaction may isolate
    /// and move unevictable (mlocked) pages.
    pub compact_unevictable_allowed: bool,
    /// Whose reclaim rules: 6.18's (the default) or those of the kernel seed 004 measured.
    pub kernel: KernelPeriod,
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
            bulk_free: BulkFree::Pipelined,
            pcp_batch: None,
            percpu_pagelist_high_fraction: 0,
            free_area_layout: FreeAreaLayout::Counts,
            cpu_cache_bytes: 2 << 20,
            defrag_mode_atomic_fallback: false,
            defrag_mode_pageblock_compaction: false,
            blocks_without_swap: false,
            kswapd_wake_for_blocks: false,
            kswapd_balance_node_blocks: false,
            compaction_suitable_targets: false,
            extfrag_threshold: 500,
            compaction_proactiveness: 20,
            compact_unevictable_allowed: true,
            kernel: KernelPeriod::Linux6_18,
        }
    }
}

/// `INT_MAX`: the ceiling of the kernel's integer sysctls.
const INT_MAX: u64 = i32::MAX as u64;
/// The largest per-CPU batch accepted (the kernel computes at most 63).
pub const MAX_PCP_BATCH: u32 = 1024;

impl Policy {
    /// [`Policy::defrag_mode_atomic_fallback`], in force only under `defrag_mode`.
    pub fn defrag_mode_atomic_fallback(&self) -> bool {
        self.defrag_mode && self.defrag_mode_atomic_fallback
    }

    /// [`Policy::defrag_mode_pageblock_compaction`], in force only under `defrag_mode`.
    pub fn defrag_mode_pageblock_compaction(&self) -> bool {
        self.defrag_mode && self.defrag_mode_pageblock_compaction
    }

    /// [`Policy::blocks_without_swap`], in force only under `defrag_mode`.
    pub fn blocks_without_swap(&self) -> bool {
        self.defrag_mode && self.blocks_without_swap
    }

    /// [`Policy::kswapd_wake_for_blocks`], in force only under `defrag_mode`.
    pub fn kswapd_wake_for_blocks(&self) -> bool {
        self.defrag_mode && self.kswapd_wake_for_blocks
    }

    /// [`Policy::kswapd_balance_node_blocks`], in force only under `defrag_mode`.
    pub fn kswapd_balance_node_blocks(&self) -> bool {
        self.defrag_mode && self.kswapd_balance_node_blocks
    }

    /// [`Policy::compaction_suitable_targets`], in force only under `defrag_mode`.
    pub fn compaction_suitable_targets(&self) -> bool {
        self.defrag_mode && self.compaction_suitable_targets
    }

    /// Check the tunables against the kernel's sysctl ranges (`proc_dointvec_minmax` bounds
    /// and the handlers' own checks).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=3000).contains(&self.watermark_scale_factor) {
            return Err(ConfigError::WatermarkScaleFactor(self.watermark_scale_factor));
        }
        if u64::from(self.watermark_boost_factor) > INT_MAX {
            return Err(ConfigError::WatermarkBoostFactor(self.watermark_boost_factor));
        }
        if let Some(kb) = self.min_free_kbytes.filter(|&kb| kb > INT_MAX) {
            return Err(ConfigError::MinFreeKbytes(kb));
        }
        // percpu_pagelist_high_fraction_sysctl_handler: 0, or at least 8.
        let f = self.percpu_pagelist_high_fraction;
        if f != 0 && (f < crate::pcp::MIN_PERCPU_PAGELIST_HIGH_FRACTION || u64::from(f) > INT_MAX) {
            return Err(ConfigError::HighFraction(f));
        }
        if let Some(b) = self.pcp_batch.filter(|&b| b == 0 || b > MAX_PCP_BATCH) {
            return Err(ConfigError::PcpBatch(b));
        }
        if self.extfrag_threshold > 1000 {
            return Err(ConfigError::ExtfragThreshold(self.extfrag_threshold));
        }
        if self.compaction_proactiveness > 100 {
            return Err(ConfigError::CompactionProactiveness(self.compaction_proactiveness));
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
    /// A zone without managed pages.
    Empty,
    /// More pages than the memmap can index, or pfns past the physical address space.
    TooLarge(u64),
    /// A zone whose span, present and managed pages do not nest.
    Span(ZoneType),
    /// A node without zones.
    NoZones,
    /// Zones out of order or overlapping.
    ZoneOrder(ZoneType),
    /// A zone whose node-wide settings differ from the first zone's.
    MixedZones(ZoneType),
    /// A CMA area without CONFIG_CMA.
    CmaWithoutConfig,
    /// A CMA area that is not whole pageblocks or takes more than half the zone.
    CmaArea(u64),
    /// CPU count out of range.
    Cpus(u32),
    /// `watermark_scale_factor` outside 1..=3000.
    WatermarkScaleFactor(u32),
    /// `watermark_boost_factor` above `INT_MAX`.
    WatermarkBoostFactor(u32),
    /// `min_free_kbytes` above `INT_MAX`.
    MinFreeKbytes(u64),
    /// `percpu_pagelist_high_fraction` neither 0 nor at least 8.
    HighFraction(u32),
    /// A per-CPU batch of 0 or above [`MAX_PCP_BATCH`].
    PcpBatch(u32),
    /// `vm.extfrag_threshold` outside 0..=1000.
    ExtfragThreshold(u32),
    /// `vm.compaction_proactiveness` outside 0..=100.
    CompactionProactiveness(u32),
    /// A memmap record size that is not a multiple of 4 in 12..=256 bytes.
    StructPageBytes(u32),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MaxOrder(o) => write!(f, "max order {o} exceeds the limit {MAX_ORDER_LIMIT}"),
            ConfigError::PageblockOrder { pageblock_order, max_order } => {
                write!(f, "pageblock order {pageblock_order} exceeds max order {max_order}")
            }
            ConfigError::Empty => write!(f, "a zone needs at least one managed page"),
            ConfigError::TooLarge(n) => {
                write!(f, "{n} pages is more than a zone can index (< 2^32 pages, pfns < 2^40)")
            }
            ConfigError::Span(t) => write!(
                f,
                "zone {}: managed pages must lie inside the span, and managed <= present <= spanned",
                t.name()
            ),
            ConfigError::NoZones => write!(f, "a node needs at least one zone"),
            ConfigError::ZoneOrder(t) => {
                write!(f, "zone {}: zones must be in zone order and must not overlap", t.name())
            }
            ConfigError::MixedZones(t) => write!(
                f,
                "zone {}: node, CPUs, orders, THP and CMA settings must be the same in every zone",
                t.name()
            ),
            ConfigError::CmaWithoutConfig => write!(f, "a CMA area needs config_cma"),
            ConfigError::CmaArea(n) => {
                write!(f, "CMA area of {n} pages must be whole pageblocks and at most half the zone")
            }
            ConfigError::Cpus(n) => write!(f, "{n} CPUs is outside 1..={MAX_CPUS}"),
            ConfigError::WatermarkScaleFactor(n) => {
                write!(f, "watermark_scale_factor {n} is outside 1..=3000")
            }
            ConfigError::WatermarkBoostFactor(n) => {
                write!(f, "watermark_boost_factor {n} is above INT_MAX")
            }
            ConfigError::MinFreeKbytes(n) => write!(f, "min_free_kbytes {n} is above INT_MAX"),
            ConfigError::HighFraction(n) => {
                write!(f, "percpu_pagelist_high_fraction {n} must be 0 (auto) or at least 8")
            }
            ConfigError::ExtfragThreshold(n) => write!(f, "extfrag_threshold {n} is outside 0..=1000"),
            ConfigError::CompactionProactiveness(n) => {
                write!(f, "compaction_proactiveness {n} is outside 0..=100")
            }
            ConfigError::PcpBatch(n) => {
                write!(f, "a per-CPU batch of {n} is outside 1..={MAX_PCP_BATCH}")
            }
            ConfigError::StructPageBytes(n) => write!(
                f,
                "struct_page_bytes {n} must be a multiple of 4 from {MIN_STRUCT_PAGE_BYTES} to {MAX_STRUCT_PAGE_BYTES}"
            ),
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
        assert_eq!(c.managed_pages, 4 << 20);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(Policy::default().validate(), Ok(()));
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

    /// Regression: values the kernel's sysctl handlers refuse were accepted (`pcp_batch` 0
    /// hung `drain_all_pages`; `u32::MAX` aborted allocating a terabyte of refill buffer).
    #[test]
    fn sysctl_ranges_are_enforced() {
        let p = Policy::default();
        for f in 1..8 {
            let bad = Policy { percpu_pagelist_high_fraction: f, ..p.clone() };
            assert_eq!(bad.validate(), Err(ConfigError::HighFraction(f)));
        }
        assert_eq!(Policy { percpu_pagelist_high_fraction: 8, ..p.clone() }.validate(), Ok(()));
        assert_eq!(Policy { pcp_batch: Some(0), ..p.clone() }.validate(), Err(ConfigError::PcpBatch(0)));
        let max = Policy { pcp_batch: Some(u32::MAX), ..p.clone() };
        assert_eq!(max.validate(), Err(ConfigError::PcpBatch(u32::MAX)));
        let kb = Policy { min_free_kbytes: Some(1 << 31), ..p.clone() };
        assert_eq!(kb.validate(), Err(ConfigError::MinFreeKbytes(1 << 31)));
        let frag = Policy { extfrag_threshold: 1001, ..p.clone() };
        assert_eq!(frag.validate(), Err(ConfigError::ExtfragThreshold(1001)));
        let pro = Policy { compaction_proactiveness: 101, ..p.clone() };
        assert_eq!(pro.validate(), Err(ConfigError::CompactionProactiveness(101)));
        let boost = Policy { watermark_boost_factor: u32::MAX, ..p };
        assert_eq!(boost.validate(), Err(ConfigError::WatermarkBoostFactor(u32::MAX)));
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
