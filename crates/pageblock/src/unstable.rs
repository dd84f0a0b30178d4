//! The `unstable-internals` feature: the node's internals, for this crate's own tests (a
//! test that reads the memmap, holds a zone lock, or drives the allocation path through its
//! own `NodeLocks` wrapper). **No stability, and they can corrupt the allocator**: a zone or
//! the driver handed out here has every mutating method of `pageblock-core`, which trusts its
//! caller. The methods are hidden from the documentation; nothing but tests enables the
//! feature (the crate's dev-dependency on itself).

use pageblock_core::{NodeLocks, NodeShared, Zone};

use crate::pgdat::Pgdat;
use crate::Allocator;

impl Allocator {
    /// Unstable, can corrupt: the node's lock-free half (counters, pageblock bits, memmaps).
    #[doc(hidden)]
    pub fn shared(&self) -> &NodeShared {
        self.pgdat.node()
    }

    /// Unstable, can corrupt: the node as the allocation path sees it (a [`NodeLocks`]
    /// driver).
    #[doc(hidden)]
    pub fn pgdat(&self) -> &Pgdat {
        &self.pgdat
    }

    /// Unstable, can corrupt: run `f` on zone `zone` with its lock held.
    #[doc(hidden)]
    pub fn with_zone<R>(&self, zone: usize, f: impl FnOnce(&mut Zone) -> R) -> R {
        f(&mut self.pgdat.lock_zone(zone))
    }
}
