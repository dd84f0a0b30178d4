//! Migratetypes: how movable the pages of a pageblock are, and where an allocation may fall
//! back to when its own free lists are empty (`include/linux/mmzone.h`, `mm/page_alloc.c`
//! `fallbacks[]`).
//!
//! The enum order is ABI: it is the free-list index and the number printed in tracepoints.

/// The mobility class of a pageblock, a free list, or an allocation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MigrateType {
    /// Kernel memory that can neither move nor be reclaimed (`MIGRATE_UNMOVABLE`).
    Unmovable = 0,
    /// User and page-cache memory that compaction can migrate (`MIGRATE_MOVABLE`).
    Movable = 1,
    /// Caches that can be freed by shrinkers (`MIGRATE_RECLAIMABLE`).
    Reclaimable = 2,
    /// A reserve for high-order atomic allocations (`MIGRATE_HIGHATOMIC`).
    HighAtomic = 3,
    /// Contiguous-memory-allocator area: movable allocations only (`MIGRATE_CMA`).
    Cma = 4,
    /// Isolated for migration or offlining; never allocated from (`MIGRATE_ISOLATE`).
    Isolate = 5,
}

/// Number of migratetypes (`MIGRATE_TYPES` with CMA and memory isolation configured).
pub const MIGRATE_TYPES: usize = 6;
/// Types cached on per-CPU lists and grouped by mobility (`MIGRATE_PCPTYPES`).
pub const MIGRATE_PCPTYPES: usize = 3;

impl MigrateType {
    /// Every migratetype, in enum order.
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Cma,
        MigrateType::Isolate,
    ];

    /// The name `/proc/pagetypeinfo` prints (`migratetype_names[]`).
    pub const fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Cma => "CMA",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// The type with enum value `v`, if any.
    pub const fn from_index(v: usize) -> Option<MigrateType> {
        match v {
            0 => Some(MigrateType::Unmovable),
            1 => Some(MigrateType::Movable),
            2 => Some(MigrateType::Reclaimable),
            3 => Some(MigrateType::HighAtomic),
            4 => Some(MigrateType::Cma),
            5 => Some(MigrateType::Isolate),
            _ => None,
        }
    }

    /// Enum value as an index.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `migratetype_is_mergeable()`: free blocks of two *different* types may merge across a
    /// pageblock boundary only if both are one of the three mobility types.
    #[inline]
    pub const fn is_mergeable(self) -> bool {
        (self as usize) < MIGRATE_PCPTYPES
    }

    /// `is_migrate_movable()`: Movable or CMA.
    #[inline]
    pub const fn is_movable(self) -> bool {
        matches!(self, MigrateType::Movable | MigrateType::Cma)
    }

    /// The fallback order of a mobility type (`fallbacks[]`, unchanged since ~4.x): when its own
    /// lists are empty, an allocation looks at these types, first to last. HighAtomic, CMA and
    /// Isolate have no fallbacks and are never fallback targets.
    #[inline]
    pub const fn fallbacks(self) -> &'static [MigrateType] {
        match self {
            MigrateType::Unmovable => &[MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Movable => &[MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::Reclaimable => &[MigrateType::Unmovable, MigrateType::Movable],
            MigrateType::HighAtomic | MigrateType::Cma | MigrateType::Isolate => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_values_are_the_kernel_abi() {
        for (i, mt) in MigrateType::ALL.iter().enumerate() {
            assert_eq!(mt.index(), i);
            assert_eq!(MigrateType::from_index(i), Some(*mt));
        }
        assert_eq!(MigrateType::from_index(MIGRATE_TYPES), None);
        assert_eq!(MigrateType::HighAtomic.index(), MIGRATE_PCPTYPES);
    }

    #[test]
    fn fallback_table_never_targets_special_types() {
        for mt in MigrateType::ALL {
            for f in mt.fallbacks() {
                assert!(f.is_mergeable(), "{mt:?} falls back to {f:?}");
                assert_ne!(*f, mt);
            }
        }
        assert_eq!(MigrateType::Movable.fallbacks()[0], MigrateType::Reclaimable);
    }
}
