//! Per-CPU page lists (`struct per_cpu_pages`, `__rmqueue_pcplist`, `free_frozen_page_commit`,
//! `nr_pcp_alloc`, `nr_pcp_high`, `nr_pcp_free`, `free_pcppages_bulk`, `drain_pages_zone`)
//! and how the kernel sizes them (`zone_batchsize`, `zone_highsize`), plus the per-CPU
//! vmstat threshold `/proc/zoneinfo` prints.
//!
//! Each CPU keeps small LIFO lists of free blocks per (migratetype, order) for orders 0–3
//! and, with THP, the pageblock order. Allocation and free touch only the CPU's own lists;
//! the zone lock is taken to refill a list with a batch (`rmqueue_bulk`) or to free a batch
//! back when the CPU holds more than `high` pages. The kernel threads these lists through
//! `struct page`; here each list is a ring of page indices (`VecDeque<u32>`, head = front)
//! beside the memmap, with the same order of operations (free and allocate at the head,
//! refill at and drain from the tail). A page's record is then touched when it is freed and
//! when it leaves, not when a neighbour does: a drain knows its whole batch without walking
//! page records, so it can prefetch ahead of its merges (`BulkFree::Pipelined`).
//!
//! [`PerCpuPages`] is pure data and policy: the caller supplies the zone access as closures
//! (the runtime takes the zone lock inside them; a single-threaded simulation passes the zone
//! directly), and the caller is responsible for serialising access to one `PerCpuPages`.
//!
//! # Invariants
//!
//! * `count == Σ_lists Σ_blocks 2^order` (base pages), mirrored in the CPU's counters.
//! * Every block on list `p` has order `pindex_to_order(p)` and state `Pcp`.

use std::collections::VecDeque;

use crate::config::ZoneType;
use crate::invariant::{Invariant, VerifyError};
use crate::memmap::pagemap::with_pages;
use crate::memmap::{AllocTag, PageInfo, PageState};
use crate::migratetype::{MigrateType, MIGRATE_PCPTYPES};
use crate::policy::BulkFree;
use crate::types::{Pfn, PAGE_ALLOC_COSTLY_ORDER};
use crate::zone::pageset::PagesetLimits;
use crate::zone::watermark::{WatermarkLevel, WatermarkRequest};
use crate::zone::{Zone, ZoneShared};
use crate::{AllocFlags, Policy};

/// Lists for orders 0..=3, one per mobility type (`NR_LOWORDER_PCP_LISTS`).
pub const NR_LOWORDER_PCP_LISTS: usize = MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER as usize + 1);
/// All lists: the low orders plus two for THP (movable, and unmovable+reclaimable).
pub const NR_PCP_LISTS: usize = NR_LOWORDER_PCP_LISTS + 2;
/// `CONFIG_PCP_BATCH_SCALE_MAX`: refills grow to `batch << 5`, frees to the same.
pub const PCP_BATCH_SCALE_MAX: u32 = 5;

/// `PCPF_PREV_FREE_HIGH_ORDER`: the last free was of order 1..=3.
const PREV_FREE_HIGH_ORDER: u8 = 1 << 0;
/// `PCPF_FREE_HIGH_BATCH`: the CPU cache is big enough to keep a batch of high-order frees.
const FREE_HIGH_BATCH: u8 = 1 << 1;

/// One CPU's lists for one zone.
#[derive(Debug)]
pub struct PerCpuPages {
    cpu: usize,
    lists: [VecDeque<u32>; NR_PCP_LISTS],
    /// Base pages on all lists.
    count: u64,
    /// Current high mark, auto-tuned within `[high_min, high_max]`.
    high: u64,
    high_min: u64,
    high_max: u64,
    batch: u64,
    flags: u8,
    /// Refills are `batch << alloc_factor` pages (grows on consecutive refills).
    alloc_factor: u32,
    /// Recent run of frees, in pages (halved by each allocation).
    free_count: u64,
    pageblock_order: u32,
    buddy_prefetch: bool,
    bulk_free: BulkFree,
    refill_buf: Vec<Pfn>,
    drain_buf: Vec<(Pfn, u32)>,
}

impl PerCpuPages {
    /// Every CPU's lists for each of a node's zones, in the order a driver keeps them: the
    /// lists of `cpu` for zone `z` come at [`crate::NodeShared::pcp_index`]`(cpu, z)`.
    pub fn for_node(nr_cpus: usize, zones: &[Zone]) -> impl Iterator<Item = PerCpuPages> + '_ {
        (0..nr_cpus)
            .flat_map(move |cpu| zones.iter().map(move |z| PerCpuPages::new(cpu, z.shared(), z.policy())))
    }

    /// The lists of `cpu` for the zone of `shared`, sized by the zone's `PagesetLimits`.
    /// `policy` decides the buddy prefetch (seed 001).
    pub fn new(cpu: usize, shared: &ZoneShared, policy: &Policy) -> PerCpuPages {
        let PagesetLimits { batch, high_min, high_max } = shared.pageset();
        let cfg = shared.config();
        let buf = (batch as usize) << PCP_BATCH_SCALE_MAX;
        PerCpuPages {
            cpu,
            lists: std::array::from_fn(|_| VecDeque::new()),
            count: 0,
            high: 0,
            high_min: high_min as u64,
            high_max: high_max as u64,
            batch: batch as u64,
            // zone_pcp_update_cacheinfo(): a cache slice of more than three batches keeps a
            // batch of high-order frees cached.
            flags: if policy.boot.cpu_cache_bytes / crate::types::PAGE_SIZE > 3 * batch as u64 {
                FREE_HIGH_BATCH
            } else {
                0
            },
            alloc_factor: 0,
            free_count: 0,
            pageblock_order: cfg.pageblock_order,
            buddy_prefetch: policy.speed_only.buddy_prefetch,
            bulk_free: policy.speed_only.bulk_free,
            refill_buf: Vec::with_capacity(buf),
            drain_buf: Vec::with_capacity(buf),
        }
    }

    /// `zone_pcp_update()` for this CPU: new batch and high bounds after the zone's size
    /// changed (the current `high` is clamped into them when next used).
    pub fn update_limits(&mut self, shared: &ZoneShared, limits: PagesetLimits, policy: &Policy) {
        self.batch = u64::from(limits.batch);
        self.high_min = u64::from(limits.high_min);
        self.high_max = u64::from(limits.high_max);
        let big_cache = policy.boot.cpu_cache_bytes / crate::types::PAGE_SIZE > 3 * self.batch;
        self.flags = (self.flags & !FREE_HIGH_BATCH) | if big_cache { FREE_HIGH_BATCH } else { 0 };
        let buf = (limits.batch as usize) << PCP_BATCH_SCALE_MAX;
        self.refill_buf.reserve(buf.saturating_sub(self.refill_buf.len()));
        self.drain_buf.reserve(buf.saturating_sub(self.drain_buf.len()));
        self.publish(shared);
    }

    /// Base pages cached.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The current high mark (clamped into `[high_min, high_max]` when next used).
    pub fn high(&self) -> u64 {
        self.high
    }

    /// Set the high mark, as a machine's state read from `/proc/zoneinfo` had it (it is
    /// clamped into `[high_min, high_max]` when next used, as the kernel does).
    pub fn set_high(&mut self, shared: &ZoneShared, high: u64) {
        self.high = high;
        self.publish(shared);
    }

    /// The batch size.
    pub fn batch(&self) -> u64 {
        self.batch
    }

    /// `order_to_pindex()`: which list a block of `order` and type `mt` lives on. HighAtomic
    /// and CMA blocks are cached on the Movable list, as the kernel does.
    #[inline]
    pub fn order_to_pindex(&self, mt: MigrateType, order: u32) -> usize {
        let mt = if mt.is_mergeable() { mt as usize } else { MigrateType::Movable as usize };
        if order > PAGE_ALLOC_COSTLY_ORDER {
            NR_LOWORDER_PCP_LISTS + (mt == MigrateType::Movable as usize) as usize
        } else {
            MIGRATE_PCPTYPES * order as usize + mt
        }
    }

    #[inline]
    fn pindex_to_order(&self, pindex: usize) -> u32 {
        if pindex >= NR_LOWORDER_PCP_LISTS {
            self.pageblock_order
        } else {
            (pindex / MIGRATE_PCPTYPES) as u32
        }
    }

    #[inline(always)]
    fn publish(&self, shared: &ZoneShared) {
        let c = shared.counters().cpu(self.cpu);
        c.count.set(self.count);
        c.high.set(self.high);
    }
}

impl PerCpuPages {
    /// `__rmqueue_pcplist()`: a block of `order` for a `mt` request from this CPU's lists
    /// (the caller holds them, as `rmqueue_pcplist()` does after its trylock).
    /// An empty list is refilled first: `refill(n, out)` must append up to `n` blocks taken
    /// from the zone under its lock (`rmqueue_bulk`). Returns `None` if the refill got none.
    #[inline(always)]
    pub fn __rmqueue_pcplist(
        &mut self,
        shared: &ZoneShared,
        order: u32,
        mt: MigrateType,
        refill: impl FnOnce(usize, &mut Vec<Pfn>),
    ) -> Option<Pfn> {
        // An allocation ends a run of frees.
        self.free_count >>= 1;
        let pindex = self.order_to_pindex(mt, order);
        let idx = match self.lists[pindex].pop_front() {
            Some(idx) => idx,
            None => {
                self.refill(shared, order, pindex, refill);
                self.lists[pindex].pop_front()?
            }
        };
        // Fast path: the head (cache-hot, last freed) is handed out and counted.
        let mm = &shared.memmap;
        self.count -= 1 << order;
        mm.set_info(idx, PageInfo { state: PageState::Allocated, order, tag: AllocTag::of(mt) });
        let c = shared.counters().cpu(self.cpu);
        c.pgalloc.add(1 << order);
        c.allocs.add(1);
        c.count.set(self.count);
        Some(Pfn(shared.config().start_pfn + idx as u64))
    }

    #[cold]
    fn refill(
        &mut self,
        shared: &ZoneShared,
        order: u32,
        pindex: usize,
        refill: impl FnOnce(usize, &mut Vec<Pfn>),
    ) {
        let n = self.nr_pcp_alloc(order, shared.flags().below_high());
        let mut buf = std::mem::take(&mut self.refill_buf);
        buf.clear();
        refill(n, &mut buf);
        let start = shared.config().start_pfn;
        for pfn in &buf {
            // Bulk refills keep physical order: append at the tail.
            self.lists[pindex].push_back((pfn.0 - start) as u32);
        }
        self.count += (buf.len() as u64) << order;
        self.refill_buf = buf;
        self.publish(shared);
    }

    /// `nr_pcp_alloc()`: how many blocks a refill asks for. Order-0 refills grow
    /// (`alloc_factor`) while the CPU keeps allocating, up to `batch << 5`; `high` grows too
    /// while the zone is above its high watermark.
    fn nr_pcp_alloc(&mut self, order: u32, zone_below_high: bool) -> usize {
        let base = self.batch;
        self.high = kernel_clamp(self.high, self.high_min, self.high_max);
        let mut high = self.high;
        if high < base {
            return 1;
        }
        let mut b = if order == 0 { base << self.alloc_factor } else { base };
        if self.high_min != self.high_max && !zone_below_high {
            high = (high + b).min(self.high_max);
            self.high = high;
        }
        if order == 0 {
            let max_alloc = (high as i64 - self.count as i64 - base as i64).max(base as i64) as u64;
            if b <= max_alloc && self.alloc_factor < PCP_BATCH_SCALE_MAX {
                self.alloc_factor += 1;
            }
            b = b.min(max_alloc);
        }
        if b > 1 {
            b = (b >> order).max(2);
        }
        b as usize
    }

    /// `free_frozen_page_commit()`: cache a block the caller freed (its page must already be
    /// in the `Pcp` state: the caller claimed it from its owner; `mt` is its pageblock's type,
    /// which the caller read) and, if the CPU now holds `high` pages or more, free a batch
    /// back: `drain(blocks)` must return them to the zone under its lock
    /// (`free_pcppages_bulk`).
    #[inline]
    pub fn free(
        &mut self,
        shared: &ZoneShared,
        pfn: Pfn,
        order: u32,
        mt: MigrateType,
        drain: impl FnMut(&[(Pfn, u32)]),
    ) {
        // Every free runs this, so its helpers (`note_free_order`, `nr_pcp_high`, `publish`)
        // are inlined: as calls they cost 2.5% of a random-order free (117k frees over
        // 512 MiB, 9 interleaved runs: 55.5 -> 54.1 ns median).
        let pindex = self.order_to_pindex(mt, order);
        let idx = (pfn.0 - shared.config().start_pfn) as u32;
        self.alloc_factor >>= 1;
        self.lists[pindex].push_front(idx);
        self.count += 1 << order;
        shared.counters().cpu(self.cpu).pgfree.add(1 << order);
        let free_high = self.note_free_order(order);
        if self.free_count < self.batch << PCP_BATCH_SCALE_MAX {
            self.free_count += 1 << order;
        }
        let high = self.nr_pcp_high(shared, free_high);
        if self.count >= high {
            self.free_over_high(shared, high, free_high, pindex, drain);
        }
        self.publish(shared);
    }

    /// Track runs of high-order frees: a CPU that frees many order 1..=3 blocks in a row
    /// (a process exiting) flushes them instead of caching them (`free_high`).
    #[inline(always)]
    fn note_free_order(&mut self, order: u32) -> bool {
        if (1..=PAGE_ALLOC_COSTLY_ORDER).contains(&order) {
            let free_high = self.free_count >= self.batch + self.high_min / 2
                && self.flags & PREV_FREE_HIGH_ORDER != 0
                && (self.flags & FREE_HIGH_BATCH == 0 || self.count >= self.batch);
            self.flags |= PREV_FREE_HIGH_ORDER;
            free_high
        } else {
            self.flags &= !PREV_FREE_HIGH_ORDER;
            false
        }
    }

    #[cold]
    fn free_over_high(
        &mut self,
        shared: &ZoneShared,
        high: u64,
        free_high: bool,
        pindex: usize,
        drain: impl FnMut(&[(Pfn, u32)]),
    ) {
        let to_free = self.nr_pcp_free(high, free_high);
        self.free_pcppages_bulk(shared, to_free, pindex, drain);
        // Freeing may have lifted the zone back above its high mark: let caches grow again.
        if shared.flags().below_high() {
            let mark = shared.wmark_pages(WatermarkLevel::High);
            let req = WatermarkRequest {
                order: 0,
                flags: AllocFlags::WMARK_MIN,
                highest_zoneidx: ZoneType::Movable,
            };
            if shared.zone_watermark_ok(req, mark) {
                shared.flags().set_below_high(false);
            }
        }
    }

    /// `nr_pcp_high()`: the effective high mark for this free, auto-tuning `self.high`:
    /// shrink while the zone is short of memory or kswapd reclaims it, grow while the CPU
    /// keeps freeing into a healthy zone.
    #[inline(always)]
    fn nr_pcp_high(&mut self, shared: &ZoneShared, free_high: bool) -> u64 {
        let batch = self.batch;
        self.high = kernel_clamp(self.high, self.high_min, self.high_max);
        let high = self.high;
        if high == 0 {
            return 0;
        }
        if free_high {
            self.high = high.saturating_sub(batch << PCP_BATCH_SCALE_MAX).max(self.high_min);
            return 0;
        }
        let flags = shared.flags();
        if flags.reclaim_active() {
            let fc = self.free_count.max(batch);
            self.high = high.saturating_sub(fc).max(self.high_min);
            return (batch << 2).min(self.high);
        }
        if self.high_min == self.high_max {
            return high;
        }
        if flags.below_high() {
            let fc = self.free_count.max(batch);
            self.high = high.saturating_sub(fc).max(self.high_min);
            return self.count.max(self.high_min);
        }
        if self.count >= high {
            let need = self.free_count + batch;
            if self.high < need {
                self.high = kernel_clamp(need, self.high_min, self.high_max);
            }
        }
        high
    }

    /// `nr_pcp_free()`: pages to free back once over `high`: at least a batch, at most what
    /// leaves a batch cached; a whole scaled batch for a run of high-order frees.
    fn nr_pcp_free(&self, high: u64, free_high: bool) -> u64 {
        let batch = self.batch;
        if free_high {
            return self.count.min(batch << PCP_BATCH_SCALE_MAX);
        }
        if high < batch {
            return 1;
        }
        self.free_count.max(batch).min(high - batch)
    }

    /// `free_pcppages_bulk()`'s list walk: take `count` pages' worth of blocks from the list
    /// tails (oldest first), starting with list `pindex` and going round, then hand them to
    /// `drain` in one call (one zone lock hold). What is loaded into the cache before `drain`
    /// takes the lock is `SpeedOnly::bulk_free`'s (see [`BulkFree`]).
    fn free_pcppages_bulk(
        &mut self,
        shared: &ZoneShared,
        count: u64,
        pindex: usize,
        mut drain: impl FnMut(&[(Pfn, u32)]),
    ) {
        let mut left = count.min(self.count) as i64;
        let mut buf = std::mem::take(&mut self.drain_buf);
        buf.clear();
        let start = shared.config().start_pfn;
        let mut p = (pindex + NR_PCP_LISTS - 1) % NR_PCP_LISTS;
        while left > 0 {
            // self.count > 0 here, so some list is non-empty and this loop ends.
            loop {
                p = (p + 1) % NR_PCP_LISTS;
                if !self.lists[p].is_empty() {
                    break;
                }
            }
            let order = self.pindex_to_order(p);
            while let Some(idx) = self.lists[p].pop_back() {
                left -= 1 << order;
                self.count -= 1 << order;
                buf.push((Pfn(start + idx as u64), order));
                if left <= 0 {
                    break;
                }
            }
        }
        // TwoPass: the kernel walks its lists through struct page before taking the lock, a
        // pointer chase; seed 001 prefetched the first `batch` buddies as the walk went.
        if self.bulk_free == BulkFree::TwoPass {
            with_pages!(shared.memmap(), mm => {
                let mut dep = 0;
                for (i, &(pfn, order)) in buf.iter().enumerate() {
                    let prefetch = self.buddy_prefetch && i < self.batch as usize;
                    dep = shared.pcp_walk_step(mm, pfn.0, order, prefetch, dep);
                }
            });
        }
        drain(&buf);
        self.drain_buf = buf;
    }

    /// `decay_pcp_high()`, run by the vmstat worker every second: lower an auto-tuned `high`
    /// by an eighth (never below `high_min`, never by more than a scaled batch below the
    /// cached count) and free what the CPU holds above it in one zone-lock hold. Returns
    /// whether more decay work remains.
    pub fn decay_high(&mut self, shared: &ZoneShared, drain: impl FnMut(&[(Pfn, u32)])) -> bool {
        let mut todo = false;
        if self.high > self.high_min {
            let by_count = self.count.saturating_sub(self.batch << PCP_BATCH_SCALE_MAX);
            self.high = by_count.max(self.high - (self.high >> 3)).max(self.high_min);
            todo |= self.high > self.high_min;
        }
        if self.count > self.high {
            self.free_pcppages_bulk(shared, self.count - self.high, 0, drain);
            todo = true;
        }
        self.publish(shared);
        todo
    }

    /// `drain_pages_zone()`: give every cached block back, a scaled batch per zone-lock hold.
    pub fn drain(&mut self, shared: &ZoneShared, mut drain: impl FnMut(&[(Pfn, u32)])) {
        while self.count > 0 {
            let n = self.count.min(self.batch << PCP_BATCH_SCALE_MAX);
            self.free_pcppages_bulk(shared, n, 0, &mut drain);
        }
        self.publish(shared);
    }
}

impl PerCpuPages {
    /// Check the lists against the memmap and the count; returns the pages cached.
    pub fn verify(&self, shared: &ZoneShared) -> Result<u64, VerifyError> {
        let mm = shared.memmap();
        let mut pages = 0;
        for (p, list) in self.lists.iter().enumerate() {
            let order = self.pindex_to_order(p);
            for &idx in list {
                let info = mm.info(idx);
                if info.state != PageState::Pcp || info.order != order {
                    let pfn = shared.config().start_pfn + idx as u64;
                    return Err(VerifyError::new(
                        Invariant::PcpEntry,
                        format!("CPU {} list {p} (order {order}) holds {pfn:#x} {info:?}", self.cpu),
                    ));
                }
                pages += 1 << order;
            }
        }
        let published = shared.counters().cpu(self.cpu).count();
        if pages != self.count || published != self.count {
            return Err(VerifyError::new(
                Invariant::PcpCount,
                format!(
                    "CPU {}: lists hold {pages} pages, count {}, published {published}",
                    self.cpu, self.count
                ),
            ));
        }
        Ok(pages)
    }
}

/// The kernel's `clamp(val, lo, hi)` (`__clamp` in `include/linux/minmax.h`): `hi` if `val`
/// reaches it, else at least `lo`. Unlike `Ord::clamp` it accepts `lo > hi`. That happens
/// here when the low watermark is above an eighth of the zone (`vm.min_free_kbytes` above
/// about a tenth of memory): `high_min` then exceeds `high_max`, and `high_max` wins
/// whenever `val` reaches it.
fn kernel_clamp(val: u64, lo: u64, hi: u64) -> u64 {
    if val >= hi {
        hi
    } else {
        val.max(lo)
    }
}

/// `calculate_normal_threshold()`: how far a CPU's vmstat delta may drift before it is folded
/// into the zone counter; grows with CPUs and memory, at most 125.
pub fn stat_threshold(nr_cpus: u32, managed_pages: u64) -> u32 {
    let fls = |x: u64| 64 - x.leading_zeros();
    let mem = managed_pages >> (27 - crate::types::PAGE_SHIFT);
    (2 * fls(nr_cpus as u64) * (1 + fls(mem))).min(125)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Sysctl, MIN_PERCPU_PAGELIST_HIGH_FRACTION};
    use crate::zone::pageset::{zone_batchsize, zone_highsize};

    /// `shared/reference/samples/zoneinfo.txt`, zone Normal: managed 327680, low 6265, 2 CPUs.
    #[test]
    fn reproduces_the_sample_pagesets() {
        let batch = zone_batchsize(327_680);
        assert_eq!(batch, 63);
        assert_eq!(zone_highsize(327_680, 6265, batch, 2, 0), 3132, "high_min");
        assert_eq!(
            zone_highsize(327_680, 6265, batch, 2, MIN_PERCPU_PAGELIST_HIGH_FRACTION),
            20480,
            "high_max"
        );
        assert_eq!(stat_threshold(2, 327_680), 20);
    }

    #[test]
    fn batch_sizes_of_small_zones() {
        assert_eq!(zone_batchsize(256 << 8), 15, "256 MiB");
        assert_eq!(zone_batchsize(64 << 8), 3, "64 MiB");
        assert_eq!(zone_batchsize(3840), 1, "16 MiB DMA");
    }

    /// Regression (found by the atomic-safety property test). `min_free_kbytes` is at a
    /// tenth of a 2 MiB zone, so `high_min` (the low watermark's share) exceeds `high_max`
    /// (an eighth of the zone's share). The kernel's `clamp()` accepts that; `Ord::clamp`
    /// panicked in the first refill.
    #[test]
    fn high_min_above_high_max_clamps_as_the_kernel_does() {
        let zone = crate::ZoneConfig {
            max_order: 2,
            pageblock_order: 2,
            nr_cpus: 1,
            ..crate::ZoneConfig::normal(512 * crate::types::PAGE_SIZE)
        };
        let policy = Policy::default().with_sysctl(Sysctl::MinFreeKbytes, 208).unwrap();
        let node = crate::Node::single_zone(zone, policy).unwrap();
        let l = node.shared().zone(0).pageset();
        assert!(l.high_min > l.high_max, "{l:?}");
        let pfn = node.alloc_pages(0, 0, crate::Gfp::ATOMIC).unwrap();
        let high = node.pcp(0, 0).high();
        assert!(high == u64::from(l.high_min) || high == u64::from(l.high_max), "{high} {l:?}");
        node.free_pages(0, pfn, 0).unwrap();
        node.verify().unwrap();
        assert_eq!(kernel_clamp(40, 20, 5), 5, "hi wins once reached");
        assert_eq!(kernel_clamp(3, 20, 5), 20, "else at least lo");
        assert_eq!(kernel_clamp(7, 5, 20), 7);
    }
}
