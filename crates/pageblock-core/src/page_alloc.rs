//! The allocation path's entry points, written once for every driver ([`crate::NodeLocks`]):
//! `__alloc_pages` tries the fast path (`crate::fastpath`: `get_page_from_freelist`) and,
//! if that fails, the slow path (`crate::slowpath`: reclaim, compaction, retries). The free
//! path and the drains are the fast path's, re-exported here so a driver finds the whole
//! interface in one place.

use crate::fastpath::get_page_from_freelist;
pub use crate::free_pages::{
    drain_all_pages, drain_pages_zone, free_pages, free_pages_as, free_pages_batch, vmstat_update,
};
use crate::gfp::Gfp;
use crate::locks::NodeLocks;
use crate::node::NodeShared;
use crate::stats::VmEvent;
use crate::trace::TraceEvent;
use crate::types::Pfn;
use crate::zone::alloc::AllocError;

/// `__alloc_pages()`: a block of 2^`order` pages for a request with mask `gfp`, made on CPU
/// `cpu`.
#[inline(always)]
pub fn alloc_pages<L: NodeLocks + ?Sized>(
    l: &L,
    cpu: usize,
    order: u32,
    gfp: Gfp,
) -> Result<Pfn, AllocError> {
    let node = l.node();
    if order > node.max_order() {
        return Err(AllocError::OrderTooLarge { order, max_order: node.max_order() });
    }
    let ac = node.prepare_alloc_pages(gfp, order)?;
    let fast = node.alloc_flags_fast(&ac);
    let page = match get_page_from_freelist(l, cpu, &ac, fast) {
        Some(pfn) => Some(pfn),
        None => crate::slowpath::alloc_pages_slowpath(l, cpu, &ac),
    };
    node.trace().emit(cpu as u32, || TraceEvent::PageAlloc {
        pfn: page.map(|p| p.0),
        order,
        migratetype: ac.migratetype,
        gfp,
    });
    page.ok_or_else(|| alloc_failed(node, order))
}

#[cold]
fn alloc_failed(node: &NodeShared, order: u32) -> AllocError {
    node.count(VmEvent::PgAllocFail, 1);
    AllocError::NoMemory { order }
}
