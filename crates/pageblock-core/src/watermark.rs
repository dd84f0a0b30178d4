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

use crate::config::ZoneType;
use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::stats::ZoneStat;
use crate::zone::{Zone, ZoneShared};

/// Which mark an allocation checks (`enum zone_watermarks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatermarkLevel {
    /// `WMARK_MIN`.
    Min = 0,
    /// `WMARK_LOW`.
    Low = 1,
    /// `WMARK_HIGH`.
    High = 2,
    /// `WMARK_PROMO`.
    Promo = 3,
}

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
    (lowmem_kbytes * 16).isqrt().clamp(128, 262_144)
}

/// khugepaged's recommendation with THP enabled: room for two free pageblocks per zone plus
/// one pageblock per pair of mobility types per zone, at most 5% of memory, in KiB.
pub fn thp_recommended_min_free_kbytes(pageblock_pages: u64, nr_zones: u64, lowmem_pages: u64) -> u64 {
    let pcptypes = crate::migratetype::MIGRATE_PCPTYPES as u64;
    let pages = pageblock_pages * nr_zones * 2 + pageblock_pages * nr_zones * pcptypes * pcptypes;
    pages.min(lowmem_pages / 20) * (crate::types::PAGE_SIZE / 1024)
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

impl Zone {
    /// `boost_watermark()`: after a fragmenting fallback, raise the marks by one pageblock,
    /// up to `watermark_boost_factor`/10000 of the high mark. Returns whether it boosted.
    pub(crate) fn boost_watermark(&mut self) -> bool {
        let factor = self.policy.watermark_boost_factor as u64;
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

    /// `__zone_watermark_ok()`: would `free_pages` stay above `mark` after allocating a block
    /// of `order`, counting only memory this request may use, and is there a free block of at
    /// least `order` on a list it may use?
    pub fn zone_watermark_ok_with(&self, order: u32, mark: u64, flags: AllocFlags, free_pages: u64) -> bool {
        let c = &self.counters;
        let mut unusable = (1i64 << order) - 1;
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
        // A single zone has no lower zones to protect: lowmem_reserve is 0.
        if free <= min {
            return false;
        }
        if order == 0 {
            return true;
        }
        self.has_usable_block(order, flags)
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
    pub fn zone_watermark_ok(&self, order: u32, mark: u64, flags: AllocFlags) -> bool {
        self.zone_watermark_ok_with(order, mark, flags, self.nr_free_pages())
    }

    /// `zone_watermark_fast()`: a cheap order-0 test first, the full check otherwise, and for
    /// `__GFP_HIGH` order-0 requests a second chance against the un-boosted min mark.
    #[inline]
    pub fn zone_watermark_fast(&self, order: u32, mark: u64, flags: AllocFlags) -> bool {
        let c = &self.counters;
        let free = self.nr_free_pages();
        if order == 0 {
            let mut unusable = 0;
            if !flags.intersects(AllocFlags::RESERVES) {
                unusable += c.nr_free_highatomic.get();
            }
            if !flags.contains(AllocFlags::CMA) {
                unusable += c.zone_stat(ZoneStat::NrFreeCmaPages);
            }
            if free - free.min(unusable) > mark {
                return true;
            }
        }
        self.zone_watermark_slow(order, mark, flags, free)
    }

    #[cold]
    fn zone_watermark_slow(&self, order: u32, mark: u64, flags: AllocFlags, free: u64) -> bool {
        if self.zone_watermark_ok_with(order, mark, flags, free) {
            return true;
        }
        let c = &self.counters;
        let raw_min = c.watermark[WatermarkLevel::Min as usize].get();
        order == 0
            && flags.contains(AllocFlags::MIN_RESERVE)
            && c.watermark_boost.get() != 0
            && flags.watermark() == WatermarkLevel::Min
            && self.zone_watermark_ok_with(0, raw_min, flags, free)
    }

    /// The watermark gate of `get_page_from_freelist`, including the `ZONE_BELOW_HIGH`
    /// bookkeeping that per-CPU lists use to size their caches. Returns whether this request
    /// may allocate from the zone.
    #[inline]
    pub fn watermark_allows(&self, order: u32, flags: AllocFlags) -> bool {
        if flags.contains(AllocFlags::NO_WATERMARKS) {
            return true;
        }
        if !self.flags.below_high() {
            let high = self.wmark_pages(WatermarkLevel::High);
            if self.zone_watermark_fast(order, high, flags) {
                return true;
            }
            self.flags.set_below_high(true);
        }
        let mark = self.wmark_pages(flags.watermark());
        self.zone_watermark_fast(order, mark, flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real machine of `shared/reference/samples/zoneinfo.txt`: three zones, THP on.
    #[test]
    fn reproduces_the_sample_machine_watermarks() {
        let zones = [(ZoneType::Dma, 3840), (ZoneType::Dma32, 772915), (ZoneType::Normal, 327680)];
        let lowmem: u64 = zones.iter().map(|z| z.1).sum();
        let dflt = default_min_free_kbytes(lowmem * 4);
        assert_eq!(dflt, 8407, "int_sqrt(lowmem_kbytes * 16)");
        let thp = thp_recommended_min_free_kbytes(512, 3, lowmem);
        assert_eq!(thp, 67584, "the sample's vm.min_free_kbytes");
        let w = setup_per_zone_wmarks(dflt.max(thp), 10, &zones);
        assert_eq!(w[0], Watermarks { min: 58, low: 72, high: 86, promo: 100 });
        assert_eq!(w[1], Watermarks { min: 11824, low: 14780, high: 17736, promo: 20692 });
        assert_eq!(w[2], Watermarks { min: 5012, low: 6265, high: 7518, promo: 8771 });
        let movable = setup_per_zone_wmarks(67584, 10, &[(ZoneType::Normal, 1000), (ZoneType::Movable, 0)]);
        assert_eq!(movable[1], Watermarks { min: 32, low: 32, high: 32, promo: 32 });
    }

    #[test]
    fn default_min_free_kbytes_is_clamped() {
        assert_eq!(default_min_free_kbytes(0), 128);
        assert_eq!(default_min_free_kbytes(16 << 20), 16384);
        assert_eq!(default_min_free_kbytes(u64::MAX / 64), 262_144);
    }
}
