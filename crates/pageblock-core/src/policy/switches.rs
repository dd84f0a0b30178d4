//! The switches that act only under `vm.defrag_mode`: the 2026 upstream fixes
//! ([`DefragModeFix`]) and pageblock's own policy ([`PageblockSwitch`]). A set of them
//! ([`Switches`]) can be written but not read: the allocator asks
//! [`crate::Policy::defrag_mode_fix`] or [`crate::Policy::pageblock_switch`], which gate each
//! on `defrag_mode` in one place, so a switch set without it changes nothing.

use std::marker::PhantomData;

/// A switch kind: each switch one bit of a [`Switches`] set.
pub trait Switch: Copy + 'static {
    /// Every switch of the kind.
    const ALL: &'static [Self];
    /// Its name in reports and tests.
    fn name(self) -> &'static str;
    /// Its bit in the set.
    fn bit(self) -> u8;
}

/// The 2026 `defrag_mode` fixes (posted upstream in 2026, not in 6.18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragModeFix {
    /// A request that cannot reclaim but may wake kswapd (GFP_ATOMIC, GFP_NOWAIT) may fall
    /// back into foreign pageblocks before it fails, instead of failing with free memory in
    /// other migratetypes. One that may not wake kswapd either (`GFP_TRANSHUGE_LIGHT`) still
    /// fails.
    AtomicFallback,
    /// When a whole free pageblock is what an unmovable or reclaimable request needs, direct
    /// reclaim and direct compaction work for one (`reclaim_order` and `compact_order`
    /// promoted to the pageblock order) instead of the request reclaiming without end; the
    /// request itself, and the block compaction captures for it, keep the requested order.
    PageblockCompaction,
}

impl Switch for DefragModeFix {
    const ALL: &'static [Self] = &[DefragModeFix::AtomicFallback, DefragModeFix::PageblockCompaction];

    fn name(self) -> &'static str {
        match self {
            DefragModeFix::AtomicFallback => "defrag_mode_atomic_fallback",
            DefragModeFix::PageblockCompaction => "defrag_mode_pageblock_compaction",
        }
    }

    fn bit(self) -> u8 {
        self as u8
    }
}

/// pageblock's own policy (not in any kernel), one switch per change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageblockSwitch {
    /// Once free *pages* are above the high watermark, kswapd's further work toward whole
    /// free pageblocks reclaims page cache only — it never swaps anonymous memory out just to
    /// make blocks.
    BlocksWithoutSwap,
    /// An allocation that leaves its zone with fewer whole free pageblocks
    /// (`NR_FREE_PAGES_BLOCKS`) than the low watermark wakes kswapd for a pageblock, as
    /// `rmqueue()` wakes it for a boosted watermark. The kernel wakes kswapd only once free
    /// *pages* fall below low — whole blocks are long gone by then, and the next burst of
    /// huge page faults finds none.
    KswapdWakeForBlocks,
    /// `pgdat_balanced()` weighs the node's whole free pageblocks (summed over the zones the
    /// request may use) against the sum of their high watermarks, wherever it counts whole
    /// blocks at all (in 6.18, above order 0). The kernel accepts any one zone above its
    /// mark, so a small ZONE_DMA holding a few free blocks reports the node balanced while
    /// ZONE_DMA32 has none, and kswapd does not run until the shortage is acute.
    KswapdBalanceNodeBlocks,
    /// `compaction_suitable()` also asks for `compact_gap(order)` free pages where the free
    /// scanner can migrate into — on the MIGRATE_MOVABLE lists, below the order being made.
    /// Free memory inside unmovable and reclaimable pageblocks passes the kernel's check, yet
    /// the scanners meet without a block and compaction is deferred for up to 64 attempts,
    /// long after reclaim has made room. Skipped instead, the request reclaims.
    CompactionSuitableTargets,
}

impl Switch for PageblockSwitch {
    const ALL: &'static [Self] = &[
        PageblockSwitch::BlocksWithoutSwap,
        PageblockSwitch::KswapdWakeForBlocks,
        PageblockSwitch::KswapdBalanceNodeBlocks,
        PageblockSwitch::CompactionSuitableTargets,
    ];

    fn name(self) -> &'static str {
        match self {
            PageblockSwitch::BlocksWithoutSwap => "blocks_without_swap",
            PageblockSwitch::KswapdWakeForBlocks => "kswapd_wake_for_blocks",
            PageblockSwitch::KswapdBalanceNodeBlocks => "kswapd_balance_node_blocks",
            PageblockSwitch::CompactionSuitableTargets => "compaction_suitable_targets",
        }
    }

    fn bit(self) -> u8 {
        self as u8
    }
}

/// Which switches of kind `S` are set (none by default). Read only through the policy's
/// gate.
pub struct Switches<S> {
    bits: u8,
    kind: PhantomData<S>,
}

impl<S: Switch> Switches<S> {
    /// No switch set.
    pub const fn none() -> Self {
        Switches { bits: 0, kind: PhantomData }
    }

    /// Every switch of the kind set.
    pub fn all() -> Self {
        S::ALL.iter().fold(Self::none(), |set, &s| set.with(s, true))
    }

    /// This set with `switch` turned `on` or off.
    pub fn with(mut self, switch: S, on: bool) -> Self {
        self.set(switch, on);
        self
    }

    /// Turn `switch` on or off.
    pub fn set(&mut self, switch: S, on: bool) {
        let bit = 1 << switch.bit();
        self.bits = if on { self.bits | bit } else { self.bits & !bit };
    }

    /// Whether `switch` is set, in force or not: for the policy's gate only.
    pub(super) fn is_set(&self, switch: S) -> bool {
        self.bits & (1 << switch.bit()) != 0
    }

    /// True if no switch is set.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }
}

// By hand: a derive would ask `S` for each trait, though only the bits are compared.
impl<S> Clone for Switches<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Switches<S> {}

impl<S> PartialEq for Switches<S> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<S> Eq for Switches<S> {}

impl<S: Switch> Default for Switches<S> {
    fn default() -> Self {
        Self::none()
    }
}

impl<S: Switch> std::fmt::Debug for Switches<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(S::ALL.iter().filter(|&&s| self.is_set(s)).map(|s| s.name())).finish()
    }
}
