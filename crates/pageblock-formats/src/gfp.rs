//! GFP masks (`gfp_t`) and their tracepoint rendering (`gfp_flags=…`).
//!
//! The bit values and the 38-entry name table are those of Linux 6.18 on x86_64 without
//! `CONFIG_KASAN_HW_TAGS` or `CONFIG_LOCKDEP` (as evaluated from the `mm_page_alloc` format
//! file, `include/trace/events/mmflags.h` `__def_gfpflag_names`). Higher bits are
//! configuration dependent; unknown bits survive as hex.
//!
//! Rendering is `show_gfp_flags()` = `__print_flags(flags, "|", table)` behind the
//! `flags ? … : "none"` ternary of the print fmt, i.e. the kernel's `trace_print_flags_seq()`:
//! walk the table **in order**; for each entry whose mask is entirely contained in the remaining
//! flags, print its name (joined with `|`) and clear its bits; finally print leftover bits as
//! `0x%lx` (after a `|` if a name was printed). Composites come first, so the output is the
//! greedy decomposition: `0x152c4a` prints
//! `GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL`,
//! and `0xc00` prints `GFP_NOIO` (which equals `__GFP_RECLAIM`).

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign, Not};

use crate::text::{self, quote};
use crate::ParseError;

/// A GFP mask (`gfp_t`), with the Linux 6.18 x86_64 bit values.
///
/// Single bits are named without the `__GFP_` prefix (`Gfp::MOVABLE` is `__GFP_MOVABLE`),
/// composites without `GFP_` (`Gfp::KERNEL` is `GFP_KERNEL`); `GFP_DMA`/`__GFP_DMA` and
/// `GFP_DMA32`/`__GFP_DMA32` have equal values and share one constant, and so do
/// `GFP_NOIO` ([`Gfp::NOIO`]) and `__GFP_RECLAIM` ([`Gfp::RECLAIM`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Gfp(pub u64);

impl Gfp {
    /// No flags (renders as `none`).
    pub const NONE: Gfp = Gfp(0);
    /// `__GFP_DMA`.
    pub const DMA: Gfp = Gfp(0x1);
    /// `__GFP_HIGHMEM`.
    pub const HIGHMEM: Gfp = Gfp(0x2);
    /// `__GFP_DMA32`.
    pub const DMA32: Gfp = Gfp(0x4);
    /// `__GFP_MOVABLE`.
    pub const MOVABLE: Gfp = Gfp(0x8);
    /// `__GFP_RECLAIMABLE`.
    pub const RECLAIMABLE: Gfp = Gfp(0x10);
    /// `__GFP_HIGH`.
    pub const HIGH: Gfp = Gfp(0x20);
    /// `__GFP_IO`.
    pub const IO: Gfp = Gfp(0x40);
    /// `__GFP_FS`.
    pub const FS: Gfp = Gfp(0x80);
    /// `__GFP_ZERO`.
    pub const ZERO: Gfp = Gfp(0x100);
    /// `__GFP_DIRECT_RECLAIM`.
    pub const DIRECT_RECLAIM: Gfp = Gfp(0x400);
    /// `__GFP_KSWAPD_RECLAIM`.
    pub const KSWAPD_RECLAIM: Gfp = Gfp(0x800);
    /// `__GFP_WRITE`.
    pub const WRITE: Gfp = Gfp(0x1000);
    /// `__GFP_NOWARN`.
    pub const NOWARN: Gfp = Gfp(0x2000);
    /// `__GFP_RETRY_MAYFAIL`.
    pub const RETRY_MAYFAIL: Gfp = Gfp(0x4000);
    /// `__GFP_NOFAIL`.
    pub const NOFAIL: Gfp = Gfp(0x8000);
    /// `__GFP_NORETRY`.
    pub const NORETRY: Gfp = Gfp(0x10000);
    /// `__GFP_MEMALLOC`.
    pub const MEMALLOC: Gfp = Gfp(0x20000);
    /// `__GFP_COMP`.
    pub const COMP: Gfp = Gfp(0x40000);
    /// `__GFP_NOMEMALLOC`.
    pub const NOMEMALLOC: Gfp = Gfp(0x80000);
    /// `__GFP_HARDWALL`.
    pub const HARDWALL: Gfp = Gfp(0x100000);
    /// `__GFP_THISNODE`.
    pub const THISNODE: Gfp = Gfp(0x200000);
    /// `__GFP_ACCOUNT`.
    pub const ACCOUNT: Gfp = Gfp(0x400000);
    /// `__GFP_ZEROTAGS`.
    pub const ZEROTAGS: Gfp = Gfp(0x800000);
    /// `__GFP_NO_OBJ_EXT`.
    pub const NO_OBJ_EXT: Gfp = Gfp(0x1000000);

    /// `__GFP_RECLAIM` = `DIRECT_RECLAIM | KSWAPD_RECLAIM` (same value as `GFP_NOIO`).
    pub const RECLAIM: Gfp = Gfp(0xc00);
    /// `GFP_ATOMIC` = `HIGH | KSWAPD_RECLAIM`.
    pub const ATOMIC: Gfp = Gfp(0x820);
    /// `GFP_KERNEL` = `RECLAIM | IO | FS`.
    pub const KERNEL: Gfp = Gfp(0xcc0);
    /// `GFP_KERNEL_ACCOUNT` = `KERNEL | ACCOUNT`.
    pub const KERNEL_ACCOUNT: Gfp = Gfp(0x400cc0);
    /// `GFP_NOWAIT` = `KSWAPD_RECLAIM | NOWARN` (6.18).
    pub const NOWAIT: Gfp = Gfp(0x2800);
    /// `GFP_NOIO` = `RECLAIM`.
    pub const NOIO: Gfp = Gfp(0xc00);
    /// `GFP_NOFS` = `RECLAIM | IO`.
    pub const NOFS: Gfp = Gfp(0xc40);
    /// `GFP_USER` = `RECLAIM | IO | FS | HARDWALL`.
    pub const USER: Gfp = Gfp(0x100cc0);
    /// `GFP_HIGHUSER` = `USER | HIGHMEM`.
    pub const HIGHUSER: Gfp = Gfp(0x100cc2);
    /// `GFP_HIGHUSER_MOVABLE` = `HIGHUSER | MOVABLE`.
    pub const HIGHUSER_MOVABLE: Gfp = Gfp(0x100cca);
    /// `GFP_TRANSHUGE_LIGHT` = `(HIGHUSER_MOVABLE | COMP | NOMEMALLOC | NOWARN) & !RECLAIM`.
    pub const TRANSHUGE_LIGHT: Gfp = Gfp(0x1c20ca);
    /// `GFP_TRANSHUGE` = `TRANSHUGE_LIGHT | DIRECT_RECLAIM`.
    pub const TRANSHUGE: Gfp = Gfp(0x1c24ca);

    /// True if every bit of `other` is set.
    pub fn contains(self, other: Gfp) -> bool {
        self.0 & other.0 == other.0
    }

    /// True if any bit of `other` is set.
    pub fn intersects(self, other: Gfp) -> bool {
        self.0 & other.0 != 0
    }

    /// The raw mask.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// The `gfp_flags=` text the kernel prints for this mask.
    pub fn render(self) -> String {
        self.to_string()
    }

    /// Parses a `gfp_flags=` value: `none`, or `|`-separated table names and `0x…` hex
    /// leftovers, in any order (the kernel's own output is the canonical greedy order).
    /// The error's line is 1.
    pub fn parse(s: &str) -> Result<Gfp, ParseError> {
        if s == "none" {
            return Ok(Gfp(0));
        }
        if s.is_empty() {
            return Err(ParseError::new(1, "empty gfp flags"));
        }
        let mut mask = 0u64;
        for part in text::split_byte(s, b'|') {
            if let Some(hex) = part.strip_prefix("0x") {
                mask |= text::hex_u64(hex, 1, "gfp flags")?;
            } else if let Some(&(m, _)) = GFP_FLAG_TABLE.iter().find(|(_, name)| *name == part) {
                mask |= m.0;
            } else {
                return Err(ParseError::new(1, format!("unknown gfp flag {} in {}", quote(part), quote(s))));
            }
        }
        Ok(Gfp(mask))
    }
}

/// The 6.18 `show_gfp_flags` table in print order: composites first, then single bits.
pub const GFP_FLAG_TABLE: [(Gfp, &str); 38] = [
    (Gfp::TRANSHUGE, "GFP_TRANSHUGE"),
    (Gfp::TRANSHUGE_LIGHT, "GFP_TRANSHUGE_LIGHT"),
    (Gfp::HIGHUSER_MOVABLE, "GFP_HIGHUSER_MOVABLE"),
    (Gfp::HIGHUSER, "GFP_HIGHUSER"),
    (Gfp::USER, "GFP_USER"),
    (Gfp::KERNEL_ACCOUNT, "GFP_KERNEL_ACCOUNT"),
    (Gfp::KERNEL, "GFP_KERNEL"),
    (Gfp::NOFS, "GFP_NOFS"),
    (Gfp::ATOMIC, "GFP_ATOMIC"),
    (Gfp::NOIO, "GFP_NOIO"),
    (Gfp::NOWAIT, "GFP_NOWAIT"),
    (Gfp::DMA, "GFP_DMA"),
    (Gfp::DMA32, "GFP_DMA32"),
    (Gfp::RECLAIM, "__GFP_RECLAIM"),
    (Gfp::DMA, "__GFP_DMA"),
    (Gfp::HIGHMEM, "__GFP_HIGHMEM"),
    (Gfp::DMA32, "__GFP_DMA32"),
    (Gfp::MOVABLE, "__GFP_MOVABLE"),
    (Gfp::RECLAIMABLE, "__GFP_RECLAIMABLE"),
    (Gfp::HIGH, "__GFP_HIGH"),
    (Gfp::IO, "__GFP_IO"),
    (Gfp::FS, "__GFP_FS"),
    (Gfp::ZERO, "__GFP_ZERO"),
    (Gfp::DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM"),
    (Gfp::KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM"),
    (Gfp::WRITE, "__GFP_WRITE"),
    (Gfp::NOWARN, "__GFP_NOWARN"),
    (Gfp::RETRY_MAYFAIL, "__GFP_RETRY_MAYFAIL"),
    (Gfp::NOFAIL, "__GFP_NOFAIL"),
    (Gfp::NORETRY, "__GFP_NORETRY"),
    (Gfp::MEMALLOC, "__GFP_MEMALLOC"),
    (Gfp::COMP, "__GFP_COMP"),
    (Gfp::NOMEMALLOC, "__GFP_NOMEMALLOC"),
    (Gfp::HARDWALL, "__GFP_HARDWALL"),
    (Gfp::THISNODE, "__GFP_THISNODE"),
    (Gfp::ACCOUNT, "__GFP_ACCOUNT"),
    (Gfp::ZEROTAGS, "__GFP_ZEROTAGS"),
    (Gfp::NO_OBJ_EXT, "__GFP_NO_OBJ_EXT"),
];

impl fmt::Display for Gfp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        if rest == 0 {
            return f.write_str("none");
        }
        let mut first = true;
        for &(Gfp(mask), name) in &GFP_FLAG_TABLE {
            if rest == 0 {
                break;
            }
            if rest & mask != mask {
                continue;
            }
            rest &= !mask;
            if !first {
                f.write_str("|")?;
            }
            first = false;
            f.write_str(name)?;
        }
        if rest != 0 {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "{rest:#x}")?;
        }
        Ok(())
    }
}

impl BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, o: Gfp) -> Gfp {
        Gfp(self.0 | o.0)
    }
}

impl BitOrAssign for Gfp {
    fn bitor_assign(&mut self, o: Gfp) {
        self.0 |= o.0;
    }
}

impl BitAnd for Gfp {
    type Output = Gfp;
    fn bitand(self, o: Gfp) -> Gfp {
        Gfp(self.0 & o.0)
    }
}

impl Not for Gfp {
    type Output = Gfp;
    fn not(self) -> Gfp {
        Gfp(!self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_examples() {
        let cases: [(u64, &str); 8] = [
            (
                0x152c4a,
                "GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP|__GFP_HARDWALL",
            ),
            (0xc00, "GFP_NOIO"),
            (0x2000000, "0x2000000"),
            (0x1c24ca, "GFP_TRANSHUGE"),
            (0x140cca, "GFP_HIGHUSER_MOVABLE|__GFP_COMP"),
            (0xdc0, "GFP_KERNEL|__GFP_ZERO"),
            (0, "none"),
            (0x2000200 | 0xcc0, "GFP_KERNEL|0x2000200"),
        ];
        for (v, s) in cases {
            assert_eq!(Gfp(v).render(), s, "{v:#x}");
            assert_eq!(Gfp::parse(s), Ok(Gfp(v)), "{s}");
        }
    }

    #[test]
    fn composites_are_their_bits() {
        let g = Gfp::RECLAIM | Gfp::IO | Gfp::FS;
        assert_eq!(g, Gfp::KERNEL);
        assert_eq!(Gfp::USER, Gfp::KERNEL | Gfp::HARDWALL);
        assert_eq!(Gfp::HIGHUSER_MOVABLE, Gfp::USER | Gfp::HIGHMEM | Gfp::MOVABLE);
        let light = (Gfp::HIGHUSER_MOVABLE | Gfp::COMP | Gfp::NOMEMALLOC | Gfp::NOWARN) & !Gfp::RECLAIM;
        assert_eq!(light, Gfp::TRANSHUGE_LIGHT);
        assert_eq!(Gfp::TRANSHUGE, light | Gfp::DIRECT_RECLAIM);
        assert_eq!(Gfp::KERNEL_ACCOUNT, Gfp::KERNEL | Gfp::ACCOUNT);
        assert_eq!(Gfp::NOWAIT, Gfp::KSWAPD_RECLAIM | Gfp::NOWARN);
        assert!(Gfp::KERNEL.contains(Gfp::IO) && !Gfp::KERNEL.contains(Gfp::MOVABLE));
    }

    #[test]
    fn parse_errors() {
        assert!(Gfp::parse("").is_err());
        assert!(Gfp::parse("GFP_BOGUS").is_err());
        assert!(Gfp::parse("GFP_KERNEL|").is_err());
        assert!(Gfp::parse("0x").is_err());
        assert!(Gfp::parse("0xzz").is_err());
        assert!(Gfp::parse("none|GFP_KERNEL").is_err());
    }
}
