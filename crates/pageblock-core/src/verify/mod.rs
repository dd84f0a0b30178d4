//! `verify()`: the whole-structure invariant checker, over either driver.
//!
//! Each zone checks its own structures ([`Zone::verify`], in `crate::zone::verify`); the node
//! check adds that the per-CPU pages each zone's memmap records are exactly what the CPUs'
//! lists hold. Each check corresponds to an invariant written down in [`crate::zone`],
//! `crate::list` or [`crate::memmap`], and a failure names it ([`Invariant`]); `tests`
//! corrupts each in turn. The thread-safe library's `verify` adds what only it knows: its
//! movable handles against the memmap's handle tags ([`crate::memmap::AllocTag::handle`]).
//!
//! [`Zone::verify`]: crate::zone::Zone::verify

#[cfg(test)]
mod tests;

use crate::invariant::{ensure, Invariant, VerifyError};
use crate::locks::NodeLocks;
use crate::zone::verify::PageCensus;

/// Verify every zone of a node, driven by either driver: each zone's structures, and that
/// the per-CPU pages its memmap records are exactly what the CPUs' lists hold. Each CPU's
/// lock is taken before the zone lock, in the documented order. Meant for a quiescent node.
pub fn verify_node<L: NodeLocks + ?Sized>(l: &L) -> Result<PageCensus, VerifyError> {
    let node = l.node();
    let mut total = PageCensus::default();
    for z in 0..node.zones().len() {
        let mut cached = 0;
        for cpu in 0..node.nr_cpus() {
            cached += l.lock_pcp(cpu, z).verify(node.zone(z))?;
        }
        let census = l.lock_zone(z).verify()?;
        ensure!(
            census.pcp == cached,
            Invariant::PcpTotal,
            "zone {}: {} pages are per-CPU in the memmap, the lists hold {cached}",
            node.zone(z).config().zone_type.name(),
            census.pcp
        );
        total = total + census;
    }
    Ok(total)
}
