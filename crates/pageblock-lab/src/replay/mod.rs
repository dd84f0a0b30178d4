//! Replaying a real kernel's page-allocator trace against the simulator, under one or more
//! policies, side by side — "what would this policy have done on my workload?" — and, for
//! the kernel's own policy, how far the simulation is from what the kernel really did.
//!
//! ```text
//! load      the trace into 32-byte records (once), its own event counts, the snapshots
//! machine   the recorded machine's zones and CPUs, booted in the trace's starting state
//! engine    the trace's requests through the one allocation path, per policy
//! series    huge-page availability over time
//! fidelity  the simulation's kernel events and end state next to the real ones
//! ```

pub mod engine;
pub mod facts;
pub mod fidelity;
pub mod load;
pub mod machine;
pub mod pfnmap;
pub mod pfntable;
pub mod report;
pub mod series;
pub mod snapshot;
pub mod start;

use std::path::Path;
use std::time::Instant;

use pageblock_core::{show, Policy};

pub use report::{PolicyResult, ReplayReport};

/// A policy a replay can run under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedPolicy {
    /// Its name on the command line and in reports.
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// The switches.
    pub policy: Policy,
}

/// The policies `--policy` knows.
pub fn policies() -> Vec<NamedPolicy> {
    vec![
        NamedPolicy { name: "vanilla", about: "Linux 6.18 defaults", policy: Policy::default() },
        NamedPolicy {
            name: "defrag_mode",
            about:
                "vm.defrag_mode=1 (6.15+): no fallback into foreign pageblocks before reclaim and compaction",
            policy: Policy { defrag_mode: true, ..Policy::default() },
        },
        NamedPolicy {
            name: "defrag_mode_2026",
            about: "defrag_mode with the 2026 fixes: atomic requests may fall back, non-movable requests get pageblock compaction, retries follow the promoted order",
            policy: Policy {
                defrag_mode: true,
                defrag_mode_atomic_fallback: true,
                defrag_mode_pageblock_compaction: true,
                defrag_mode_promoted_retry: true,
                ..Policy::default()
            },
        },
        pageblock_policy("pageblock", "pageblock's policy: defrag_mode_2026, kswapd works for whole free pageblocks without swapping, compaction runs only where it has targets", |_| {}),
        pageblock_policy("pageblock_swap", "pageblock without blocks_without_swap: kswapd swaps for whole pageblocks as defrag_mode does", |p| {
            p.blocks_without_swap = false;
        }),
        pageblock_policy("pageblock_no_wake", "pageblock without kswapd_wake_for_blocks: kswapd is woken only below the low watermark in free pages", |p| {
            p.kswapd_wake_for_blocks = false;
        }),
        pageblock_policy("pageblock_any_zone", "pageblock without kswapd_balance_node_blocks: one zone above its high mark balances the node", |p| {
            p.kswapd_balance_node_blocks = false;
        }),
        pageblock_policy("pageblock_no_targets", "pageblock without compaction_suitable_targets: free pages anywhere make compaction suitable", |p| {
            p.compaction_suitable_targets = false;
        }),
        NamedPolicy {
            name: "no_rmqueue_mode_memory",
            about: "seed 003 off: every block of a bulk refill restarts the fallback search (6.15)",
            policy: Policy { rmqueue_mode_memory: false, ..Policy::default() },
        },
    ]
}

/// `defrag_mode_2026` with every pageblock switch on, then `tweak` (a variant turns one off).
fn pageblock_policy(name: &'static str, about: &'static str, tweak: impl FnOnce(&mut Policy)) -> NamedPolicy {
    let mut policy = Policy {
        defrag_mode: true,
        defrag_mode_atomic_fallback: true,
        defrag_mode_pageblock_compaction: true,
        defrag_mode_promoted_retry: true,
        blocks_without_swap: true,
        kswapd_wake_for_blocks: true,
        kswapd_balance_node_blocks: true,
        compaction_suitable_targets: true,
        ..Policy::default()
    };
    tweak(&mut policy);
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

/// Where a replay is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage<'a> {
    /// Reading the trace: bytes of the file read so far, of `total`.
    Loading {
        /// Bytes read.
        bytes: u64,
        /// The file's size.
        total: Option<u64>,
    },
    /// Replaying under a policy: records done of `total`.
    Replaying {
        /// The policy.
        policy: &'a str,
        /// Records replayed.
        done: u64,
        /// Records in the trace.
        total: u64,
    },
}

/// Replay the trace at `path` under each of `policies`, in order.
pub fn run(
    path: &Path,
    policies: &[NamedPolicy],
    skip_bad: bool,
    progress: &mut dyn FnMut(Stage<'_>),
) -> Result<ReplayReport, String> {
    let started = Instant::now();
    let trace = load::load(path, skip_bad, &mut |bytes, total| progress(Stage::Loading { bytes, total }))?;
    let config = machine::node_config(&trace)?;
    let mut results = Vec::new();
    let mut start_report = None;
    let mut fidelity = None;
    for p in policies {
        let (node, start) = machine::boot(&trace, &config, &p.policy)?;
        start_report.get_or_insert(start);
        let mixed_start = mixed_pageblocks(node.shared());
        let records = trace.records.len() as u64;
        let done = engine::replay(&trace, node, &mut |done| {
            progress(Stage::Replaying { policy: p.name, done, total: records })
        });
        // A replay that breaks an invariant is a bug in the allocator or the replay.
        done.node.verify().map_err(|e| format!("{}: after the replay: {e}", p.name))?;
        results.push(PolicyResult::new(
            p.name,
            &done,
            mixed_start,
            mixed_pageblocks(done.node.shared()),
            records,
        ));
        // The kernel's own policy is the one whose distance to the kernel means something.
        if p.name == "vanilla" && trace.snapshots.after_buddyinfo.is_some() {
            fidelity = Some(fidelity::table(&trace, &done));
        }
    }
    let start = start_report.unwrap_or_default();
    Ok(ReplayReport::new(&trace, start, results, fidelity, started.elapsed().as_secs_f64()))
}

/// Pageblocks page_owner would call mixed, over every zone.
fn mixed_pageblocks(node: &pageblock_core::NodeShared) -> u64 {
    node.zones().iter().map(|z| show::mixed_block_counts(z).iter().sum::<u64>()).sum()
}
