//! How the allocator behaves ([`Policy`]), by kind: the kernel's sysctls ([`Sysctls`], each
//! written as its handler accepts it), the kernel period where a behaviour changed between
//! releases ([`KernelPeriod`]), the build and boot facts ([`Boot`]), the seed patches'
//! switches ([`SeedPatches`]), the 2026 `defrag_mode` fixes ([`DefragModeFix`]) and
//! pageblock's own switches ([`PageblockSwitch`]) — both in force only under `defrag_mode`,
//! gated in one place — and, apart, the knobs that change speed only ([`SpeedOnly`]).
//!
//! Every value a `Policy` can hold is one the kernel would accept: there is nothing left to
//! validate when a node boots.

mod boot;
mod kernel_period;
mod seed_patches;
mod speed_only;
mod switches;
mod sysctls;

pub use boot::{Boot, PcpBatch};
pub use kernel_period::KernelPeriod;
pub use seed_patches::{FreeAreaLayout, SeedPatches};
pub use speed_only::{BulkFree, SpeedOnly};
pub use switches::{DefragModeFix, PageblockSwitch, Switch, Switches};
pub use sysctls::{Sysctl, SysctlError, Sysctls, MIN_PERCPU_PAGELIST_HIGH_FRACTION};

/// How the allocator behaves: Linux 6.18's by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The `vm.*` sysctls.
    pub sysctls: Sysctls,
    /// Whose reclaim rules: 6.18's (the default) or those of the kernel seed 004 measured.
    pub kernel: KernelPeriod,
    /// Build options and boot-time decisions.
    pub boot: Boot,
    /// The seed patches' switches that can change a result.
    pub seed_patches: SeedPatches,
    /// The 2026 `defrag_mode` fixes set; read through [`Policy::defrag_mode_fix`].
    pub defrag_mode_fixes: Switches<DefragModeFix>,
    /// pageblock's own switches set; read through [`Policy::pageblock_switch`].
    pub pageblock_switches: Switches<PageblockSwitch>,
    /// Knobs that change speed only, never a figure.
    pub speed_only: SpeedOnly,
}

impl Policy {
    /// This policy with `sysctl` written to `value`, or the write's error.
    pub fn with_sysctl(mut self, sysctl: Sysctl, value: u64) -> Result<Policy, SysctlError> {
        self.sysctls.write(sysctl, value)?;
        Ok(self)
    }

    /// Whether the 2026 `defrag_mode` fix `fix` is in force: set, and `defrag_mode` on.
    pub fn defrag_mode_fix(&self, fix: DefragModeFix) -> bool {
        self.under_defrag_mode(&self.defrag_mode_fixes, fix)
    }

    /// Whether pageblock's switch `switch` is in force: set, and `defrag_mode` on.
    pub fn pageblock_switch(&self, switch: PageblockSwitch) -> bool {
        self.under_defrag_mode(&self.pageblock_switches, switch)
    }

    /// The one gate of every switch that acts only under `defrag_mode`.
    fn under_defrag_mode<S: Switch>(&self, set: &Switches<S>, switch: S) -> bool {
        self.sysctls.defrag_mode() && set.is_set(switch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every switch of both kinds is in force exactly when it is set and `defrag_mode` is on.
    #[test]
    fn a_switch_is_in_force_only_under_defrag_mode() {
        let all = Policy {
            defrag_mode_fixes: Switches::all(),
            pageblock_switches: Switches::all(),
            ..Policy::default()
        };
        let on = all.clone().with_sysctl(Sysctl::DefragMode, 1).unwrap();
        for &fix in DefragModeFix::ALL {
            assert!(!all.defrag_mode_fix(fix) && on.defrag_mode_fix(fix), "{}", fix.name());
            let unset = Policy { defrag_mode_fixes: Switches::all().with(fix, false), ..on.clone() };
            assert!(!unset.defrag_mode_fix(fix), "{}", fix.name());
        }
        for &switch in PageblockSwitch::ALL {
            assert!(!all.pageblock_switch(switch) && on.pageblock_switch(switch), "{}", switch.name());
            let unset = Policy { pageblock_switches: Switches::all().with(switch, false), ..on.clone() };
            assert!(!unset.pageblock_switch(switch), "{}", switch.name());
        }
    }
}
