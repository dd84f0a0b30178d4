//! The public surface (issue 22): reports, counters and tracing answer through the
//! `Allocator` itself, without handing out a zone, the per-CPU lists or the memmap.

use pageblock::{Allocator, Gfp, Policy, VmEvent, ZoneConfig};
use pageblock_core::trace::RecordingSink;
use pageblock_core::TraceEvent;

#[test]
fn counters_and_reports_account_for_every_page() {
    let a =
        Allocator::single_zone(ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(64 << 20) }, Policy::default())
            .unwrap();
    let managed = a.managed_pages();
    assert_eq!(a.nr_free_pages(), managed);
    let held: Vec<_> = (0..10).map(|_| a.on_cpu(1).unwrap().alloc_pages(0, Gfp::KERNEL).unwrap()).collect();
    let cached = a.pcp_pages(1).unwrap();
    assert!(cached > 0, "the refill left pages on CPU 1's lists");
    assert_eq!(a.pcp_pages(0), Ok(0));
    assert_eq!(a.nr_free_pages() + cached + held.len() as u64, managed, "free + cached + held");
    assert_eq!(a.event(VmEvent::PgAlloc), held.len() as u64);
    let buddy_free: u64 = a.buddyinfo().zones[0].nr_free.iter().enumerate().map(|(o, n)| n << o).sum();
    assert_eq!(buddy_free, a.nr_free_pages(), "buddyinfo agrees with NR_FREE_PAGES");
    let pgalloc = a.vmstat().items.iter().find(|(n, _)| n == "pgalloc_normal").map(|&(_, v)| v);
    assert_eq!(pgalloc, Some(held.len() as u64));
    assert!(a.zoneinfo().render().contains(&format!("count:    {cached}")), "CPU 1's pageset is shown");
    for p in held {
        a.on_cpu(1).unwrap().free_pages(p, 0).unwrap();
    }
    a.drain_all_pages();
    assert_eq!(a.verify().unwrap().free, managed);
}

#[test]
fn a_trace_sink_sees_the_allocations_and_comes_back() {
    let a = Allocator::single_zone(ZoneConfig::normal(64 << 20), Policy::default()).unwrap();
    assert!(a.set_trace_sink(Some(Box::new(RecordingSink::default()))).is_none());
    let pfn = a.alloc_pages(2, Gfp::KERNEL).unwrap();
    let mut sink = a.set_trace_sink(None).expect("the sink installed above");
    let events = sink.as_any().downcast_mut::<RecordingSink>().unwrap().events();
    let allocated = events
        .iter()
        .any(|e| matches!(e, TraceEvent::PageAlloc { pfn: Some(p), order: 2, .. } if *p == pfn.0));
    assert!(allocated, "{events:?}");
    a.free_pages(pfn, 2).unwrap();
}
