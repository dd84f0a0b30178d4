//! Transparent huge page faults (`do_huge_pmd_anonymous_page`, `vma_thp_gfp_mask`): an
//! anonymous fault first asks for a PMD-sized block with the GFP mask the `defrag` setting
//! gives, and falls back to a base page when that fails.
//!
//! The block is asked for as `vma_alloc_folio` → `alloc_pages_mpol` asks under CONFIG_NUMA
//! with the default (local) memory policy: first on this node only and without reclaim
//! (`__GFP_THISNODE | __GFP_NORETRY`, so the slow path compacts once, asynchronously, and
//! gives up), then, if the mask allows direct reclaim, once more with the mask as it is.

use crate::gfp::Gfp;
use crate::locks::NodeLocks;
use crate::page_alloc::alloc_pages;
use crate::stats::VmEvent;
use crate::types::Pfn;
use crate::zone::alloc::AllocError;

/// `/sys/kernel/mm/transparent_hugepage/defrag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThpDefrag {
    /// Direct reclaim and compaction for every fault (`__GFP_NORETRY` unless madvised).
    Always,
    /// Wake kswapd and kcompactd, fail at once.
    Defer,
    /// Direct reclaim for madvised regions, kswapd/kcompactd for the rest.
    DeferMadvise,
    /// Direct reclaim for madvised regions only (the default).
    Madvise,
    /// Never reclaim or compact for a huge page.
    Never,
}

impl ThpDefrag {
    /// Every setting, in the sysfs file's order.
    pub const ALL: [ThpDefrag; 5] =
        [ThpDefrag::Always, ThpDefrag::Defer, ThpDefrag::DeferMadvise, ThpDefrag::Madvise, ThpDefrag::Never];

    /// The name sysfs shows.
    pub const fn name(self) -> &'static str {
        match self {
            ThpDefrag::Always => "always",
            ThpDefrag::Defer => "defer",
            ThpDefrag::DeferMadvise => "defer+madvise",
            ThpDefrag::Madvise => "madvise",
            ThpDefrag::Never => "never",
        }
    }

    /// Parse a sysfs name.
    pub fn from_name(s: &str) -> Option<ThpDefrag> {
        ThpDefrag::ALL.into_iter().find(|d| d.name() == s)
    }

    /// `vma_thp_gfp_mask()`: the mask of a huge page fault in a region that is `madvised`
    /// (`MADV_HUGEPAGE`) or not.
    pub fn gfp(self, madvised: bool) -> Gfp {
        let light = Gfp::TRANSHUGE_LIGHT;
        let or = |a: Gfp, b: Gfp| Gfp(a.0 | b.0);
        match self {
            ThpDefrag::Always if madvised => Gfp::TRANSHUGE,
            ThpDefrag::Always => or(Gfp::TRANSHUGE, Gfp::NORETRY),
            ThpDefrag::Defer => or(light, Gfp::KSWAPD_RECLAIM),
            ThpDefrag::DeferMadvise if madvised => or(light, Gfp::DIRECT_RECLAIM),
            ThpDefrag::DeferMadvise => or(light, Gfp::KSWAPD_RECLAIM),
            ThpDefrag::Madvise if madvised => or(light, Gfp::DIRECT_RECLAIM),
            ThpDefrag::Madvise | ThpDefrag::Never => light,
        }
    }
}

/// `/sys/kernel/mm/transparent_hugepage/enabled`: which anonymous faults try a huge page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThpEnabled {
    /// Every anonymous fault in a large enough aligned range (the mask then depends on
    /// whether the range is madvised: [`ThpDefrag::gfp`]).
    Always,
    /// Only faults in `MADV_HUGEPAGE` ranges (the default).
    Madvise,
    /// No fault tries a huge page.
    Never,
}

impl ThpEnabled {
    /// Every setting the model knows, in the sysfs file's order.
    pub const ALL: [ThpEnabled; 3] = [ThpEnabled::Always, ThpEnabled::Madvise, ThpEnabled::Never];

    /// The name sysfs shows.
    pub const fn name(self) -> &'static str {
        match self {
            ThpEnabled::Always => "always",
            ThpEnabled::Madvise => "madvise",
            ThpEnabled::Never => "never",
        }
    }

    /// Parse a sysfs name.
    pub fn from_name(s: &str) -> Option<ThpEnabled> {
        ThpEnabled::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Whether a fault in a range that is `madvised` or not tries a huge page.
    pub const fn huge(self, madvised: bool) -> bool {
        match self {
            ThpEnabled::Always => true,
            ThpEnabled::Madvise => madvised,
            ThpEnabled::Never => false,
        }
    }
}

/// What a huge page fault got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThpFault {
    /// The block mapped.
    pub pfn: Pfn,
    /// Its order: the huge page order, or 0 after a fallback.
    pub order: u32,
}

/// A huge page fault on CPU `cpu`: a block of `hpage_order` with `defrag`'s mask
/// (`thp_fault_alloc`), else a base page (`thp_fault_fallback`). Fails only if the base page
/// cannot be had either.
pub fn thp_fault<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    hpage_order: u32,
    defrag: ThpDefrag,
    madvised: bool,
) -> Result<ThpFault, AllocError> {
    let node = l.node();
    if let Some(pfn) = alloc_hugepage_mpol(l, cpu, hpage_order, defrag.gfp(madvised)) {
        node.count(VmEvent::ThpFaultAlloc, 1);
        return Ok(ThpFault { pfn, order: hpage_order });
    }
    node.count(VmEvent::ThpFaultFallback, 1);
    let pfn = alloc_pages(l, cpu, 0, Gfp::HIGHUSER_MOVABLE)?;
    Ok(ThpFault { pfn, order: 0 })
}

/// `alloc_pages_mpol()` for a PMD-sized block under the default memory policy: this node
/// only, compaction but no reclaim; then, for a mask that may reclaim directly, the full
/// slow path (the one node here is every node it may then use).
fn alloc_hugepage_mpol<L: NodeLocks + ?Sized>(l: &L, cpu: usize, order: u32, gfp: Gfp) -> Option<Pfn> {
    let local = gfp | Gfp::THISNODE | Gfp::NORETRY;
    if let Ok(pfn) = alloc_pages(l, cpu, order, local) {
        return Some(pfn);
    }
    if !gfp.contains(Gfp::DIRECT_RECLAIM) {
        return None;
    }
    alloc_pages(l, cpu, order, gfp).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enabled_always_makes_every_fault_try_a_huge_page() {
        assert!(ThpEnabled::Always.huge(false) && ThpEnabled::Always.huge(true));
        assert!(!ThpEnabled::Madvise.huge(false) && ThpEnabled::Madvise.huge(true));
        for e in ThpEnabled::ALL {
            assert_eq!(ThpEnabled::from_name(e.name()), Some(e));
        }
        assert!(!ThpEnabled::Never.huge(false) && !ThpEnabled::Never.huge(true));
        assert_eq!(ThpEnabled::from_name("sometimes"), None);
    }

    #[test]
    fn masks_follow_the_defrag_setting() {
        assert_eq!(ThpDefrag::Always.gfp(true), Gfp::TRANSHUGE);
        assert!(ThpDefrag::Always.gfp(false).contains(Gfp::NORETRY));
        assert!(!ThpDefrag::Madvise.gfp(false).intersects(Gfp::RECLAIM));
        assert!(ThpDefrag::Madvise.gfp(true).contains(Gfp::DIRECT_RECLAIM));
        assert!(ThpDefrag::Defer.gfp(true).contains(Gfp::KSWAPD_RECLAIM));
        assert!(!ThpDefrag::Defer.gfp(true).contains(Gfp::DIRECT_RECLAIM));
        for d in ThpDefrag::ALL {
            assert_eq!(ThpDefrag::from_name(d.name()), Some(d));
            assert!(d.gfp(true).contains(Gfp::MOVABLE) && d.gfp(true).contains(Gfp::COMP));
        }
    }
}
