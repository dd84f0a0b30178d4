//! The memmap's backing store, the analogue of the kernel's vmemmap.
//!
//! x86_64 maps `struct page` arrays with PMD-sized pages (`vmemmap_populate_hugepages`), so a
//! random record access costs a cache miss but never a TLB miss as well. A boxed slice from
//! the global allocator gets 4 KiB pages under the common `transparent_hugepage=madvise`
//! setting: a 4 GiB zone's 12 MiB memmap then spans 3072 pages, more than the second-level
//! TLB holds, and a random-order bulk free paid a page walk per record (measured: about 15%
//! of its time). A [`VmemmapArray`] is one allocation aligned to 2 MiB and advised with
//! `MADV_HUGEPAGE` before its first touch, so the kernel can back it with huge pages.
//!
//! # Invariants
//!
//! * `ptr` points to `len` initialised `T`s allocated with `layout` (or is dangling when
//!   `len == 0`), owned by this value alone and freed with that same layout.

use std::alloc::Layout;
use std::ops::Deref;
use std::ptr::NonNull;

/// A PMD on x86_64: the alignment a large store gets, so that whole huge pages fit in it.
const HUGE_ALIGN: usize = 2 << 20;

/// A fixed-length array (of atomics, in practice) in huge-page-friendly memory: a
/// `Box<[T]>` with a different home.
pub struct VmemmapArray<T> {
    ptr: NonNull<T>,
    len: usize,
    layout: Layout,
}

// SAFETY: the array owns its elements exclusively, like a `Box<[T]>`.
#[allow(unsafe_code)]
unsafe impl<T: Send> Send for VmemmapArray<T> {}
// SAFETY: shared access goes through `&[T]`, which is `Sync` when `T` is.
#[allow(unsafe_code)]
unsafe impl<T: Sync> Sync for VmemmapArray<T> {}

impl<T> VmemmapArray<T> {
    /// `len` elements, element `i` set to `init(i)`. Arrays of 2 MiB or more are aligned to
    /// 2 MiB and advised for transparent huge pages before anything is written; smaller ones
    /// are aligned to a cache line. Aborts like `Box::new` if memory is exhausted.
    #[allow(unsafe_code)]
    pub fn new(len: usize, init: impl Fn(usize) -> T) -> VmemmapArray<T> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).expect("memmap size overflows");
        let align = if bytes >= HUGE_ALIGN { HUGE_ALIGN } else { 64.max(std::mem::align_of::<T>()) };
        let layout = Layout::from_size_align(bytes, align).expect("memmap layout");
        if bytes == 0 {
            return VmemmapArray { ptr: NonNull::dangling(), len, layout };
        }
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else { std::alloc::handle_alloc_error(layout) };
        if align == HUGE_ALIGN {
            advise_huge(raw, bytes);
        }
        for i in 0..len {
            // SAFETY: `i < len`, inside the allocation; the element is written before any
            // read. (If `init` panics, the elements written so far leak with the memory.)
            unsafe { ptr.as_ptr().add(i).write(init(i)) };
        }
        VmemmapArray { ptr, len, layout }
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

impl<T> Deref for VmemmapArray<T> {
    type Target = [T];

    #[inline]
    #[allow(unsafe_code)]
    fn deref(&self) -> &[T] {
        // SAFETY: by the invariant, `ptr` holds `len` initialised elements (or is dangling
        // and well aligned with no bytes behind it) that live as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for VmemmapArray<T> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the elements are initialised and dropped once, here; the memory was
        // allocated in `new` with exactly `self.layout` (nothing was allocated for 0 bytes).
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len));
            if self.layout.size() > 0 {
                std::alloc::dealloc(self.ptr.as_ptr().cast(), self.layout);
            }
        }
    }
}

impl<T> std::fmt::Debug for VmemmapArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VmemmapArray({} x {} bytes)", self.len, std::mem::size_of::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU16, AtomicU32, Ordering::Relaxed};

    #[test]
    fn elements_are_initialised_and_large_arrays_are_aligned_to_a_pmd() {
        let small = VmemmapArray::new(100, |i| AtomicU32::new(i as u32));
        assert_eq!(small.len(), 100);
        assert_eq!(small[99].load(Relaxed), 99);
        assert_eq!(small.as_ptr() as usize % 64, 0);
        let large = VmemmapArray::new(1 << 20, |_| AtomicU16::new(7));
        assert_eq!(large.as_ptr() as usize % HUGE_ALIGN, 0);
        assert!(large.iter().all(|w| w.load(Relaxed) == 7));
        assert!(VmemmapArray::new(0, |_| AtomicU32::new(0)).is_empty());
    }

    #[test]
    fn elements_with_drop_glue_are_dropped_once() {
        let counter = std::rc::Rc::new(());
        let arr = VmemmapArray::new(10, |_| counter.clone());
        assert_eq!(std::rc::Rc::strong_count(&counter), 11);
        drop(arr);
        assert_eq!(std::rc::Rc::strong_count(&counter), 1);
    }
}
