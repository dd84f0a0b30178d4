//! Knobs that change how fast the model runs and never a figure it reports ([`SpeedOnly`]):
//! every setting frees the same blocks to the same lists in the same order and decides the
//! same. They exist for the wall-clock experiments (seed 001, `bench fastpath`).

/// How a bulk free from a per-CPU list reaches the memmap (seed 001's two settings, and
/// pageblock's own). The kernel's per-CPU lists thread through `struct page`, so walking them
/// touches every page's record; here the lists are rings of page indices, and the kernel
/// settings touch the records where the kernel's walk did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkFree {
    /// 2018–2022 ("mm/free_pcppages_bulk: do not hold lock when picking pages to free",
    /// Aaron Lu): pick the batch off the per-CPU lists first, outside the zone lock — a walk
    /// through every page's record, prefetching the first `batch` buddies with
    /// [`SpeedOnly::buddy_prefetch`] — then take the lock and merge.
    TwoPass,
    /// 2022 on ("mm/page_alloc: free pages in a single pass during bulk free", Mel Gorman):
    /// one pass under the zone lock, each page merged as it comes off its list (one step of
    /// the walk); with [`SpeedOnly::buddy_prefetch`] the buddy's record is prefetched just
    /// before the merge reads it (the same series then removed the prefetch).
    SinglePass,
    /// pageblock's (the default): one pass under the zone lock, with a software pipeline
    /// running ahead of the merge that prefetches each page's buddy records and then the list
    /// neighbours the buddy's unlink will write.
    Pipelined,
}

/// Memory-access knobs: prefetches and walks, hints only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpeedOnly {
    /// Seed 001: prefetch the memmap records of the first `batch` pages' buddies in a bulk
    /// free from a per-CPU list (kernels from 2018, 4.17, to 2022 did; today's do not, so it
    /// is off by default). Where the prefetch happens, outside or under the zone lock, is
    /// [`SpeedOnly::bulk_free`]'s; [`BulkFree::Pipelined`] prefetches buddies anyway.
    pub buddy_prefetch: bool,
    /// How `free_pcppages_bulk()` brings the memmap records it touches into the cache.
    pub bulk_free: BulkFree,
}

impl Default for SpeedOnly {
    fn default() -> Self {
        SpeedOnly { buddy_prefetch: false, bulk_free: BulkFree::Pipelined }
    }
}
