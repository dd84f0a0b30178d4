//! The zone's side of onlining memory (`online_pages` → `generic_online_page`): offline
//! pages of the zone become managed, freed to the buddy lists in the largest aligned blocks.
//! The node's recomputation afterwards is [`crate::memory_hotplug::online_pages`]'s.

use std::fmt;

use crate::trace::TraceEvent;
use crate::zone::Zone;

/// Why pages could not be onlined. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlineError {
    /// Some page of the range is not offline memory of one zone.
    NotOffline {
        /// The first pfn of the range.
        pfn: u64,
        /// Pages asked for.
        nr_pages: u64,
    },
}

impl fmt::Display for OnlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnlineError::NotOffline { pfn, nr_pages } => {
                write!(f, "{nr_pages} pages from {pfn:#x} are not all offline memory of one zone")
            }
        }
    }
}

impl std::error::Error for OnlineError {}

impl Zone {
    /// True if every page of `[pfn, pfn + nr_pages)` is offline memory of this zone.
    pub fn is_offline(&self, pfn: u64, nr_pages: u64) -> bool {
        let end = pfn.saturating_add(nr_pages);
        nr_pages > 0
            && self.contains(pfn)
            && end <= self.end_pfn()
            && (pfn..end).all(|p| self.shared.page_offline(p))
    }

    /// Online `nr_pages` offline pages from `pfn`: free them to the buddy lists and count
    /// them as managed. The node's recomputation is [`online_pages`]'s.
    pub(crate) fn online_range(&mut self, pfn: u64, nr_pages: u64) -> Result<(), OnlineError> {
        if !self.is_offline(pfn, nr_pages) {
            return Err(OnlineError::NotOffline { pfn, nr_pages });
        }
        for p in pfn..pfn + nr_pages {
            self.shared.memmap.clear(self.idx(p));
        }
        for (p, order) in self.free_range_to_buddy(pfn, pfn + nr_pages) {
            self.emit(|| TraceEvent::PageFree { pfn: p, order });
        }
        self.shared.add_managed(nr_pages);
        Ok(())
    }
}
