//! Watermarks: how much memory a zone keeps free, and the check every allocation passes
//! (`__setup_per_zone_wmarks`, `calculate_min_free_kbytes`, khugepaged's
//! `set_recommended_min_free_kbytes`, `boost_watermark`, `__zone_watermark_ok`,
//! `zone_watermark_fast`).
//!
//! * `min`: below it only reserve-entitled requests (atomic, `__GFP_HIGH`, OOM) may allocate;
//! * `low`: the fast path checks against it; falling below wakes kswapd;
//! * `high`: kswapd reclaims until the zone is back above it;
//! * `promo`: NUMA memory tiering's promotion mark (reported only);
//! * `boost`: a temporary raise of all marks after fragmenting fallbacks, so that kswapd
//!   reclaims (and kcompactd defragments) a little early.
//!
//! The stored marks are the raw `_watermark[]`; every user adds the boost (`wmark_pages`).

use crate::config::{NodeConfig, ZoneConfig, ZoneType, MAX_NR_ZONES};
pub use crate::gfp::WatermarkLevel;

use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::policy::Policy;
use crate::stats::ZoneStat;
use crate::zone::{Zone, ZoneShared};

/// The raw marks of a zone, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// `_watermark[WMARK_MIN]`.
    pub min: u64,
    /// `_watermark[WMARK_LOW]`.
    pub low: u64,
    /// `_watermark[WMARK_HIGH]`.
    pub high: u64,
    /// `_watermark[WMARK_PROMO]`.
    pub promo: u64,
}

/// The kernel's default `min_free_kbytes` for `lowmem_kbytes` of memory:
/// `clamp(int_sqrt(lowmem_kbytes * 16), 128, 262144)`.
pub fn default_min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    lowmem_kbytes.saturating_mul(16).isqrt().clamp(128, 262_144)
}

/// khugepaged's recommendation with THP enabled (`set_recommended_min_free_kbytes`), in KiB:
/// room for two free pageblocks per zone plus one pageblock per pair of mobility types per
/// zone, capped at 5% of `free_buffer_pages` — the node's `nr_free_buffer_pages()`, i.e. the
/// managed pages above each lowmem zone's high watermark *as the default `min_free_kbytes`
/// set it*, not the managed pages.
pub fn thp_recommended_min_free_kbytes(pageblock_pages: u64, nr_zones: u64, free_buffer_pages: u64) -> u64 {
    let pcptypes = crate::migratetype::MIGRATE_PCPTYPES as u64;
    let pages = pageblock_pages * nr_zones * 2 + pageblock_pages * nr_zones * pcptypes * pcptypes;
    pages.min(free_buffer_pages / 20) * (crate::types::PAGE_SIZE / 1024)
}

/// `__setup_per_zone_wmarks()` for a node's zones given as `(type, managed pages)`:
/// `min_free_kbytes` is shared out in proportion to each lowmem zone's size; the gaps
/// min→low→high→promo are a quarter of the zone's share or `watermark_scale_factor`/10000 of
/// the zone, whichever is larger.
pub fn setup_per_zone_wmarks(
    min_free_kbytes: u64,
    scale_factor: u32,
    zones: &[(ZoneType, u64)],
) -> Vec<Watermarks> {
    let pages_min = min_free_kbytes / (crate::types::PAGE_SIZE / 1024);
    let is_high = |t: ZoneType| t == ZoneType::Movable;
    let lowmem: u64 = zones.iter().filter(|(t, _)| !is_high(*t)).map(|(_, m)| m).sum();
    zones
        .iter()
        .map(|&(t, managed)| {
            let tmp =
                if lowmem == 0 { 0 } else { (pages_min as u128 * managed as u128 / lowmem as u128) as u64 };
            let min = if is_high(t) { (managed / 1024).clamp(32, 128) } else { tmp };
            let delta = (tmp >> 2).max(managed * scale_factor as u64 / 10000);
            Watermarks { min, low: min + delta, high: min + 2 * delta, promo: min + 3 * delta }
        })
        .collect()
}

/// The watermarks of a node's zones and the `min_free_kbytes` they came from, computed as
/// the kernel does at boot: `init_per_zone_wmark_min()` (default from the lowmem size), then,
/// with THP, khugepaged's `set_recommended_min_free_kbytes()` raises it; a `min_free_kbytes`
/// the policy sets (a sysctl write) replaces both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeWatermarks {
    /// The resulting `vm.min_free_kbytes`.
    pub min_free_kbytes: u64,
    /// Per zone, in the node's zone order.
    pub zones: Vec<Watermarks>,
}

impl NodeWatermarks {
    /// Compute the watermarks of `node` under `policy`, at boot.
    pub fn compute(node: &NodeConfig, policy: &Policy) -> NodeWatermarks {
        let thp_pageblock = node.zones.first().and_then(ZoneConfig::thp_pageblock_pages);
        Self::compute_managed(&node.managed_sizes(), thp_pageblock, policy)
    }

    /// The same for zones of the given managed sizes (after memory hotplug changed them);
    /// `thp_pageblock` is the pageblock size in pages with THP, `None` without.
    pub fn compute_managed(
        zones: &[(ZoneType, u64)],
        thp_pageblock: Option<u64>,
        policy: &Policy,
    ) -> NodeWatermarks {
        // nr_free_buffer_pages(): zones usable by GFP_USER (up to ZONE_NORMAL).
        let lowmem = |t: ZoneType| t <= ZoneType::Normal;
        let kb_per_page = crate::types::PAGE_SIZE / 1024;
        // The default is computed before any watermark exists: every managed page counts.
        let lowmem_kbytes = zones.iter().filter(|z| lowmem(z.0)).map(|z| z.1).sum::<u64>() * kb_per_page;
        let mut min_free_kbytes = default_min_free_kbytes(lowmem_kbytes);
        if let Some(pb) = thp_pageblock {
            let dflt = setup_per_zone_wmarks(min_free_kbytes, policy.sysctls.watermark_scale_factor(), zones);
            let free_buffer: u64 = zones
                .iter()
                .zip(&dflt)
                .filter(|(z, _)| lowmem(z.0))
                .map(|(z, w)| z.1.saturating_sub(w.high))
                .sum();
            let nr_zones = zones.iter().filter(|z| lowmem(z.0)).count() as u64;
            min_free_kbytes = min_free_kbytes.max(thp_recommended_min_free_kbytes(pb, nr_zones, free_buffer));
        }
        if let Some(user) = policy.sysctls.min_free_kbytes() {
            min_free_kbytes = user;
        }
        let wm = setup_per_zone_wmarks(min_free_kbytes, policy.sysctls.watermark_scale_factor(), zones);
        NodeWatermarks { min_free_kbytes, zones: wm }
    }
}

/// `setup_per_zone_lowmem_reserve()`: for each zone, how many pages it keeps back from a
/// request whose highest usable zone is `j` (indexed by zone type): the managed pages of the
/// zones above it up to `j`, divided by its `lowmem_reserve_ratio`. A zone never protects
/// itself from requests that cannot go higher (`[j] = 0` for `j <= own index`).
pub fn lowmem_reserve(node: &NodeConfig) -> Vec<[u64; MAX_NR_ZONES]> {
    lowmem_reserve_managed(&node.managed_sizes())
}

/// [`lowmem_reserve`] for zones of the given managed sizes.
pub fn lowmem_reserve_managed(zones: &[(ZoneType, u64)]) -> Vec<[u64; MAX_NR_ZONES]> {
    let managed = |t: ZoneType| zones.iter().filter(|z| z.0 == t).map(|z| z.1).sum::<u64>();
    zones
        .iter()
        .map(|&(own, _)| {
            let mut reserve = [0u64; MAX_NR_ZONES];
            let ratio = own.lowmem_reserve_ratio();
            let mut above = 0;
            for (t, slot) in ZoneType::ALL.iter().zip(reserve.iter_mut()).skip(own.index() + 1) {
                above += managed(*t);
                *slot = above.checked_div(ratio).unwrap_or(0);
            }
            reserve
        })
        .collect()
}

impl Zone {
    /// `boost_watermark()`: after a fragmenting fallback, raise the marks by one pageblock,
    /// up to `watermark_boost_factor`/10000 of the high mark. Returns whether it boosted.
    pub(crate) fn boost_watermark(&mut self) -> bool {
        let factor = self.policy.sysctls.watermark_boost_factor() as u64;
        let pb_pages = self.pageblock_nr_pages();
        let c = &self.shared.counters;
        // Tiny zones would be boosted out of usefulness: skip them.
        if factor == 0 || pb_pages * 4 > self.managed_pages() {
            return false;
        }
        let high = c.watermark[WatermarkLevel::High as usize].get();
        let max_boost = high * factor / 10000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(pb_pages);
        c.watermark_boost.set((c.watermark_boost.get() + pb_pages).min(max_boost));
        self.count(crate::stats::VmEvent::WatermarkBoost, 1);
        true
    }
}

impl Zone {
    /// kswapd reclaimed a boost of `boost` pages: lower the zone's boost by that much
    /// (`balance_pgdat`'s end).
    pub(crate) fn pay_back_boost(&mut self, boost: u64) {
        let c = &self.shared.counters.watermark_boost;
        c.set(c.get() - c.get().min(boost));
    }
}

/// The watermark checks read only counters, so they run without the zone lock (the kernel's
/// fast path checks before it takes any lock).
impl ZoneShared {
    /// `wmark_pages(zone, level)`: the raw mark plus the current boost.
    #[inline]
    pub fn wmark_pages(&self, level: WatermarkLevel) -> u64 {
        let c = &self.counters;
        c.watermark[level as usize].get() + c.watermark_boost.get()
    }

    /// `NR_FREE_PAGES`.
    #[inline]
    pub fn nr_free_pages(&self) -> u64 {
        self.counters.zone_stat(ZoneStat::NrFreePages)
    }

    /// `lowmem_reserve[highest_zoneidx]`: what this zone keeps back from a request that could
    /// also have used a higher zone.
    #[inline]
    pub fn lowmem_reserve(&self, highest_zoneidx: ZoneType) -> u64 {
        self.lowmem_reserve[highest_zoneidx.index()].get()
    }

    /// `__zone_watermark_ok()`: would `free_pages` stay above `mark` (plus the lowmem reserve
    /// against requests up to `highest_zoneidx`) after allocating a block of `order`, counting
    /// only memory this request may use, and is there a free block of at least `order` on a
    /// list it may use?
    pub fn zone_watermark_ok_with(&self, req: WatermarkRequest, mark: u64, free_pages: u64) -> bool {
        let c = &self.counters;
        let flags = req.flags;
        let mut unusable = (1i64 << req.order) - 1;
        if !flags.intersects(AllocFlags::RESERVES) {
            unusable += c.nr_free_highatomic.get() as i64;
        }
        if !flags.contains(AllocFlags::CMA) {
            unusable += c.zone_stat(ZoneStat::NrFreeCmaPages) as i64;
        }
        let free = free_pages as i64 - unusable;
        let mut min = mark as i64;
        if flags.intersects(AllocFlags::RESERVES) {
            if flags.contains(AllocFlags::MIN_RESERVE) {
                min -= min / 2;
                if flags.contains(AllocFlags::NON_BLOCK) {
                    min -= min / 4;
                }
            }
            if flags.contains(AllocFlags::OOM) {
                min -= min / 2;
            }
        }
        if free <= min + self.lowmem_reserve(req.highest_zoneidx) as i64 {
            return false;
        }
        if req.order == 0 {
            return true;
        }
        self.has_usable_block(req.order, flags)
    }

    /// The order part of the watermark check: a free block of at least `order` on a mobility
    /// list (any of the three), on CMA with ALLOC_CMA, on HIGHATOMIC with ALLOC_HIGHATOMIC/OOM.
    fn has_usable_block(&self, order: u32, flags: AllocFlags) -> bool {
        let fa = &self.free_areas;
        for o in order..=self.config().max_order {
            if fa.nr_free(o) == 0 {
                continue;
            }
            let mt_free = |mt: MigrateType| fa.has_free(o, mt);
            if [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable]
                .into_iter()
                .any(mt_free)
            {
                return true;
            }
            if flags.contains(AllocFlags::CMA) && mt_free(MigrateType::Cma) {
                return true;
            }
            if flags.intersects(AllocFlags::HIGHATOMIC | AllocFlags::OOM) && mt_free(MigrateType::HighAtomic)
            {
                return true;
            }
        }
        false
    }

    /// `zone_watermark_ok()` against `NR_FREE_PAGES`.
    pub fn zone_watermark_ok(&self, req: WatermarkRequest, mark: u64) -> bool {
        self.zone_watermark_ok_with(req, mark, self.nr_free_pages())
    }

    /// `zone_watermark_fast()`: a cheap order-0 test first, the full check otherwise, and for
    /// `__GFP_HIGH` order-0 requests a second chance against the un-boosted min mark.
    #[inline]
    pub fn zone_watermark_fast(&self, req: WatermarkRequest, mark: u64) -> bool {
        let c = &self.counters;
        let free = self.nr_free_pages();
        if req.order == 0 {
            let mut unusable = 0;
            if !req.flags.intersects(AllocFlags::RESERVES) {
                unusable += c.nr_free_highatomic.get();
            }
            if !req.flags.contains(AllocFlags::CMA) {
                unusable += c.zone_stat(ZoneStat::NrFreeCmaPages);
            }
            if free - free.min(unusable) > mark + self.lowmem_reserve(req.highest_zoneidx) {
                return true;
            }
        }
        self.zone_watermark_slow(req, mark, free)
    }

    #[cold]
    fn zone_watermark_slow(&self, req: WatermarkRequest, mark: u64, free: u64) -> bool {
        if self.zone_watermark_ok_with(req, mark, free) {
            return true;
        }
        let c = &self.counters;
        let raw_min = c.watermark[WatermarkLevel::Min as usize].get();
        req.order == 0
            && req.flags.contains(AllocFlags::MIN_RESERVE)
            && c.watermark_boost.get() != 0
            && req.flags.watermark() == WatermarkLevel::Min
            && self.zone_watermark_ok_with(req, raw_min, free)
    }

    /// The watermark gate of `get_page_from_freelist`, including the `ZONE_BELOW_HIGH`
    /// bookkeeping that per-CPU lists use to size their caches: the high mark is tried first
    /// (setting the flag when it fails, even for ALLOC_NO_WATERMARKS requests, which then
    /// pass regardless). Returns whether this request may allocate from the zone.
    #[inline]
    pub fn watermark_allows(&self, req: &WatermarkRequest) -> bool {
        if !self.flags.below_high() {
            let high = self.wmark_pages(WatermarkLevel::High);
            if self.zone_watermark_fast(*req, high) {
                return true;
            }
            self.flags.set_below_high(true);
        }
        if req.flags.contains(AllocFlags::NO_WATERMARKS) {
            return true;
        }
        let mark = self.wmark_pages(req.flags.watermark());
        self.zone_watermark_fast(*req, mark)
    }
}

/// What a watermark check asks about: a block of `order` with these flags, for a request that
/// may use zones up to `highest_zoneidx` (which decides the lowmem reserve).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatermarkRequest {
    /// The block's order.
    pub order: u32,
    /// The attempt's `ALLOC_*` flags.
    pub flags: AllocFlags,
    /// The request's highest usable zone (`ac->highest_zoneidx`).
    pub highest_zoneidx: ZoneType,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ZoneSpan;
    use crate::policy::Sysctl;

    fn node(zones: &[(ZoneType, u64, u64)]) -> NodeConfig {
        NodeConfig {
            zones: zones
                .iter()
                .map(|&(t, start, managed)| ZoneConfig {
                    span: ZoneSpan { start_pfn: start, spanned_pages: managed, present_pages: managed },
                    ..ZoneConfig::new(t, start, managed)
                })
                .collect(),
        }
    }

    /// The real machine of `shared/reference/samples/zoneinfo.txt`: three zones, THP on.
    #[test]
    fn reproduces_the_sample_machine_watermarks() {
        let n = node(&[
            (ZoneType::Dma, 1, 3840),
            (ZoneType::Dma32, 0x1000, 772915),
            (ZoneType::Normal, 0x100000, 327680),
        ]);
        let lowmem = n.managed_pages();
        let dflt = default_min_free_kbytes(lowmem * 4);
        assert_eq!(dflt, 8407, "int_sqrt(lowmem_kbytes * 16)");
        let w = NodeWatermarks::compute(&n, &Policy::default());
        assert_eq!(w.min_free_kbytes, 67584, "the sample's vm.min_free_kbytes");
        assert_eq!(w.zones[0], Watermarks { min: 58, low: 72, high: 86, promo: 100 });
        assert_eq!(w.zones[1], Watermarks { min: 11824, low: 14780, high: 17736, promo: 20692 });
        assert_eq!(w.zones[2], Watermarks { min: 5012, low: 6265, high: 7518, promo: 8771 });
        let movable = setup_per_zone_wmarks(67584, 10, &[(ZoneType::Normal, 1000), (ZoneType::Movable, 0)]);
        assert_eq!(movable[1], Watermarks { min: 32, low: 32, high: 32, promo: 32 });
    }

    /// The machine the shared trace was recorded on: its zoneinfo's watermarks and
    /// `protection:` lines.
    #[test]
    fn reproduces_the_trace_machine_watermarks_and_lowmem_reserve() {
        let n = node(&[
            (ZoneType::Dma, 256, 3840),
            (ZoneType::Dma32, 0x1000, 772915),
            (ZoneType::Normal, 0x100000, 655360),
        ]);
        let w = NodeWatermarks::compute(&n, &Policy::default());
        assert_eq!(w.zones[0], Watermarks { min: 45, low: 56, high: 67, promo: 78 });
        assert_eq!(w.zones[1], Watermarks { min: 9118, low: 11397, high: 13676, promo: 15955 });
        assert_eq!(w.zones[2], Watermarks { min: 7731, low: 9663, high: 11595, promo: 13527 });
        let r = lowmem_reserve(&n);
        assert_eq!(r[0], [0, 3019, 5579, 5579, 5579]);
        assert_eq!(r[1], [0, 0, 2560, 2560, 2560]);
        assert_eq!(r[2], [0; MAX_NR_ZONES]);
    }

    /// Regression (divergence D2): khugepaged caps its recommendation at 5% of the pages above
    /// the *high watermark*, not 5% of managed memory. By 6.18's arithmetic a lone 256 MiB zone
    /// gets min/low/high 3238/4047/4856 (the model used to give 3276/4095/4914).
    #[test]
    fn thp_recommendation_is_capped_above_the_default_high_watermark() {
        let n = NodeConfig::single(ZoneConfig::normal(256 << 20));
        let w = NodeWatermarks::compute(&n, &Policy::default());
        assert_eq!(w.min_free_kbytes, 12952);
        assert_eq!((w.zones[0].min, w.zones[0].low, w.zones[0].high), (3238, 4047, 4856));
        let user =
            NodeWatermarks::compute(&n, &Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 1024).unwrap());
        assert_eq!(user.min_free_kbytes, 1024, "a sysctl write replaces the recommendation");
    }

    #[test]
    fn default_min_free_kbytes_is_clamped() {
        assert_eq!(default_min_free_kbytes(0), 128);
        assert_eq!(default_min_free_kbytes(16 << 20), 16384);
        assert_eq!(default_min_free_kbytes(u64::MAX / 64), 262_144);
        assert_eq!(default_min_free_kbytes(u64::MAX), 262_144, "no overflow");
    }
}
