//! The `vm.*` sysctls the allocator reads ([`Sysctls`]), each written the way its handler in
//! the kernel accepts a write: a value outside the handler's range is refused with a
//! [`SysctlError`] naming the sysctl, and the settings are left as they were.

use std::fmt;

/// `INT_MAX`: the ceiling of the kernel's integer sysctls.
const INT_MAX: u64 = i32::MAX as u64;

/// `MIN_PERCPU_PAGELIST_HIGH_FRACTION`: the smallest fraction `vm.percpu_pagelist_high_fraction`
/// accepts besides 0, and the fraction that sizes `high_max` when auto-tuning.
pub const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u32 = 8;

/// A sysctl under `/proc/sys/vm` that this model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sysctl {
    /// `vm.min_free_kbytes` (0..=INT_MAX).
    MinFreeKbytes,
    /// `vm.watermark_scale_factor` (1..=3000).
    WatermarkScaleFactor,
    /// `vm.watermark_boost_factor` (0..=INT_MAX).
    WatermarkBoostFactor,
    /// `vm.defrag_mode` (0 or 1).
    DefragMode,
    /// `vm.percpu_pagelist_high_fraction` (0, or 8..=INT_MAX).
    PercpuPagelistHighFraction,
    /// `vm.extfrag_threshold` (0..=1000).
    ExtfragThreshold,
    /// `vm.compaction_proactiveness` (0..=100).
    CompactionProactiveness,
    /// `vm.compact_unevictable_allowed` (0 or 1).
    CompactUnevictableAllowed,
}

impl Sysctl {
    /// Its name as `sysctl` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Sysctl::MinFreeKbytes => "vm.min_free_kbytes",
            Sysctl::WatermarkScaleFactor => "vm.watermark_scale_factor",
            Sysctl::WatermarkBoostFactor => "vm.watermark_boost_factor",
            Sysctl::DefragMode => "vm.defrag_mode",
            Sysctl::PercpuPagelistHighFraction => "vm.percpu_pagelist_high_fraction",
            Sysctl::ExtfragThreshold => "vm.extfrag_threshold",
            Sysctl::CompactionProactiveness => "vm.compaction_proactiveness",
            Sysctl::CompactUnevictableAllowed => "vm.compact_unevictable_allowed",
        }
    }

    /// The values its handler accepts, as the error says them.
    const fn accepts(self) -> &'static str {
        match self {
            Sysctl::MinFreeKbytes | Sysctl::WatermarkBoostFactor => "0..=INT_MAX",
            Sysctl::WatermarkScaleFactor => "1..=3000",
            Sysctl::DefragMode | Sysctl::CompactUnevictableAllowed => "0 or 1",
            Sysctl::PercpuPagelistHighFraction => "0 (auto) or 8..=INT_MAX",
            Sysctl::ExtfragThreshold => "0..=1000",
            Sysctl::CompactionProactiveness => "0..=100",
        }
    }

    /// Whether its handler accepts `value` (`proc_dointvec_minmax`'s bounds, and
    /// `percpu_pagelist_high_fraction_sysctl_handler`'s own check).
    fn accepts_value(self, value: u64) -> bool {
        match self {
            Sysctl::MinFreeKbytes | Sysctl::WatermarkBoostFactor => value <= INT_MAX,
            Sysctl::WatermarkScaleFactor => (1..=3000).contains(&value),
            Sysctl::DefragMode | Sysctl::CompactUnevictableAllowed => value <= 1,
            Sysctl::PercpuPagelistHighFraction => {
                value == 0 || (u64::from(MIN_PERCPU_PAGELIST_HIGH_FRACTION)..=INT_MAX).contains(&value)
            }
            Sysctl::ExtfragThreshold => value <= 1000,
            Sysctl::CompactionProactiveness => value <= 100,
        }
    }
}

/// A sysctl write the kernel's handler would refuse (`-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysctlError {
    /// The sysctl written.
    pub sysctl: Sysctl,
    /// The value refused.
    pub value: u64,
}

impl fmt::Display for SysctlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} is outside {}", self.sysctl.name(), self.value, self.sysctl.accepts())
    }
}

impl std::error::Error for SysctlError {}

/// The `vm.*` sysctls, at the kernel's defaults until written. Every value here is one the
/// kernel accepts: the only way to change one is [`Sysctls::write`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysctls {
    min_free_kbytes: Option<u64>,
    watermark_scale_factor: u32,
    watermark_boost_factor: u32,
    defrag_mode: bool,
    percpu_pagelist_high_fraction: u32,
    extfrag_threshold: u32,
    compaction_proactiveness: u32,
    compact_unevictable_allowed: bool,
}

impl Default for Sysctls {
    fn default() -> Self {
        Sysctls {
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            watermark_boost_factor: 15000,
            defrag_mode: false,
            percpu_pagelist_high_fraction: 0,
            extfrag_threshold: 500,
            compaction_proactiveness: 20,
            compact_unevictable_allowed: true,
        }
    }
}

impl Sysctls {
    /// Write `value` to `sysctl` as `sysctl -w` would: refused, nothing changes.
    pub fn write(&mut self, sysctl: Sysctl, value: u64) -> Result<(), SysctlError> {
        if !sysctl.accepts_value(value) {
            return Err(SysctlError { sysctl, value });
        }
        // In range, so each fits its field (INT_MAX fits u32).
        let int = value as u32;
        match sysctl {
            Sysctl::MinFreeKbytes => self.min_free_kbytes = Some(value),
            Sysctl::WatermarkScaleFactor => self.watermark_scale_factor = int,
            Sysctl::WatermarkBoostFactor => self.watermark_boost_factor = int,
            Sysctl::DefragMode => self.defrag_mode = value == 1,
            Sysctl::PercpuPagelistHighFraction => self.percpu_pagelist_high_fraction = int,
            Sysctl::ExtfragThreshold => self.extfrag_threshold = int,
            Sysctl::CompactionProactiveness => self.compaction_proactiveness = int,
            Sysctl::CompactUnevictableAllowed => self.compact_unevictable_allowed = value == 1,
        }
        Ok(())
    }

    /// `vm.min_free_kbytes` if written; `None` leaves the kernel's default for the node (with
    /// THP, khugepaged's recommendation).
    pub fn min_free_kbytes(&self) -> Option<u64> {
        self.min_free_kbytes
    }

    /// `vm.watermark_scale_factor` (default 10): the gap between watermarks in 1/10000 of
    /// the zone.
    pub fn watermark_scale_factor(&self) -> u32 {
        self.watermark_scale_factor
    }

    /// `vm.watermark_boost_factor` (default 15000; 0 disables boosting).
    pub fn watermark_boost_factor(&self) -> u32 {
        self.watermark_boost_factor
    }

    /// `vm.defrag_mode` (6.15+): never fall back into foreign pageblocks before reclaim and
    /// compaction have failed.
    pub fn defrag_mode(&self) -> bool {
        self.defrag_mode
    }

    /// `vm.percpu_pagelist_high_fraction`: 0 auto-tunes `high` between the low watermark and
    /// an eighth of the zone (shared among CPUs); N ≥ 8 fixes it at managed/N shared.
    pub fn percpu_pagelist_high_fraction(&self) -> u32 {
        self.percpu_pagelist_high_fraction
    }

    /// `vm.extfrag_threshold` (default 500): direct compaction for a costly order is not
    /// tried when the zone's fragmentation index is at or below it (the failure is then a
    /// lack of memory, which reclaim must fix, not fragmentation).
    pub fn extfrag_threshold(&self) -> u32 {
        self.extfrag_threshold
    }

    /// `vm.compaction_proactiveness` (default 20): how low kcompactd keeps the node's
    /// fragmentation score in the background; 0 turns proactive compaction off.
    pub fn compaction_proactiveness(&self) -> u32 {
        self.compaction_proactiveness
    }

    /// `vm.compact_unevictable_allowed` (default 1; 0 on PREEMPT_RT): compaction may isolate
    /// and move unevictable (mlocked) pages.
    pub fn compact_unevictable_allowed(&self) -> bool {
        self.compact_unevictable_allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write the kernel's handler refuses is a typed error naming the sysctl, and leaves
    /// every sysctl as it was.
    #[test]
    fn a_refused_write_names_the_sysctl_and_changes_nothing() {
        let refused: [(Sysctl, u64); 14] = [
            (Sysctl::MinFreeKbytes, 1 << 31),
            (Sysctl::WatermarkScaleFactor, 0),
            (Sysctl::WatermarkScaleFactor, 3001),
            (Sysctl::WatermarkBoostFactor, u64::from(u32::MAX)),
            (Sysctl::DefragMode, 2),
            (Sysctl::PercpuPagelistHighFraction, 1),
            (Sysctl::PercpuPagelistHighFraction, 7),
            (Sysctl::PercpuPagelistHighFraction, 1 << 31),
            (Sysctl::ExtfragThreshold, 1001),
            (Sysctl::CompactionProactiveness, 101),
            (Sysctl::CompactUnevictableAllowed, 2),
            (Sysctl::WatermarkScaleFactor, u64::MAX),
            (Sysctl::ExtfragThreshold, u64::from(u32::MAX) + 1),
            (Sysctl::CompactionProactiveness, u64::MAX),
        ];
        let mut written = Sysctls::default();
        written.write(Sysctl::MinFreeKbytes, 1024).unwrap();
        written.write(Sysctl::DefragMode, 1).unwrap();
        for (sysctl, value) in refused {
            let mut s = written.clone();
            assert_eq!(s.write(sysctl, value), Err(SysctlError { sysctl, value }));
            assert_eq!(s, written, "{} {value}: refused, nothing changed", sysctl.name());
        }
        let e = SysctlError { sysctl: Sysctl::WatermarkScaleFactor, value: 0 };
        assert_eq!(e.to_string(), "vm.watermark_scale_factor 0 is outside 1..=3000");
    }

    /// The bounds themselves are accepted, and each write lands in its own sysctl.
    #[test]
    fn writes_at_the_bounds_are_accepted() {
        let mut s = Sysctls::default();
        for (sysctl, value) in [
            (Sysctl::MinFreeKbytes, INT_MAX),
            (Sysctl::WatermarkScaleFactor, 3000),
            (Sysctl::WatermarkBoostFactor, 0),
            (Sysctl::DefragMode, 1),
            (Sysctl::PercpuPagelistHighFraction, 8),
            (Sysctl::ExtfragThreshold, 1000),
            (Sysctl::CompactionProactiveness, 0),
            (Sysctl::CompactUnevictableAllowed, 0),
        ] {
            s.write(sysctl, value).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(s.min_free_kbytes(), Some(INT_MAX));
        assert_eq!((s.watermark_scale_factor(), s.watermark_boost_factor()), (3000, 0));
        assert!(s.defrag_mode() && !s.compact_unevictable_allowed());
        assert_eq!(s.percpu_pagelist_high_fraction(), 8);
        assert_eq!((s.extfrag_threshold(), s.compaction_proactiveness()), (1000, 0));
    }
}
