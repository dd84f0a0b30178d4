//! The fast path's reading of a kmem payload, straight into a [`RecordKind`].
//!
//! Fields are `key=value` separated by single spaces, in the kernel's order; each number is
//! parsed in the pass that finds its end. Numbers are accepted only in the ranges a record
//! holds (orders up to `MAX_PAGE_ORDER`) and without a sign (no real event has a negative
//! order or migratetype). Within that, every check is one the strict path makes
//! (`pageblock_formats::kmem::KmemEvent::parse`, then the record's ranges), so what this
//! accepts the strict path accepts with the same values; for anything else (double spaces,
//! a negative number, an unknown gfp name, an order above `MAX_PAGE_ORDER`) it returns
//! `None` and the caller asks the strict path, which decides and explains.

use super::prefix::digits_at;
use crate::{GfpTable, RecordKind};

/// A cursor over one payload.
struct Fields<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Fields<'a> {
    /// Consumes `lit` (a field's ` key=`), compared byte by byte: the keys are short, a
    /// `memcmp` call costs more.
    #[inline(always)]
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.i + lit.len();
        let here = self.b.get(self.i..end)?;
        here.iter().zip(lit).all(|(a, b)| a == b).then(|| self.i = end)
    }

    /// A decimal value that fits `0..=limit` (a sign or anything else than digits: `None`).
    #[inline(always)]
    fn number(&mut self, lit: &[u8], limit: u64) -> Option<u64> {
        self.lit(lit)?;
        let (v, end) = digits_at(self.b, self.i)?;
        self.i = end;
        (v <= limit).then_some(v)
    }

    /// A `%d` order or migratetype that fits the record.
    #[inline(always)]
    fn small(&mut self, lit: &[u8], limit: u8) -> Option<u8> {
        self.number(lit, u64::from(limit)).map(|v| v as u8)
    }

    /// A `%d` flag: its value is not zero.
    #[inline]
    fn flag(&mut self, lit: &[u8]) -> Option<bool> {
        self.number(lit, i32::MAX as u64).map(|v| v != 0)
    }

    /// `page=`: any bytes up to the next space but no whitespace or control byte, and the
    /// value is NULL (`0000000000000000`, perf's `(nil)`).
    #[inline(always)]
    fn page(&mut self) -> Option<bool> {
        self.lit(b"page=")?;
        if let Some(null) = self.page_hex16() {
            return Some(null);
        }
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            if c <= b' ' {
                if c != b' ' {
                    return None;
                }
                break;
            }
            self.i += 1;
        }
        let page = &self.b[start..self.i];
        (!page.is_empty()).then(|| page == b"0000000000000000" || page == b"(nil)")
    }

    /// The kernel's own form, 16 bytes then a space, checked a word at a time: whether it is
    /// NULL, or `None` if the page is not 16 bytes above `' '`.
    #[inline]
    fn page_hex16(&mut self) -> Option<bool> {
        let b = self.b.get(self.i..self.i + 17)?;
        if b[16] != b' ' {
            return None;
        }
        let (mut hi, mut lo) = ([0u8; 8], [0u8; 8]);
        hi.copy_from_slice(&b[..8]);
        lo.copy_from_slice(&b[8..16]);
        let (hi, lo) = (u64::from_le_bytes(hi), u64::from_le_bytes(lo));
        // A byte below 0x21 (in ASCII text) has its high bit set after subtracting 0x21.
        let low_byte = |w: u64| w.wrapping_sub(0x2121_2121_2121_2121) & !w & 0x8080_8080_8080_8080 != 0;
        if low_byte(hi) || low_byte(lo) {
            return None;
        }
        self.i += 16;
        const ZEROS: u64 = u64::from_le_bytes(*b"00000000");
        Some(hi == ZEROS && lo == ZEROS)
    }

    /// ` pfn=0x` and hex digits of either case (at most 16: more could overflow, and the
    /// strict parser decides).
    #[inline(always)]
    fn pfn(&mut self) -> Option<u64> {
        self.lit(b" pfn=0x")?;
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.i) {
            let d = HEX[usize::from(c)];
            if d > 15 {
                break;
            }
            v = v << 4 | u64::from(d);
            self.i += 1;
        }
        (self.i > start && self.i - start <= 16).then_some(v)
    }

    /// Everything after `lit` (the last field).
    fn rest(&mut self, lit: &[u8]) -> Option<&'a [u8]> {
        self.lit(lit)?;
        let rest = &self.b[self.i..];
        self.i = self.b.len();
        Some(rest)
    }
}

/// Value of each byte as a hex digit of either case, 0xff for the others.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            d @ b'0'..=b'9' => d - b'0',
            d @ b'a'..=b'f' => d - b'a' + 10,
            d @ b'A'..=b'F' => d - b'A' + 10,
            _ => 0xff,
        };
        c += 1;
    }
    t
};

/// Largest order a record holds (the strict parser words the error for larger ones).
const ORDER: u8 = super::MAX_PAGE_ORDER as u8;

/// Largest migratetype a record holds (`i8`).
const MT: u8 = i8::MAX as u8;

/// `mm_vmscan_direct_reclaim_begin`'s payload (`order=9 gfp_flags=GFP_TRANSHUGE`), or
/// `None` to let the strict parser decide.
#[inline]
pub(super) fn direct_reclaim_begin(payload: &[u8], gfp: &mut GfpTable) -> Option<crate::VmscanEvent> {
    let mut f = Fields { b: payload, i: 0 };
    let order = f.small(b"order=", ORDER)?;
    let gfp = gfp.intern_text(f.rest(b" gfp_flags=")?).ok()?;
    Some(crate::VmscanEvent::DirectReclaimBegin { order, gfp })
}

/// The pfn and record kind of a payload of the kmem event `index` (into `KMEM_EVENT_NAMES`), or
/// `None` to let the strict parser decide.
#[inline]
pub(super) fn decode(index: usize, payload: &[u8], gfp: &mut GfpTable) -> Option<(u64, RecordKind)> {
    let mut f = Fields { b: payload, i: 0 };
    let null_page = f.page()?;
    let pfn = f.pfn()?;
    let kind = match index {
        0 => RecordKind::Alloc {
            order: f.small(b" order=", ORDER)?,
            migratetype: f.small(b" migratetype=", MT)? as i8,
            gfp: gfp.intern_text(f.rest(b" gfp_flags=")?).ok()?,
            failed: null_page,
        },
        1 => RecordKind::Free { order: f.small(b" order=", ORDER)? },
        2 => {
            f.lit(b" order=0")?;
            RecordKind::FreeBatched
        }
        3 => RecordKind::ZoneLocked {
            order: f.small(b" order=", ORDER)?,
            migratetype: f.small(b" migratetype=", MT)? as i8,
            percpu_refill: f.flag(b" percpu_refill=")?,
        },
        4 => RecordKind::PcpuDrain {
            order: f.small(b" order=", ORDER)?,
            migratetype: f.small(b" migratetype=", MT)? as i8,
        },
        5 => extfrag(&mut f)?,
        _ => return None,
    };
    (f.i == payload.len()).then_some((pfn, kind))
}

fn extfrag(f: &mut Fields<'_>) -> Option<RecordKind> {
    let alloc_order = f.small(b" alloc_order=", ORDER)?;
    let fallback_order = f.small(b" fallback_order=", ORDER)?;
    let pageblock_order = f.small(b" pageblock_order=", u8::MAX)?;
    let alloc_migratetype = f.small(b" alloc_migratetype=", MT)? as i8;
    let fallback_migratetype = f.small(b" fallback_migratetype=", MT)? as i8;
    f.flag(b" fragmenting=")?;
    Some(RecordKind::Extfrag {
        alloc_order,
        fallback_order,
        alloc_migratetype,
        fallback_migratetype,
        fragmenting: fallback_order < pageblock_order,
        change_ownership: f.flag(b" change_ownership=")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_payloads() {
        let mut g = GfpTable::new();
        let alloc = b"page=00000000c8fc0d87 pfn=0x13f3ae order=0 migratetype=0 gfp_flags=GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP";
        let (pfn, kind) = decode(0, alloc, &mut g).unwrap();
        assert_eq!(pfn, 0x13f3ae);
        assert!(matches!(kind, RecordKind::Alloc { order: 0, migratetype: 0, failed: false, .. }));
        let ext = b"page=00000000484cae2f pfn=0x12b800 alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1";
        let (_, kind) = decode(5, ext, &mut g).unwrap();
        assert!(matches!(
            kind,
            RecordKind::Extfrag { fallback_order: 10, fragmenting: false, change_ownership: true, .. }
        ));
        let perf_bug = b"page=0x190a000 pfn=0x190a000 alloc_order=3 fallback_order=3 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=2 fragmenting=10 change_ownership=1";
        let (_, kind) = decode(5, perf_bug, &mut g).unwrap();
        assert!(matches!(kind, RecordKind::Extfrag { fragmenting: true, .. }), "derived, not printed");
        let failed = b"page=(nil) pfn=0x0 order=9 migratetype=1 gfp_flags=GFP_TRANSHUGE";
        assert!(matches!(
            decode(0, failed, &mut g),
            Some((0, RecordKind::Alloc { failed: true, order: 9, .. }))
        ));
        assert!(matches!(decode(2, b"page=1 pfn=0xA order=0", &mut g), Some((10, RecordKind::FreeBatched))));
        let max = b"page=1 pfn=0xffffffffffffFFFF order=0";
        assert!(matches!(decode(2, max, &mut g), Some((u64::MAX, RecordKind::FreeBatched))));
        let null16 = b"page=0000000000000000 pfn=0x0 order=0 migratetype=1 gfp_flags=none";
        assert!(matches!(decode(0, null16, &mut g), Some((0, RecordKind::Alloc { failed: true, .. }))));
        let not_null = b"page=0000000000000001 pfn=0x0 order=0 migratetype=1 gfp_flags=none";
        assert!(matches!(decode(0, not_null, &mut g), Some((0, RecordKind::Alloc { failed: false, .. }))));
    }

    #[test]
    fn unusual_payloads_go_to_the_strict_parser() {
        let mut g = GfpTable::new();
        for (i, p) in [
            (1, &b"page=1  pfn=0x1 order=0"[..]),
            (1, b"page=1 pfn=0x1 order=-0"),
            (1, b"page=1 pfn=0x1 order=256"),
            (1, b"page=1 pfn=0x1 order=11"),
            (1, b"page=1 pfn=0x1 order=0 "),
            (1, b"page=1 pfn=0x1 order=0x"),
            (1, b"page=1 pfn=1 order=0"),
            (1, b"page=1 pfn=0x order=0"),
            (1, b"page=1 pfn=0x10000000000000000 order=0"),
            (1, b"page=1 pfn=0x00000000000000001 order=0"),
            (1, b"page= pfn=0x1 order=0"),
            (1, b"page=1\t pfn=0x1 order=0"),
            (1, b"page=000000000000000\t pfn=0x1 order=0"),
            (1, b"page=0000000\r00000000 pfn=0x1 order=0"),
            (2, b"page=1 pfn=0x1 order=1"),
            (2, b"page=1 pfn=0x1 order=00"),
            (4, b"page=1 pfn=0x1 order=0 migratetype=128"),
            (0, b"page=1 pfn=0x1 order=0 migratetype=1 gfp_flags=GFP_BOGUS"),
            (3, b"page=1 pfn=0x1 order=0 migratetype=1 percpu_refill=2147483648"),
        ] {
            assert_eq!(decode(i, p, &mut g), None, "{}", String::from_utf8_lossy(p));
        }
    }
}
