//! What concurrency must never break: reports while the zone lock is held elsewhere, and
//! races on the same block.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use pageblock::{Allocator, FreeError, Gfp, Pfn, Policy, ZoneConfig};

/// A monitor reading /proc/pagetypeinfo (from counts) and the counters must not wait for
/// the zone lock: here another thread holds it for the whole read.
#[test]
fn pagetypeinfo_from_counts_does_not_wait_for_the_zone_lock() {
    let a = Arc::new(Allocator::single_zone(ZoneConfig::normal(256 << 20), Policy::default()).unwrap());
    let (done_tx, done_rx) = mpsc::channel();
    let reader = Arc::clone(&a);
    a.with_zone(0, |_zone_locked| {
        std::thread::spawn(move || {
            let text = reader.pagetypeinfo().render();
            let free = reader.shared().nr_free_pages();
            done_tx.send((text, free)).unwrap();
        });
        // The lock stays held until the reader reports back, or for at most 10 s.
        let (text, free) =
            done_rx.recv_timeout(Duration::from_secs(10)).expect("the reader was blocked by the zone lock");
        assert!(text.starts_with("Page block order: 9\n"));
        assert_eq!(free, 65536);
    });
}

/// Two threads free the same block at the same moment, again and again: exactly one wins
/// each time, the other is refused, and nothing is corrupted. The loser sees `DoubleFree`,
/// or `NotAllocated` when the winner's free already went on to the buddy lists and merged
/// the block (its pfn then heads nothing).
#[test]
fn racing_double_frees_have_exactly_one_winner() {
    let a = Arc::new(
        Allocator::single_zone(ZoneConfig { nr_cpus: 2, ..ZoneConfig::normal(64 << 20) }, Policy::default())
            .unwrap(),
    );
    let block = Arc::new(AtomicU64::new(0));
    let (wins, losses) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let start = Arc::new(Barrier::new(3));
    let end = Arc::new(Barrier::new(3));
    let rounds = 20_000u32;
    let freers: Vec<_> = (0..2)
        .map(|cpu| {
            let (a, block, wins, losses) =
                (Arc::clone(&a), Arc::clone(&block), Arc::clone(&wins), Arc::clone(&losses));
            let (start, end) = (Arc::clone(&start), Arc::clone(&end));
            std::thread::spawn(move || {
                for round in 0..rounds {
                    start.wait();
                    let pfn = Pfn(block.load(Ordering::Acquire));
                    // Never panic between the barriers: the other threads would wait forever.
                    match a.on_cpu(cpu).unwrap().free_pages(pfn, round % 4) {
                        Ok(()) => wins.fetch_add(1, Ordering::Relaxed),
                        Err(FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. }) => {
                            losses.fetch_add(1, Ordering::Relaxed)
                        }
                        Err(_) => 0,
                    };
                    end.wait();
                }
            })
        })
        .collect();
    for round in 0..rounds {
        let pfn = a.alloc_pages(round % 4, Gfp::KERNEL).unwrap();
        block.store(pfn.0, Ordering::Release);
        start.wait();
        end.wait();
        assert_eq!(wins.load(Ordering::Relaxed), round + 1, "round {round}: one winner");
        assert_eq!(losses.load(Ordering::Relaxed), round + 1, "round {round}: one loser");
    }
    for f in freers {
        f.join().unwrap();
    }
    a.drain_all_pages();
    let census = a.verify().unwrap();
    assert_eq!(census.allocated, 0);
}
