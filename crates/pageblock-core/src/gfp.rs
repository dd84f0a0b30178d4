//! From a request's GFP mask to what the allocator does with it: the migratetype
//! (`gfp_migratetype`) and the `ALLOC_*` flags of the fast path (`prepare_alloc_pages` +
//! `alloc_flags_nofragment`) and of the slow path (`gfp_to_alloc_flags`).
//!
//! The flag values are the kernel's (`mm/internal.h`), so traces and reports line up.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign, Not};

pub use pageblock_formats::gfp::Gfp;

use crate::config::ZoneType;
use crate::migratetype::MigrateType;

/// Which mark an allocation checks (`enum zone_watermarks`), the index an attempt's
/// `ALLOC_WMARK_*` bits hold.
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

/// `ALLOC_*` flags: how hard an allocation attempt may dig.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AllocFlags(pub u32);

impl AllocFlags {
    /// Check against the min watermark (`ALLOC_WMARK_MIN`, value 0).
    pub const WMARK_MIN: AllocFlags = AllocFlags(0x0);
    /// Check against the low watermark.
    pub const WMARK_LOW: AllocFlags = AllocFlags(0x1);
    /// Check against the high watermark.
    pub const WMARK_HIGH: AllocFlags = AllocFlags(0x2);
    /// Mask of the watermark index bits.
    pub const WMARK_MASK: AllocFlags = AllocFlags(0x3);
    /// Skip the watermark check entirely.
    pub const NO_WATERMARKS: AllocFlags = AllocFlags(0x4);
    /// An OOM victim may use part of the reserves.
    pub const OOM: AllocFlags = AllocFlags(0x8);
    /// The caller cannot block (no direct reclaim).
    pub const NON_BLOCK: AllocFlags = AllocFlags(0x10);
    /// `__GFP_HIGH`: may use half of the min reserve.
    pub const MIN_RESERVE: AllocFlags = AllocFlags(0x20);
    /// Enforce cpusets (kept for fidelity; there are no cpusets here).
    pub const CPUSET: AllocFlags = AllocFlags(0x40);
    /// May allocate from CMA pageblocks.
    pub const CMA: AllocFlags = AllocFlags(0x80);
    /// Avoid falling back into foreign pageblocks below pageblock order.
    pub const NOFRAGMENT: AllocFlags = AllocFlags(0x100);
    /// May use and create HIGHATOMIC reserves.
    pub const HIGHATOMIC: AllocFlags = AllocFlags(0x200);
    /// Only trylock the zone and pcp locks.
    pub const TRYLOCK: AllocFlags = AllocFlags(0x400);
    /// May wake kswapd (same bit value as `__GFP_KSWAPD_RECLAIM`).
    pub const KSWAPD: AllocFlags = AllocFlags(0x800);
    /// Any flag that allows going below the min watermark.
    pub const RESERVES: AllocFlags = AllocFlags(0x10 | 0x20 | 0x200 | 0x8);

    /// True if any bit of `other` is set.
    #[inline]
    pub const fn intersects(self, other: AllocFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// True if every bit of `other` is set.
    #[inline]
    pub const fn contains(self, other: AllocFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The watermark this attempt checks against.
    #[inline]
    pub const fn watermark(self) -> WatermarkLevel {
        match self.0 & 0x3 {
            0 => WatermarkLevel::Min,
            1 => WatermarkLevel::Low,
            _ => WatermarkLevel::High,
        }
    }
}

impl BitOr for AllocFlags {
    type Output = AllocFlags;
    fn bitor(self, o: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 | o.0)
    }
}

impl BitOrAssign for AllocFlags {
    fn bitor_assign(&mut self, o: AllocFlags) {
        self.0 |= o.0;
    }
}

impl BitAnd for AllocFlags {
    type Output = AllocFlags;
    fn bitand(self, o: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 & o.0)
    }
}

impl Not for AllocFlags {
    type Output = AllocFlags;
    fn not(self) -> AllocFlags {
        AllocFlags(!self.0)
    }
}

impl fmt::Debug for AllocFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(u32, &str); 10] = [
            (0x4, "NO_WATERMARKS"),
            (0x8, "OOM"),
            (0x10, "NON_BLOCK"),
            (0x20, "MIN_RESERVE"),
            (0x40, "CPUSET"),
            (0x80, "CMA"),
            (0x100, "NOFRAGMENT"),
            (0x200, "HIGHATOMIC"),
            (0x400, "TRYLOCK"),
            (0x800, "KSWAPD"),
        ];
        write!(f, "WMARK_{}", ["MIN", "LOW", "HIGH", "?"][(self.0 & 3) as usize])?;
        for (_, name) in NAMES.iter().filter(|(bit, _)| self.0 & bit != 0) {
            write!(f, "|{name}")?;
        }
        Ok(())
    }
}

/// A GFP mask that cannot be served: both mobility bits set (`GFP_MOVABLE_MASK` misuse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidGfp(pub Gfp);

/// `gfp_migratetype()`: `(gfp & (__GFP_MOVABLE|__GFP_RECLAIMABLE)) >> 3`, forced to
/// Unmovable when grouping by mobility is off.
pub fn gfp_migratetype(gfp: Gfp, group_by_mobility: bool) -> Result<MigrateType, InvalidGfp> {
    let movable = gfp.contains(Gfp::MOVABLE);
    let reclaimable = gfp.contains(Gfp::RECLAIMABLE);
    let mt = match (movable, reclaimable) {
        (true, true) => return Err(InvalidGfp(gfp)),
        (true, false) => MigrateType::Movable,
        (false, true) => MigrateType::Reclaimable,
        (false, false) => MigrateType::Unmovable,
    };
    Ok(if group_by_mobility { mt } else { MigrateType::Unmovable })
}

/// `gfp_zone()`: the highest zone type a request may use, from its zone modifiers
/// (`GFP_ZONE_TABLE` on x86_64, which has no ZONE_HIGHMEM: `__GFP_HIGHMEM` alone means
/// ZONE_NORMAL, and with `__GFP_MOVABLE` it means ZONE_MOVABLE). Two zone modifiers at once
/// (`GFP_ZONE_BAD`) are refused.
pub fn gfp_zone(gfp: Gfp) -> Result<ZoneType, InvalidGfp> {
    let modifiers = [Gfp::DMA, Gfp::HIGHMEM, Gfp::DMA32].iter().filter(|m| gfp.contains(**m)).count();
    if modifiers > 1 {
        return Err(InvalidGfp(gfp));
    }
    Ok(if gfp.contains(Gfp::DMA) {
        ZoneType::Dma
    } else if gfp.contains(Gfp::DMA32) {
        ZoneType::Dma32
    } else if gfp.contains(Gfp::HIGHMEM) && gfp.contains(Gfp::MOVABLE) {
        ZoneType::Movable
    } else {
        ZoneType::Normal
    })
}

/// Whether the zone the request prefers gets ALLOC_NOFRAGMENT by default: the kernel gives it
/// to requests whose preferred zone is ZONE_NORMAL on a machine with a DMA32 zone (or a
/// single node), and to everything under `defrag_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoFragmentRule {
    /// CONFIG_ZONE_DMA32 (without it ALLOC_NOFRAGMENT is 0).
    pub configured: bool,
    /// The preferred zone is ZONE_NORMAL.
    pub zone_is_normal: bool,
    /// `vm.defrag_mode`.
    pub defrag_mode: bool,
}

impl NoFragmentRule {
    /// `alloc_flags_nofragment()` sets ALLOC_NOFRAGMENT.
    pub fn applies(self) -> bool {
        self.configured && (self.defrag_mode || self.zone_is_normal)
    }
}

/// Fast-path flags (`__alloc_pages` step 3): low watermark, CMA for movable requests,
/// ALLOC_NOFRAGMENT if `nofragment` ([`NoFragmentRule::applies`], worked out once per node).
#[inline]
pub fn alloc_flags_fast(gfp: Gfp, mt: MigrateType, nofragment: bool) -> AllocFlags {
    let mut flags = AllocFlags::WMARK_LOW | AllocFlags::CPUSET;
    if mt == MigrateType::Movable {
        flags |= AllocFlags::CMA;
    }
    if gfp.contains(Gfp::KSWAPD_RECLAIM) {
        flags |= AllocFlags::KSWAPD;
    }
    if nofragment {
        flags |= AllocFlags::NOFRAGMENT;
    }
    flags
}

/// Slow-path flags (`gfp_to_alloc_flags`): min watermark, reserves for `__GFP_HIGH` and
/// non-blocking callers, HIGHATOMIC for high-order atomic requests, NOFRAGMENT only under
/// `defrag_mode` (and only where the flag exists).
pub fn gfp_to_alloc_flags(gfp: Gfp, order: u32, mt: MigrateType, rule: NoFragmentRule) -> AllocFlags {
    let mut flags = AllocFlags::WMARK_MIN | AllocFlags::CPUSET;
    if gfp.contains(Gfp::HIGH) {
        flags |= AllocFlags::MIN_RESERVE;
    }
    if gfp.contains(Gfp::KSWAPD_RECLAIM) {
        flags |= AllocFlags::KSWAPD;
    }
    if !gfp.contains(Gfp::DIRECT_RECLAIM) {
        if !gfp.contains(Gfp::NOMEMALLOC) {
            flags |= AllocFlags::NON_BLOCK;
            if order > 0 && flags.contains(AllocFlags::MIN_RESERVE) {
                flags |= AllocFlags::HIGHATOMIC;
            }
        }
        if flags.contains(AllocFlags::MIN_RESERVE) {
            flags = flags & !AllocFlags::CPUSET;
        }
    }
    if mt == MigrateType::Movable {
        flags |= AllocFlags::CMA;
    }
    if rule.configured && rule.defrag_mode {
        flags |= AllocFlags::NOFRAGMENT;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: NoFragmentRule =
        NoFragmentRule { configured: true, zone_is_normal: true, defrag_mode: false };

    #[test]
    fn migratetype_follows_the_mobility_bits() {
        assert_eq!(gfp_migratetype(Gfp::KERNEL, true), Ok(MigrateType::Unmovable));
        assert_eq!(gfp_migratetype(Gfp::HIGHUSER_MOVABLE, true), Ok(MigrateType::Movable));
        assert_eq!(gfp_migratetype(Gfp::KERNEL | Gfp::RECLAIMABLE, true), Ok(MigrateType::Reclaimable));
        assert_eq!(gfp_migratetype(Gfp::HIGHUSER_MOVABLE, false), Ok(MigrateType::Unmovable));
        let both = Gfp::MOVABLE | Gfp::RECLAIMABLE;
        assert_eq!(gfp_migratetype(both, true), Err(InvalidGfp(both)));
    }

    #[test]
    fn gfp_zone_follows_the_x86_64_zone_table() {
        assert_eq!(gfp_zone(Gfp::KERNEL), Ok(ZoneType::Normal));
        assert_eq!(gfp_zone(Gfp::HIGHUSER_MOVABLE), Ok(ZoneType::Movable));
        assert_eq!(gfp_zone(Gfp::HIGHUSER), Ok(ZoneType::Normal), "no ZONE_HIGHMEM on x86_64");
        assert_eq!(gfp_zone(Gfp::KERNEL | Gfp::DMA32), Ok(ZoneType::Dma32));
        assert_eq!(gfp_zone(Gfp::KERNEL | Gfp::DMA | Gfp::MOVABLE), Ok(ZoneType::Dma));
        let bad = Gfp::DMA | Gfp::DMA32;
        assert_eq!(gfp_zone(bad), Err(InvalidGfp(bad)));
    }

    #[test]
    fn fast_path_flags() {
        let f = alloc_flags_fast(Gfp::HIGHUSER_MOVABLE, MigrateType::Movable, RULE.applies());
        assert_eq!(f, AllocFlags(0x1 | 0x40 | 0x80 | 0x800 | 0x100));
        let no_dma32 = NoFragmentRule { configured: false, ..RULE };
        assert!(!alloc_flags_fast(Gfp::KERNEL, MigrateType::Unmovable, no_dma32.applies())
            .contains(AllocFlags::NOFRAGMENT));
        let dma32_zone = NoFragmentRule { zone_is_normal: false, ..RULE };
        assert!(!alloc_flags_fast(Gfp::KERNEL, MigrateType::Unmovable, dma32_zone.applies())
            .contains(AllocFlags::NOFRAGMENT));
        let defrag = NoFragmentRule { zone_is_normal: false, defrag_mode: true, ..RULE };
        assert!(alloc_flags_fast(Gfp::KERNEL, MigrateType::Unmovable, defrag.applies())
            .contains(AllocFlags::NOFRAGMENT));
    }

    #[test]
    fn slow_path_flags_for_atomic_and_kernel_requests() {
        let atomic = gfp_to_alloc_flags(Gfp::ATOMIC, 2, MigrateType::Unmovable, RULE);
        assert!(atomic.contains(AllocFlags::MIN_RESERVE | AllocFlags::NON_BLOCK | AllocFlags::HIGHATOMIC));
        assert!(!atomic.contains(AllocFlags::CPUSET));
        assert!(!atomic.contains(AllocFlags::NOFRAGMENT));
        let atomic0 = gfp_to_alloc_flags(Gfp::ATOMIC, 0, MigrateType::Unmovable, RULE);
        assert!(!atomic0.contains(AllocFlags::HIGHATOMIC));
        let kernel = gfp_to_alloc_flags(Gfp::KERNEL, 3, MigrateType::Unmovable, RULE);
        assert_eq!(kernel, AllocFlags(0x40 | 0x800));
        let defrag = NoFragmentRule { defrag_mode: true, ..RULE };
        assert!(gfp_to_alloc_flags(Gfp::KERNEL, 0, MigrateType::Unmovable, defrag)
            .contains(AllocFlags::NOFRAGMENT));
        assert_eq!(format!("{kernel:?}"), "WMARK_MIN|CPUSET|KSWAPD");
    }
}
