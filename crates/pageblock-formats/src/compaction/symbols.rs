//! The `__print_symbolic` tables of the compaction events: zone names and compaction results.
//!
//! `trace_print_symbols_seq()` prints the name whose value equals the field (compared as an
//! `unsigned long`), or `0x%lx` of that `unsigned long` when no entry matches; a negative
//! `int` is sign-extended first, so `-1` prints `0xffffffffffffffff`.

use std::borrow::Cow;
use std::fmt;

use crate::text::printf_hex_u64;
use crate::text::quote;

/// A `__print_symbolic` table: `(value, name)` in the order of the print fmt.
type Symbols = [(u64, &'static str)];

/// The zones of this machine's print fmt (`ZONE_DMA`, `ZONE_DMA32`, `ZONE_NORMAL`,
/// `ZONE_MOVABLE`; a kernel with `CONFIG_HIGHMEM` or `ZONE_DEVICE` numbers them otherwise).
const ZONE_SYMBOLS: [(u64, &str); 4] = [(0, "DMA"), (1, "DMA32"), (2, "Normal"), (3, "Movable")];

/// `COMPACTION_STATUS` in print-fmt order.
const RESULT_SYMBOLS: [(u64, &str); 9] = [
    (1, "skipped"),
    (2, "deferred"),
    (4, "continue"),
    (8, "success"),
    (6, "partial_skipped"),
    (5, "complete"),
    (3, "no_suitable_page"),
    (0, "not_suitable_zone"),
    (7, "contended"),
];

/// What `trace_print_symbols_seq()` prints for `value`.
fn render(table: &Symbols, value: u64) -> Cow<'static, str> {
    match table.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => Cow::Borrowed(name),
        None => Cow::Owned(format!("{value:#x}")),
    }
}

/// The value `trace_print_symbols_seq()` printed as `tok`: a name of `table`, or `0x%lx` of a
/// value that has no name (the kernel prints the name when there is one).
fn parse(table: &Symbols, tok: &str, what: &str) -> Result<u64, String> {
    if let Some((v, _)) = table.iter().find(|(_, n)| *n == tok) {
        return Ok(*v);
    }
    let known = || table.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ");
    let value = tok
        .strip_prefix("0x")
        .and_then(|h| printf_hex_u64(h.as_bytes()))
        .ok_or_else(|| format!("{what}: {} is neither one of {} nor `0x%lx`", quote(tok), known()))?;
    match table.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => Err(format!("{what}: {} would print as `{name}`", quote(tok))),
        None => Ok(value),
    }
}

/// `enum zone_type`, as the compaction events print it (`%-8s` of the symbolic name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZoneType(pub u32);

impl ZoneType {
    /// `ZONE_DMA`.
    pub const DMA: ZoneType = ZoneType(0);
    /// `ZONE_DMA32`.
    pub const DMA32: ZoneType = ZoneType(1);
    /// `ZONE_NORMAL`.
    pub const NORMAL: ZoneType = ZoneType(2);
    /// `ZONE_MOVABLE`.
    pub const MOVABLE: ZoneType = ZoneType(3);

    /// The printed text: the zone's name, or `0x…` for a zone without one.
    pub fn render(self) -> Cow<'static, str> {
        render(&ZONE_SYMBOLS, u64::from(self.0))
    }

    /// The zone printed as `tok` (without padding).
    pub(super) fn parse(tok: &str, what: &str) -> Result<Self, String> {
        let v = parse(&ZONE_SYMBOLS, tok, what)?;
        u32::try_from(v).map(ZoneType).map_err(|_| format!("{what}: {} does not fit a zone_type", quote(tok)))
    }
}

/// `enum compact_result` (`status=`, `ret=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompactResult(pub i32);

impl CompactResult {
    /// `COMPACT_NOT_SUITABLE_ZONE`.
    pub const NOT_SUITABLE_ZONE: CompactResult = CompactResult(0);
    /// `COMPACT_SKIPPED`.
    pub const SKIPPED: CompactResult = CompactResult(1);
    /// `COMPACT_DEFERRED`.
    pub const DEFERRED: CompactResult = CompactResult(2);
    /// `COMPACT_NO_SUITABLE_PAGE`.
    pub const NO_SUITABLE_PAGE: CompactResult = CompactResult(3);
    /// `COMPACT_CONTINUE`.
    pub const CONTINUE: CompactResult = CompactResult(4);
    /// `COMPACT_COMPLETE`.
    pub const COMPLETE: CompactResult = CompactResult(5);
    /// `COMPACT_PARTIAL_SKIPPED`.
    pub const PARTIAL_SKIPPED: CompactResult = CompactResult(6);
    /// `COMPACT_CONTENDED`.
    pub const CONTENDED: CompactResult = CompactResult(7);
    /// `COMPACT_SUCCESS`.
    pub const SUCCESS: CompactResult = CompactResult(8);

    /// The printed text: the result's name, or `0x…` of the sign-extended value.
    pub fn render(self) -> Cow<'static, str> {
        render(&RESULT_SYMBOLS, i64::from(self.0) as u64)
    }

    /// The result printed as `tok`.
    pub(super) fn parse(tok: &str, what: &str) -> Result<Self, String> {
        let v = parse(&RESULT_SYMBOLS, tok, what)? as i64;
        i32::try_from(v).map(CompactResult).map_err(|_| format!("{what}: {} does not fit an int", quote(tok)))
    }
}

impl fmt::Display for ZoneType {
    /// The printed name, unpadded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl fmt::Display for CompactResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_fallbacks() {
        assert_eq!(ZoneType::NORMAL.render(), "Normal");
        assert_eq!(ZoneType(4).render(), "0x4");
        assert_eq!(ZoneType::parse("0xffffffff", "z"), Ok(ZoneType(u32::MAX)));
        assert!(ZoneType::parse("0x100000000", "z").is_err());
        assert!(ZoneType::parse("0x2", "z").unwrap_err().contains("Normal"));
        assert!(ZoneType::parse("normal", "z").is_err());
        assert_eq!(CompactResult(-1).render(), "0xffffffffffffffff");
        assert_eq!(CompactResult::parse("0xffffffffffffffff", "r"), Ok(CompactResult(-1)));
        assert_eq!(CompactResult::parse("0xffffffff80000000", "r"), Ok(CompactResult(i32::MIN)));
        assert!(CompactResult::parse("0xffffffff", "r").is_err(), "an int never prints as 32 bits of ones");
        for (v, name) in RESULT_SYMBOLS {
            let r = CompactResult(v as i32);
            assert_eq!(r.render(), name);
            assert_eq!(CompactResult::parse(name, "r"), Ok(r));
        }
    }
}
