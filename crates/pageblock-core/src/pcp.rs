//! Per-CPU page list sizing (`zone_batchsize`, `zone_highsize`) and the per-CPU vmstat
//! threshold (`calculate_normal_threshold`): how the kernel sizes the caches that
//! `/proc/zoneinfo` reports under `pagesets`.

/// `zone_batchsize()`: pages moved between the zone and a per-CPU list in one lock hold.
/// One page per 16 MiB of zone, at most 256 KiB, then scaled by 1.5 and rounded down to
/// `2^n - 1` (odd batch sizes avoid cache-colouring aliasing between CPUs). 63 for any zone
/// of 1 GiB or more.
pub fn zone_batchsize(managed_pages: u64) -> u32 {
    let b = (managed_pages >> 12).min(256 * 1024 / crate::types::PAGE_SIZE);
    if b <= 1 {
        return 1;
    }
    let b = b + b / 2;
    ((1u64 << (63 - b.leading_zeros())) - 1) as u32
}

/// `zone_highsize()`: the most pages a per-CPU list may hold before freeing a batch back.
/// With `fraction == 0` (the default `vm.percpu_pagelist_high_fraction`) the zone's low
/// watermark is shared among the node's CPUs; otherwise `managed / fraction` is. Never less
/// than four batches.
pub fn zone_highsize(
    managed_pages: u64,
    low_wmark: u64,
    batch: u32,
    nr_cpus: u32,
    fraction: u32,
) -> u32 {
    let total = if fraction == 0 {
        low_wmark
    } else {
        managed_pages / fraction as u64
    };
    let high = total / nr_cpus.max(1) as u64;
    high.max(batch as u64 * 4).min(i32::MAX as u64) as u32
}

/// `MIN_PERCPU_PAGELIST_HIGH_FRACTION`: the fraction that sizes `high_max` when auto-tuning.
pub const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u32 = 8;

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
}
