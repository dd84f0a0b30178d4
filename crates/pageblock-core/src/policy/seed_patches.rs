//! The seed patches' switches that can change a result ([`SeedPatches`]): each is on by
//! default where the patch was merged, so turning it off is the kernel before it. Seed 001's
//! prefetch changes speed only and lives in [`super::SpeedOnly`].

/// How one order's free area is laid out in memory (seed 002 compares them under
/// concurrent allocation: which cache lines an allocation touches, and which CPUs share them).
/// A result can differ: [`FreeAreaLayout::Plain`] keeps no per-type counts, so what reads
/// them walks the lists or does without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeAreaLayout {
    /// `{ free_list[MT]; nr_free }`: the kernel before seed 000; no per-type counts, so
    /// `/proc/pagetypeinfo` must walk the lists.
    Plain,
    /// `{ free_list[MT]; nr_free; mt_nr_free[MT] }`: seed 000's patch (the default).
    Counts,
    /// `{ { free_list; nr_free }[MT]; nr_free }`: each list next to its own count (the layout
    /// proposed in the seed 002 thread).
    PerList,
}

/// One switch per seed patch that can change what the model reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedPatches {
    /// Seed 000: `/proc/pagetypeinfo` reads the per-migratetype free counts instead of walking
    /// the free lists under the zone lock.
    pub pagetypeinfo_from_counts: bool,
    /// Seed 002: the memory layout of `free_area[]` (and whether it keeps per-type counts).
    pub free_area_layout: FreeAreaLayout,
    /// Seed 003 (6.16+ `enum rmqueue_mode`): a bulk refill remembers the last fallback step
    /// that worked and restarts there for the next block instead of from the top.
    pub rmqueue_mode_memory: bool,
}

impl Default for SeedPatches {
    fn default() -> Self {
        SeedPatches {
            pagetypeinfo_from_counts: true,
            free_area_layout: FreeAreaLayout::Counts,
            rmqueue_mode_memory: true,
        }
    }
}
