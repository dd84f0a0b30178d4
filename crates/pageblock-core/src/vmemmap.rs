//! The memmap's backing store, the analogue of the kernel's vmemmap.
//!
//! x86_64 maps `struct page` arrays with PMD-sized pages (`vmemmap_populate_hugepages`), so a
//! random record access costs a cache miss but never a TLB miss as well. A boxed slice from
//! the global allocator gets 4 KiB pages under the common `transparent_hugepage=madvise`
//! setting: a 4 GiB zone's 12 MiB memmap then spans 3072 pages, more than the second-level
//! TLB holds, and a random-order bulk free paid a page walk per record (measured: about 15%
//! of its time). [`VmemmapWords`] is one allocation aligned to 2 MiB and advised with
//! `MADV_HUGEPAGE` before its first touch, so the kernel can back it with huge pages.
//!
//! # Invariants
//!
//! * `ptr` points to `len` initialised `AtomicU32`s allocated with `layout` (or is dangling
//!   when `len == 0`), owned by this value alone and freed with that same layout.

use std::alloc::Layout;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;

/// A PMD on x86_64: the alignment a large store gets, so that whole huge pages fit in it.
const HUGE_ALIGN: usize = 2 << 20;

/// A fixed-length array of atomic words in huge-page-friendly memory.
pub struct VmemmapWords {
    ptr: NonNull<AtomicU32>,
    len: usize,
    layout: Layout,
}

// SAFETY: the store owns its words exclusively (like a `Box<[AtomicU32]>`), and shared access
// goes through `&[AtomicU32]`, which is `Sync`.
#[allow(unsafe_code)]
unsafe impl Send for VmemmapWords {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for VmemmapWords {}

impl VmemmapWords {
    /// `len` words, word `i` set to `init(i)`. Stores of 2 MiB or more are aligned to 2 MiB
    /// and advised for transparent huge pages before anything is written; smaller ones are
    /// aligned to a cache line. Aborts like `Box::new` if memory is exhausted.
    #[allow(unsafe_code)]
    pub fn new(len: usize, init: impl Fn(usize) -> u32) -> VmemmapWords {
        let bytes = len.checked_mul(std::mem::size_of::<AtomicU32>()).expect("memmap size overflows");
        let align = if bytes >= HUGE_ALIGN { HUGE_ALIGN } else { 64 };
        let layout = Layout::from_size_align(bytes, align).expect("memmap layout");
        if len == 0 {
            return VmemmapWords { ptr: NonNull::dangling(), len, layout };
        }
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<AtomicU32>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        if align == HUGE_ALIGN {
            advise_huge(raw, bytes);
        }
        for i in 0..len {
            // SAFETY: `i < len`, inside the allocation; the word is written before any read.
            unsafe { ptr.as_ptr().add(i).write(AtomicU32::new(init(i))) };
        }
        VmemmapWords { ptr, len, layout }
    }
}

/// `madvise(MADV_HUGEPAGE)` on memory nothing has touched yet. Only advice: if the kernel
/// refuses (THP disabled, an old kernel), the memory works the same with small pages.
#[allow(unsafe_code)]
fn advise_huge(raw: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `raw..raw+bytes` is an allocation this store owns, aligned to 2 MiB (so to a
    // page); MADV_HUGEPAGE changes only how future faults are backed, never the contents.
    unsafe {
        libc::madvise(raw.cast(), bytes, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (raw, bytes);
}

impl Deref for VmemmapWords {
    type Target = [AtomicU32];

    #[inline]
    #[allow(unsafe_code)]
    fn deref(&self) -> &[AtomicU32] {
        // SAFETY: by the invariant, `ptr` holds `len` initialised words (or is dangling and
        // well aligned with `len == 0`) that live as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for VmemmapWords {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `new` with exactly `self.layout`; `AtomicU32` needs no drop.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), self.layout) };
        }
    }
}

impl std::fmt::Debug for VmemmapWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VmemmapWords({} words)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn words_are_initialised_and_large_stores_are_aligned_to_a_pmd() {
        let small = VmemmapWords::new(100, |i| i as u32);
        assert_eq!(small.len(), 100);
        assert_eq!(small[99].load(Relaxed), 99);
        assert_eq!(small.as_ptr() as usize % 64, 0);
        let large = VmemmapWords::new(1 << 20, |_| 7);
        assert_eq!(large.as_ptr() as usize % HUGE_ALIGN, 0);
        assert!(large.iter().all(|w| w.load(Relaxed) == 7));
        assert!(VmemmapWords::new(0, |_| 0).is_empty());
    }
}
