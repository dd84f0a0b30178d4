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
//! * The allocation at `base` (made with `layout`, or dangling when it has no bytes) holds
//!   `offset + len` initialised `T`s, owned by this value alone and freed with that same
//!   layout; the array is the last `len` of them, from `ptr = base + offset`.

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
    base: NonNull<T>,
    offset: usize,
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
    pub fn new(len: usize, init: impl Fn(usize) -> T) -> VmemmapArray<T> {
        VmemmapArray::with_offset(0, len, init)
    }

    /// [`VmemmapArray::new`] for an array that starts `offset` elements into its
    /// allocation (so that its lines start where the caller wants them); element `i` is set
    /// to `init(i)`, and the `offset` elements before it, which nothing can reach, to
    /// `init(0)`.
    #[allow(unsafe_code)]
    pub fn with_offset(offset: usize, len: usize, init: impl Fn(usize) -> T) -> VmemmapArray<T> {
        let total = offset.checked_add(len).expect("memmap size overflows");
        let bytes = total.checked_mul(std::mem::size_of::<T>()).expect("memmap size overflows");
        let align = if bytes >= HUGE_ALIGN { HUGE_ALIGN } else { 64.max(std::mem::align_of::<T>()) };
        let layout = Layout::from_size_align(bytes, align).expect("memmap layout");
        if bytes == 0 {
            let ptr = NonNull::dangling();
            return VmemmapArray { ptr, len, base: ptr, offset: 0, layout };
        }
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(base) = NonNull::new(raw.cast::<T>()) else { std::alloc::handle_alloc_error(layout) };
        if align == HUGE_ALIGN {
            advise_huge(raw, bytes);
        }
        for i in 0..total {
            // SAFETY: `i < total`, inside the allocation; the element is written before any
            // read. (If `init` panics, the elements written so far leak with the memory.)
            unsafe { base.as_ptr().add(i).write(init(i.saturating_sub(offset))) };
        }
        // SAFETY: `offset <= total`, so the pointer is inside the allocation (or one past it).
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(offset)) };
        VmemmapArray { ptr, len, base, offset, layout }
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
        // SAFETY: the `offset + len` elements are initialised and dropped once, here; the
        // memory was allocated in `with_offset` with exactly `self.layout` (nothing was
        // allocated for 0 bytes).
        unsafe {
            let all = std::ptr::slice_from_raw_parts_mut(self.base.as_ptr(), self.offset + self.len);
            std::ptr::drop_in_place(all);
            if self.layout.size() > 0 {
                std::alloc::dealloc(self.base.as_ptr().cast(), self.layout);
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
        let arr = VmemmapArray::with_offset(3, 10, |_| counter.clone());
        assert_eq!(std::rc::Rc::strong_count(&counter), 14, "the skipped elements too");
        drop(arr);
        assert_eq!(std::rc::Rc::strong_count(&counter), 1);
    }

    #[test]
    fn an_offset_array_starts_that_far_into_its_allocation() {
        for (offset, len) in [(0, 100), (37, 100), (63, 1 << 21)] {
            let arr = VmemmapArray::with_offset(offset, len, |i| AtomicU32::new(i as u32));
            assert_eq!(arr.len(), len);
            assert_eq!((arr.as_ptr() as usize - offset * 4) % 64, 0, "the allocation is aligned");
            assert_eq!(arr[0].load(Relaxed), 0);
            assert_eq!(arr[len - 1].load(Relaxed), len as u32 - 1);
        }
    }
}
