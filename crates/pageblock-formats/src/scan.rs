//! A strict left-to-right reader of one tracepoint payload (compaction, vmscan).
//!
//! Literals must match byte for byte and every value must be written exactly as the kernel's
//! `vsnprintf` writes it (no leading zeros, no `+`, lowercase hex, `-0` is not a number), so
//! whatever the parsers accept renders back to the same bytes.

use crate::text::{printf_hex_u64, printf_u64, quote};
use crate::ParseError;

/// The unread rest of a payload, and the event it belongs to (for error messages).
pub(crate) struct Scan<'a> {
    event: &'static str,
    rest: &'a str,
}

impl<'a> Scan<'a> {
    /// A reader of `payload`, the `TP_printk` text of `event`.
    pub(crate) fn new(event: &'static str, payload: &'a str) -> Self {
        Scan { event, rest: payload }
    }

    /// An error about `event`.
    pub(crate) fn error(&self, reason: impl std::fmt::Display) -> ParseError {
        ParseError::new(1, format!("{}: {reason}", self.event))
    }

    /// Consumes the literal text `lit`.
    pub(crate) fn lit(&mut self, lit: &str) -> Result<(), ParseError> {
        match self.rest.strip_prefix(lit) {
            Some(r) => {
                self.rest = r;
                Ok(())
            }
            None if self.rest.is_empty() => {
                Err(self.error(format!("payload ends where `{lit}` was expected")))
            }
            None => Err(self.error(format!("expected `{lit}`, found {}", quote(self.rest)))),
        }
    }

    /// Takes the bytes up to the next `stop` byte (or the end).
    fn take_until(&mut self, stop: impl Fn(u8) -> bool) -> &'a str {
        let end = self.rest.bytes().position(stop).unwrap_or(self.rest.len());
        let (tok, rest) = self.rest.split_at(end);
        self.rest = rest;
        tok
    }

    /// A number's characters: ASCII letters and digits, and a leading `-`.
    fn number_token(&mut self) -> &'a str {
        let neg = usize::from(self.rest.starts_with('-'));
        let end = self
            .rest
            .bytes()
            .skip(neg)
            .position(|b| !b.is_ascii_alphanumeric())
            .map_or(self.rest.len(), |i| i + neg);
        let (tok, rest) = self.rest.split_at(end);
        self.rest = rest;
        tok
    }

    /// `%lu`.
    pub(crate) fn lu(&mut self, what: &str) -> Result<u64, ParseError> {
        let tok = self.number_token();
        printf_u64(tok.as_bytes())
            .ok_or_else(|| self.error(format!("{what}: {} is not a `%lu` number", quote(tok))))
    }

    /// `%u`.
    pub(crate) fn u(&mut self, what: &str) -> Result<u32, ParseError> {
        let tok = self.number_token();
        printf_u64(tok.as_bytes())
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| self.error(format!("{what}: {} is not a `%u` number", quote(tok))))
    }

    /// `%d`.
    pub(crate) fn d(&mut self, what: &str) -> Result<i32, ParseError> {
        let tok = self.number_token();
        signed(tok)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| self.error(format!("{what}: {} is not a `%d` number", quote(tok))))
    }

    /// `%ld`.
    pub(crate) fn ld(&mut self, what: &str) -> Result<i64, ParseError> {
        let tok = self.number_token();
        signed(tok).ok_or_else(|| self.error(format!("{what}: {} is not a `%ld` number", quote(tok))))
    }

    /// `%lx` (the `0x` before it is a literal of the format).
    pub(crate) fn lx(&mut self, what: &str) -> Result<u64, ParseError> {
        let tok = self.number_token();
        printf_hex_u64(tok.as_bytes())
            .ok_or_else(|| self.error(format!("{what}: {} is not a `%lx` number", quote(tok))))
    }

    /// `%s`: one word (up to the next space), not empty.
    pub(crate) fn s(&mut self, what: &str) -> Result<&'a str, ParseError> {
        let tok = self.take_until(|b| b == b' ');
        if tok.is_empty() {
            return Err(self.error(format!("{what} is empty")));
        }
        Ok(tok)
    }

    /// `%-<width>s`: one word, then spaces up to `width` bytes.
    pub(crate) fn s_left(&mut self, width: usize, what: &str) -> Result<&'a str, ParseError> {
        let tok = self.s(what)?;
        let pad = width.saturating_sub(tok.len());
        let spaces = self.rest.bytes().take(pad).take_while(|&b| b == b' ').count();
        if spaces != pad {
            return Err(
                self.error(format!("{what} {} is not padded to {width} bytes (`%-{width}s`)", quote(tok)))
            );
        }
        self.rest = &self.rest[pad..];
        Ok(tok)
    }

    /// Checks that the whole payload was read.
    pub(crate) fn end(&self) -> Result<(), ParseError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("unexpected text after the last field: {}", quote(self.rest))))
        }
    }
}

/// A signed decimal as `vsnprintf` writes it: `-0` is not one.
fn signed(tok: &str) -> Option<i64> {
    match tok.strip_prefix('-') {
        Some("0") => None,
        Some(abs) => printf_u64(abs.as_bytes()).and_then(|m| 0i64.checked_sub_unsigned(m)),
        None => printf_u64(tok.as_bytes()).and_then(|v| i64::try_from(v).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_printf_writes_them() {
        let d = |s: &str| Scan::new("e", s).d("x");
        assert_eq!(d("0"), Ok(0));
        assert_eq!(d("-2147483648"), Ok(i32::MIN));
        assert_eq!(d("2147483647"), Ok(i32::MAX));
        for bad in ["", "-", "-0", "01", "+1", "2147483648", "-2147483649", "1a", "x"] {
            assert!(d(bad).is_err(), "{bad}");
        }
        let u = |s: &str| Scan::new("e", s).u("x");
        assert_eq!(u("4294967295"), Ok(u32::MAX));
        assert!(u("4294967296").is_err() && u("-1").is_err());
        let lx = |s: &str| Scan::new("e", s).lx("x");
        assert_eq!(lx("ffffffffffffffff"), Ok(u64::MAX));
        assert_eq!(lx("0"), Ok(0));
        for bad in ["", "0a", "A", "10000000000000000", "-1", "g"] {
            assert!(lx(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn padded_words() {
        let mut s = Scan::new("e", "Normal   order=1");
        assert_eq!(s.s_left(8, "zone"), Ok("Normal"));
        assert!(s.lit(" order=").is_ok());
        assert!(Scan::new("e", "Normal order=1").s_left(8, "zone").is_err());
        let mut long = Scan::new("e", "0xffffffff order=1");
        assert_eq!(long.s_left(8, "zone"), Ok("0xffffffff"));
        let mut end = Scan::new("e", "DMA32   ");
        assert_eq!(end.s_left(8, "zone"), Ok("DMA32"));
        assert!(end.end().is_ok());
        assert!(Scan::new("e", "DMA32  ").s_left(8, "zone").is_err());
        assert!(Scan::new("e", " x").s("w").is_err());
    }
}
