//! Real memory: an anonymous mapping whose pages the allocator hands out.
//!
//! The mapping is aligned to 2 MiB and its pfns are its virtual page numbers (`address >>
//! 12`), so a buddy block of order `o` is naturally aligned in memory too: every order-9
//! block is a 2 MiB-aligned region that the kernel can back with one transparent huge page,
//! which the arena asks for with `madvise(MADV_HUGEPAGE)`. Nothing is touched (or committed)
//! until a caller writes to the memory it was given.

use std::ptr::NonNull;

use pageblock_core::types::{PAGE_SHIFT, PAGE_SIZE};

/// 2 MiB: the alignment of the arena (one PMD, one pageblock by default).
const ARENA_ALIGN: usize = 2 << 20;

/// An anonymous, private mapping of `len` bytes, 2 MiB-aligned.
#[derive(Debug)]
pub struct Arena {
    /// Start of the original mapping (for munmap).
    map: NonNull<u8>,
    map_len: usize,
    /// The aligned region the allocator manages.
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the arena is plain memory; who may touch which page is decided by the allocator and
// its callers, not by the mapping.
unsafe impl Send for Arena {}
// SAFETY: as above; the arena's own fields are never written after creation.
unsafe impl Sync for Arena {}

impl Arena {
    /// Map `bytes` (rounded up to pages) of anonymous memory, 2 MiB-aligned, THP-advised.
    /// A size the address space cannot hold is refused (`InvalidInput`) before any mapping.
    pub fn new(bytes: u64) -> std::io::Result<Arena> {
        let lengths = usize::try_from(bytes.div_ceil(PAGE_SIZE))
            .ok()
            .and_then(|pages| pages.checked_mul(PAGE_SIZE as usize))
            .and_then(|len| Some((len, len.checked_add(ARENA_ALIGN)?)));
        let Some((len, map_len)) = lengths else {
            let msg = format!("an arena of {bytes} bytes does not fit the address space");
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
        };
        // SAFETY: a fresh anonymous private mapping at an address of the kernel's choosing;
        // no existing memory is affected.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let addr = map as usize;
        let aligned = addr.next_multiple_of(ARENA_ALIGN);
        // SAFETY: `aligned..aligned+len` lies inside the mapping just created. MADV_HUGEPAGE
        // is advice: failure (THP disabled) changes nothing we rely on, so it is ignored.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        Ok(Arena {
            map: NonNull::new(map.cast()).expect("mmap never returns null on success"),
            map_len,
            base: NonNull::new(aligned as *mut u8).expect("aligned address inside the mapping"),
            len,
        })
    }

    /// The first byte of the managed (aligned) region.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Bytes in the managed region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the arena has no pages.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Withdraw the huge-page advice (`MADV_NOHUGEPAGE`): first touches then fault in
    /// 4 KiB, not 2 MiB. For short runs that touch a few scattered pages.
    pub fn no_huge_pages(&self) {
        // SAFETY: the range is inside the live mapping; the advice changes no contents.
        unsafe {
            libc::madvise(self.base.as_ptr().cast(), self.len, libc::MADV_NOHUGEPAGE);
        }
    }

    /// Fault every page in now (`MADV_POPULATE_WRITE`), so later first touches cost nothing;
    /// benchmarks use it to measure the allocator rather than the kernel's page faults.
    pub fn populate(&self) -> std::io::Result<()> {
        // SAFETY: the range is inside the live mapping; populating writes nothing visible.
        let rc = unsafe { libc::madvise(self.base.as_ptr().cast(), self.len, libc::MADV_POPULATE_WRITE) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Pfn of the first page.
    pub fn start_pfn(&self) -> u64 {
        self.base.as_ptr() as u64 >> PAGE_SHIFT
    }

    /// Pages in the arena.
    pub fn nr_pages(&self) -> u64 {
        self.len as u64 / PAGE_SIZE
    }

    /// The address of page `pfn`, if it lies in the arena.
    pub fn page_ptr(&self, pfn: u64) -> Option<NonNull<u8>> {
        let offset = pfn.checked_sub(self.start_pfn())?;
        if offset >= self.nr_pages() {
            return None;
        }
        NonNull::new((pfn << PAGE_SHIFT) as *mut u8)
    }

    /// The pfn of the page containing `ptr`, if it lies in the arena.
    pub fn pfn_of(&self, ptr: *const u8) -> Option<u64> {
        let addr = ptr as usize;
        let base = self.base.as_ptr() as usize;
        (addr >= base && addr < base + self.len).then_some(addr as u64 >> PAGE_SHIFT)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping `new` created; the allocator that owned the
        // arena is being dropped, and pointers into it are dead by the caller's contract.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_is_aligned_writable_and_maps_pfns_both_ways() {
        let a = Arena::new(8 << 20).unwrap();
        assert_eq!(a.start_pfn() % 512, 0, "2 MiB aligned");
        assert_eq!(a.nr_pages(), 2048);
        let last = a.start_pfn() + a.nr_pages() - 1;
        let p = a.page_ptr(last).unwrap();
        // SAFETY: the page lies inside the live mapping and nobody else uses it.
        unsafe { p.as_ptr().write_bytes(0xa5, PAGE_SIZE as usize) };
        // SAFETY: as above; the bytes were just written.
        assert_eq!(unsafe { *p.as_ptr().add(4095) }, 0xa5);
        assert_eq!(a.pfn_of(p.as_ptr()), Some(last));
        assert_eq!(a.page_ptr(last + 1), None);
        assert_eq!(a.page_ptr(a.start_pfn() - 1), None);
    }

    #[test]
    fn a_size_past_the_address_space_is_refused_before_mapping() {
        for bytes in [u64::MAX, u64::MAX - PAGE_SIZE, usize::MAX as u64 - 4096] {
            let e = Arena::new(bytes).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bytes}: {e}");
            assert!(e.to_string().contains(&bytes.to_string()), "{e}");
        }
    }
}
