//! Which kernel's rules the model follows where a behaviour changed between releases
//! ([`KernelPeriod`]). The sysctls and switches of [`crate::Policy`] mean the same in every
//! period.

/// Whose reclaim rules, where they changed after seed 004 was measured.
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
