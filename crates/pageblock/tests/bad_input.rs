//! Misuse of the library's entry points gets an error that says what is wrong, and changes
//! nothing (issue 20, low items): a mask that is not movable for a movable allocation, an
//! arena size no zone can index, a CPU slot that does not exist.

use pageblock::{AllocError, Allocator, ArenaError, Gfp, NoSuchCpu, Policy};

#[test]
fn a_movable_allocation_with_a_mask_that_is_not_movable_says_so() {
    let a = Allocator::with_arena_quiet(16 << 20, 1, Policy::default()).unwrap();
    for gfp in [Gfp::KERNEL, Gfp::RECLAIMABLE | Gfp::KERNEL, Gfp::ATOMIC] {
        let e = a.alloc_movable(0, gfp).unwrap_err();
        assert_eq!(e, AllocError::NotMovable(gfp));
        let text = e.to_string();
        assert!(text.contains("not movable") && text.contains("__GFP_MOVABLE"), "{text}");
        assert!(!text.contains("sets both"), "{text}");
    }
    assert_eq!(a.nr_free_pages(), a.managed_pages(), "nothing allocated");
}

#[test]
fn an_arena_no_zone_can_index_is_refused_by_its_size() {
    for bytes in [u64::MAX, u64::MAX - 4095, 1 << 44, 1 << 60] {
        let e = match Allocator::with_arena(bytes, Policy::default()) {
            Err(e) => e,
            Ok(_) => panic!("an arena of {bytes} bytes was built"),
        };
        assert!(matches!(e, ArenaError::TooLarge { bytes: b } if b == bytes), "{bytes}: {e:?}");
        let text = e.to_string();
        assert!(text.contains(&bytes.to_string()) && text.contains("too large"), "{text}");
    }
}

#[test]
fn a_cpu_slot_that_does_not_exist_is_an_error_not_a_panic() {
    let a = Allocator::with_arena_quiet(16 << 20, 2, Policy::default()).unwrap();
    let pfn = a.on_cpu(1).unwrap().alloc_pages(0, Gfp::KERNEL).unwrap();
    a.on_cpu(1).unwrap().free_pages(pfn, 0).unwrap();
    let cached = a.pcp_pages(1).unwrap();
    assert!(cached > 0, "CPU 1 caches pages");
    for cpu in [2, 9999, usize::MAX] {
        let e = NoSuchCpu { cpu, nr_cpus: 2 };
        assert_eq!(a.on_cpu(cpu).err(), Some(e));
        assert_eq!(a.pcp_pages(cpu), Err(e));
        assert_eq!(a.drain_pages(cpu), Err(e));
        assert_eq!(a.vmstat_update(cpu), Err(e));
        assert!(e.to_string().contains(&format!("CPU slot {cpu} does not exist")), "{e}");
    }
    assert_eq!(a.pcp_pages(1), Ok(cached), "nothing drained");
    a.vmstat_update(1).unwrap();
    a.drain_pages(1).unwrap();
    assert_eq!(a.pcp_pages(1), Ok(0));
    a.verify().unwrap();
}
