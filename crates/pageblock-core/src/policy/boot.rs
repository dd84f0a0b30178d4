//! What the kernel's build and boot fix for a machine ([`Boot`]): a config option, whether
//! pages are grouped by mobility, the CPU cache the per-CPU lists are sized against, and the
//! per-CPU batch. Each is the kernel's by default; the lab may set one to see what it does.

use crate::config::{ConfigError, MAX_PCP_BATCH};

/// A per-CPU list batch, 1..=[`MAX_PCP_BATCH`] (0 would hang `drain_all_pages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpBatch(u32);

impl PcpBatch {
    /// A batch of `pages`, or [`ConfigError::PcpBatch`].
    pub fn new(pages: u32) -> Result<PcpBatch, ConfigError> {
        if pages == 0 || pages > MAX_PCP_BATCH {
            return Err(ConfigError::PcpBatch(pages));
        }
        Ok(PcpBatch(pages))
    }

    /// The batch in pages.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// Build options and boot-time decisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boot {
    /// CONFIG_ZONE_DMA32: ALLOC_NOFRAGMENT exists (it compiles to 0 without it).
    pub config_zone_dma32: bool,
    /// Group pages by mobility (`page_group_by_mobility_disabled == 0`). The kernel also
    /// disables grouping by itself on tiny machines; see
    /// [`crate::node::NodeShared::group_by_mobility`].
    pub group_by_mobility: bool,
    /// The per-CPU data-cache slice in bytes (`zone_pcp_update_cacheinfo`): a CPU whose slice
    /// holds more than three batches of pages keeps high-order frees cached
    /// (`PCPF_FREE_HIGH_BATCH`). Default 2 MiB, a common L2 slice per core.
    pub cpu_cache_bytes: u64,
    /// The per-CPU list batch; `None` computes `zone_batchsize()`.
    pub pcp_batch: Option<PcpBatch>,
}

impl Default for Boot {
    fn default() -> Self {
        Boot { config_zone_dma32: true, group_by_mobility: true, cpu_cache_bytes: 2 << 20, pcp_batch: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a batch of 0 hung `drain_all_pages`; `u32::MAX` aborted allocating a
    /// terabyte of refill buffer.
    #[test]
    fn a_batch_outside_the_range_is_refused() {
        assert_eq!(PcpBatch::new(0), Err(ConfigError::PcpBatch(0)));
        assert_eq!(PcpBatch::new(MAX_PCP_BATCH + 1), Err(ConfigError::PcpBatch(MAX_PCP_BATCH + 1)));
        assert_eq!(PcpBatch::new(u32::MAX), Err(ConfigError::PcpBatch(u32::MAX)));
        assert_eq!(PcpBatch::new(MAX_PCP_BATCH).map(PcpBatch::get), Ok(MAX_PCP_BATCH));
    }
}
