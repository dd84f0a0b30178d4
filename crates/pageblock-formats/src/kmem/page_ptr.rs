//! The `page=%p` field of the kmem events, kept exactly as printed.

use std::fmt;

/// A printed `struct page *`: the kernel's hashed `%p` (`00000000078605da`), a raw address
/// (`ffffea0064142000`, with `no_hash_pointers`), NULL (`0000000000000000`), or
/// libtraceevent's `0x147c69` / `(nil)`. It displays exactly as it was parsed.
///
/// Sixteen lowercase hex digits — every kernel-printed form — are stored inline as a number;
/// anything else is kept as text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PagePtr(Repr);

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Repr {
    /// Exactly 16 lowercase hex digits.
    Hex16(u64),
    /// Any other non-empty text without whitespace.
    Text(Box<str>),
}

impl PagePtr {
    /// The NULL pointer as `%p` prints it: `0000000000000000` (failed allocations).
    pub fn null() -> Self {
        PagePtr(Repr::Hex16(0))
    }

    /// A 16-hex-digit pointer with this value.
    pub fn from_hex16(value: u64) -> Self {
        PagePtr(Repr::Hex16(value))
    }

    /// The printed field as found in a trace, verbatim. `None` if `text` is empty or contains
    /// whitespace (it could not have been one field then).
    pub fn new(text: &str) -> Option<Self> {
        if text.is_empty() || text.bytes().any(|b| b.is_ascii_whitespace()) {
            return None;
        }
        let b = text.as_bytes();
        if b.len() == 16 && b.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c)) {
            return crate::text::digits_u64(b, 16).map(|v| PagePtr(Repr::Hex16(v)));
        }
        Some(PagePtr(Repr::Text(text.into())))
    }

    /// A deterministic stand-in for the kernel's hashed `%p` of the page of `pfn`, for
    /// synthetic traces: 16 hex digits, the upper 32 bits zero and the lower 32 a mix of the
    /// pfn (never 0, so it cannot be mistaken for NULL). Equal pfns give equal pointers, as
    /// in a real trace.
    pub fn hashed(pfn: u64) -> Self {
        // splitmix64 finaliser: a bijection on u64, then fold to 32 bits.
        let mut z = pfn.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let low = (z ^ (z >> 32)) & 0xffff_ffff;
        PagePtr(Repr::Hex16(if low == 0 { 1 } else { low }))
    }

    /// True for the NULL pointer (`0000000000000000`, or libtraceevent's `(nil)`).
    pub fn is_null(&self) -> bool {
        match &self.0 {
            Repr::Hex16(v) => *v == 0,
            Repr::Text(t) => &**t == "(nil)",
        }
    }

    /// The value of a 16-hex-digit pointer.
    pub fn hex16(&self) -> Option<u64> {
        match self.0 {
            Repr::Hex16(v) => Some(v),
            Repr::Text(_) => None,
        }
    }
}

impl fmt::Display for PagePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Hex16(v) => write!(f, "{v:016x}"),
            Repr::Text(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_forms() {
        for s in ["00000000078605da", "ffffea0064142000", "0x147c69", "(nil)", "00000000078605DA", "0123"] {
            assert_eq!(PagePtr::new(s).unwrap().to_string(), s);
        }
        assert!(PagePtr::new("").is_none());
        assert!(PagePtr::new("a b").is_none());
        assert!(PagePtr::new("0000000000000000").unwrap().is_null());
        assert!(PagePtr::new("(nil)").unwrap().is_null());
        assert_eq!(PagePtr::null().to_string(), "0000000000000000");
    }

    #[test]
    fn hashed_looks_like_the_kernel() {
        for pfn in [0u64, 1, 0x147c69, u64::MAX] {
            let p = PagePtr::hashed(pfn);
            let s = p.to_string();
            assert_eq!(s.len(), 16);
            assert!(s.starts_with("00000000"));
            assert!(!p.is_null());
            assert_eq!(p, PagePtr::hashed(pfn));
        }
        assert_ne!(PagePtr::hashed(1), PagePtr::hashed(2));
    }
}
