//! Where a page's state word and its list links live ([`MemmapLayout`]): part of a zone's
//! configuration, read by [`crate::memmap`]. Changes speed only, never a decision.

/// The smallest record holding links and state: the three fields.
pub const MIN_STRUCT_PAGE_BYTES: u32 = 12;
/// The largest record accepted (four cache lines).
pub const MAX_STRUCT_PAGE_BYTES: u32 = 256;
/// The kernel's `sizeof(struct page)` on x86_64.
pub const KERNEL_STRUCT_PAGE_BYTES: u32 = 64;

/// Where a page's state word and its list links live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemmapLayout {
    /// pageblock's (the default): the state words in a dense array of 1 byte per page,
    /// beside 8-byte link records — 9 bytes per page. Everything a free validates and every
    /// buddy check reads sits in an array 1/64 of the kernel's memmap (1 MiB per 4 GiB, the
    /// size of this project's machine's L2); only a page on a list costs a record miss, and
    /// only when linked or unlinked. Measured on that machine, a random record in a 12 MiB
    /// memmap is a DRAM access (about 120 ns), one in a 2 MiB array about 16 ns; halving
    /// the state array from 2-byte words made a random-order free about 10% faster (900k
    /// frees over 4 GiB, 10 interleaved runs: 86.6 -> 78.2 ns).
    Split,
    /// The kernel's: one record per page holding links and state, `bytes` apart (a multiple
    /// of 4 from [`MIN_STRUCT_PAGE_BYTES`] to [`MAX_STRUCT_PAGE_BYTES`]; 64 =
    /// [`KERNEL_STRUCT_PAGE_BYTES`] gives the kernel's footprint and cache behaviour).
    Records(u32),
}

impl MemmapLayout {
    /// Bytes of metadata per page.
    pub const fn bytes_per_page(self) -> u32 {
        match self {
            MemmapLayout::Split => 9,
            MemmapLayout::Records(bytes) => bytes,
        }
    }

    /// True if the layout can be built: a `Records` size that is a multiple of 4 in range.
    pub const fn is_valid(self) -> bool {
        match self {
            MemmapLayout::Split => true,
            MemmapLayout::Records(b) => {
                b % 4 == 0 && b >= MIN_STRUCT_PAGE_BYTES && b <= MAX_STRUCT_PAGE_BYTES
            }
        }
    }
}
