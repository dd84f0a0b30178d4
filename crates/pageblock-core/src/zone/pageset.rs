//! The per-CPU list sizes a zone hands its CPUs (`zone_set_pageset_high_and_batch`,
//! `zone_batchsize`, `zone_highsize`): fixed when the zone is built, read by [`crate::pcp`].

use crate::policy::{PcpBatch, Policy, MIN_PERCPU_PAGELIST_HIGH_FRACTION};

/// The per-CPU list sizes of a zone (`pcp->batch`, `high_min`, `high_max`), fixed when the
/// zone is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PagesetLimits {
    /// Blocks moved per refill or bulk free (before scaling).
    pub batch: u32,
    /// Lower bound of the auto-tuned high mark.
    pub high_min: u32,
    /// Upper bound of the auto-tuned high mark.
    pub high_max: u32,
}

impl PagesetLimits {
    /// `zone_set_pageset_high_and_batch()` for a zone of `managed` pages with low watermark
    /// `low_wmark` and `nr_cpus` CPUs, under `policy`.
    pub fn compute(managed: u64, low_wmark: u64, nr_cpus: u32, policy: &Policy) -> PagesetLimits {
        let batch = policy.boot.pcp_batch.map_or_else(|| zone_batchsize(managed), PcpBatch::get);
        let size = |fraction| zone_highsize(managed, low_wmark, batch, nr_cpus, fraction);
        match policy.sysctls.percpu_pagelist_high_fraction() {
            0 => {
                PagesetLimits { batch, high_min: size(0), high_max: size(MIN_PERCPU_PAGELIST_HIGH_FRACTION) }
            }
            f => PagesetLimits { batch, high_min: size(f), high_max: size(f) },
        }
    }
}

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
pub fn zone_highsize(managed_pages: u64, low_wmark: u64, batch: u32, nr_cpus: u32, fraction: u32) -> u32 {
    let total = if fraction == 0 { low_wmark } else { managed_pages / fraction as u64 };
    let high = total / nr_cpus.max(1) as u64;
    high.max(batch as u64 * 4).min(i32::MAX as u64) as u32
}
