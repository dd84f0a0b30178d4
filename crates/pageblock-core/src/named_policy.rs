//! The named policies: what `--policy` accepts on every command that simulates, the tests'
//! list of what is shipped, and where each of pageblock's own policy switches is compared by
//! turning it off.

use crate::policy::{DefragModeFix, PageblockSwitch, Policy, SeedPatches, Switches, Sysctl};

/// A policy with a name (`vanilla`, `defrag_mode`, `pageblock`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedPolicy {
    /// Its name on the command line and in reports.
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// The switches.
    pub policy: Policy,
}

/// Every named policy, the kernel's first.
pub fn policies() -> Vec<NamedPolicy> {
    vec![
        NamedPolicy { name: "vanilla", about: "Linux 6.18 defaults", policy: Policy::default() },
        NamedPolicy {
            name: "defrag_mode",
            about:
                "vm.defrag_mode=1 (6.15+): no fallback into foreign pageblocks before reclaim and compaction",
            policy: defrag_mode(),
        },
        NamedPolicy {
            name: "defrag_mode_2026",
            about: "defrag_mode with the 2026 fixes: requests that cannot reclaim but may wake kswapd may fall back, non-movable requests reclaim and compact for a whole pageblock",
            policy: Policy { defrag_mode_fixes: Switches::all(), ..defrag_mode() },
        },
        pageblock_policy("pageblock", "pageblock's policy: defrag_mode_2026, kswapd works for whole free pageblocks without swapping, compaction runs only where it has targets", None),
        pageblock_policy("pageblock_swap", "pageblock without blocks_without_swap: kswapd swaps for whole pageblocks as defrag_mode does", Some(PageblockSwitch::BlocksWithoutSwap)),
        pageblock_policy("pageblock_no_wake", "pageblock without kswapd_wake_for_blocks: kswapd is woken only below the low watermark in free pages", Some(PageblockSwitch::KswapdWakeForBlocks)),
        pageblock_policy("pageblock_any_zone", "pageblock without kswapd_balance_node_blocks: one zone above its high mark balances the node", Some(PageblockSwitch::KswapdBalanceNodeBlocks)),
        pageblock_policy("pageblock_no_targets", "pageblock without compaction_suitable_targets: free pages anywhere make compaction suitable", Some(PageblockSwitch::CompactionSuitableTargets)),
        NamedPolicy {
            name: "no_rmqueue_mode_memory",
            about: "seed 003 off: every block of a bulk refill restarts the fallback search (6.15)",
            policy: Policy {
                seed_patches: SeedPatches { rmqueue_mode_memory: false, ..SeedPatches::default() },
                ..Policy::default()
            },
        },
    ]
}

/// The kernel's defaults with `vm.defrag_mode=1`.
fn defrag_mode() -> Policy {
    Policy::default().with_sysctl(Sysctl::DefragMode, 1).expect("vm.defrag_mode accepts 1")
}

/// `defrag_mode_2026` with every pageblock switch on but `without` (a variant compares one by
/// turning it off).
fn pageblock_policy(
    name: &'static str,
    about: &'static str,
    without: Option<PageblockSwitch>,
) -> NamedPolicy {
    let mut switches = Switches::all();
    if let Some(switch) = without {
        switches.set(switch, false);
    }
    let policy = Policy {
        defrag_mode_fixes: Switches::<DefragModeFix>::all(),
        pageblock_switches: switches,
        ..defrag_mode()
    };
    NamedPolicy { name, about, policy }
}

/// The policy called `name`.
pub fn policy_named(name: &str) -> Result<NamedPolicy, String> {
    let all = policies();
    let known: Vec<&str> = all.iter().map(|p| p.name).collect();
    all.into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("unknown policy `{name}`; known: {}", known.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The switches act only under `defrag_mode` ([`Policy`]'s gate): a named policy that
    /// set one without it would claim a switch that does nothing.
    #[test]
    fn every_policy_with_a_switch_is_under_defrag_mode() {
        for NamedPolicy { name, policy: p, .. } in policies() {
            let any = !p.defrag_mode_fixes.is_empty() || !p.pageblock_switches.is_empty();
            assert!(!any || p.sysctls.defrag_mode(), "{name} sets a switch without defrag_mode");
        }
    }
}
