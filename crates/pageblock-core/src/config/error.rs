//! A machine the model cannot build ([`ConfigError`]).

use std::fmt;

use super::{ZoneType, MAX_CPUS, MAX_PCP_BATCH, MAX_STRUCT_PAGE_BYTES, MIN_STRUCT_PAGE_BYTES};
use crate::types::MAX_ORDER_LIMIT;

/// A rejected configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `max_order` above the supported limit.
    MaxOrder(u32),
    /// `pageblock_order` above `max_order`.
    PageblockOrder {
        /// The requested pageblock order.
        pageblock_order: u32,
        /// The zone's max order.
        max_order: u32,
    },
    /// A zone without managed pages.
    Empty,
    /// More pages than the memmap can index, or pfns past the physical address space.
    TooLarge(u64),
    /// A zone whose span, present and managed pages do not nest.
    Span(ZoneType),
    /// A node without zones.
    NoZones,
    /// Zones out of order or overlapping.
    ZoneOrder(ZoneType),
    /// A zone whose node-wide settings differ from the first zone's.
    MixedZones(ZoneType),
    /// A CMA area without CONFIG_CMA.
    CmaWithoutConfig,
    /// A CMA area that is not whole pageblocks or takes more than half the zone.
    CmaArea(u64),
    /// CPU count out of range.
    Cpus(u32),
    /// A per-CPU batch of 0 or above [`MAX_PCP_BATCH`] ([`crate::policy::PcpBatch`]).
    PcpBatch(u32),
    /// A memmap record size that is not a multiple of 4 in 12..=256 bytes.
    StructPageBytes(u32),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MaxOrder(o) => write!(f, "max order {o} exceeds the limit {MAX_ORDER_LIMIT}"),
            ConfigError::PageblockOrder { pageblock_order, max_order } => {
                write!(f, "pageblock order {pageblock_order} exceeds max order {max_order}")
            }
            ConfigError::Empty => write!(f, "a zone needs at least one managed page"),
            ConfigError::TooLarge(n) => {
                write!(f, "{n} pages is more than a zone can index (< 2^32 pages, pfns < 2^40)")
            }
            ConfigError::Span(t) => write!(
                f,
                "zone {}: managed pages must lie inside the span, and managed <= present <= spanned",
                t.name()
            ),
            ConfigError::NoZones => write!(f, "a node needs at least one zone"),
            ConfigError::ZoneOrder(t) => {
                write!(f, "zone {}: zones must be in zone order and must not overlap", t.name())
            }
            ConfigError::MixedZones(t) => write!(
                f,
                "zone {}: node, CPUs, orders, THP and CMA settings must be the same in every zone",
                t.name()
            ),
            ConfigError::CmaWithoutConfig => write!(f, "a CMA area needs config_cma"),
            ConfigError::CmaArea(n) => {
                write!(f, "CMA area of {n} pages must be whole pageblocks and at most half the zone")
            }
            ConfigError::Cpus(n) => write!(f, "{n} CPUs is outside 1..={MAX_CPUS}"),
            ConfigError::PcpBatch(n) => {
                write!(f, "a per-CPU batch of {n} is outside 1..={MAX_PCP_BATCH}")
            }
            ConfigError::StructPageBytes(n) => write!(
                f,
                "struct_page_bytes {n} must be a multiple of 4 from {MIN_STRUCT_PAGE_BYTES} to {MAX_STRUCT_PAGE_BYTES}"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
