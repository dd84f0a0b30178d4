//! Private helpers shared by the parsers and renderers: line splitting with 1-based numbers,
//! strict number parsing (ASCII digits only, no `+`, overflow is an error), and `printf`-style
//! padding that counts **bytes**, as the kernel's `vsnprintf` does (Rust's `{:>8}` counts chars).

use std::fmt;

use crate::ParseError;

/// Longest piece of user input quoted back in an error message.
const QUOTE_MAX: usize = 40;

/// Iterator over the lines of a text, with 1-based numbers. Splits on `\n` only; a final
/// `\n` does not start an extra empty line, a missing final `\n` is tolerated.
pub(crate) struct Lines<'a> {
    rest: Option<&'a str>,
    no: usize,
}

/// The lines of `text`, numbered from 1.
pub(crate) fn lines(text: &str) -> Lines<'_> {
    Lines { rest: if text.is_empty() { None } else { Some(text) }, no: 0 }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let rest = self.rest?;
        self.no += 1;
        match rest.find('\n') {
            Some(i) => {
                let tail = &rest[i + 1..];
                self.rest = if tail.is_empty() { None } else { Some(tail) };
                Some((self.no, &rest[..i]))
            }
            None => {
                self.rest = None;
                Some((self.no, rest))
            }
        }
    }
}

/// Number of lines `text` has, as [`lines`] counts them (for errors at the end of input).
pub(crate) fn line_count(text: &str) -> usize {
    lines(text).count()
}

/// `s` shortened for an error message, cut on a char boundary.
pub(crate) fn quote(s: &str) -> String {
    if s.len() <= QUOTE_MAX {
        return format!("`{s}`");
    }
    let mut end = QUOTE_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("`{}…`", &s[..end])
}

/// Strict unsigned decimal: one or more ASCII digits, no sign, no spaces.
pub(crate) fn dec_u64(tok: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    digits_u64(tok.as_bytes(), 10).ok_or_else(|| {
        ParseError::new(line, format!("{what}: {} is not an unsigned decimal number", quote(tok)))
    })
}

/// Strict unsigned decimal that must fit a `u32`.
pub(crate) fn dec_u32(tok: &str, line: usize, what: &str) -> Result<u32, ParseError> {
    let v = dec_u64(tok, line, what)?;
    u32::try_from(v).map_err(|_| ParseError::new(line, format!("{what}: {v} does not fit 32 bits")))
}

/// Strict signed decimal (`-` allowed, `+` not) that must fit an `i64`.
pub(crate) fn dec_i64(tok: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    let bad = || ParseError::new(line, format!("{what}: {} is not a decimal number", quote(tok)));
    match tok.strip_prefix('-') {
        Some(abs) => {
            let m = digits_u64(abs.as_bytes(), 10).ok_or_else(bad)?;
            if m <= i64::MAX as u64 + 1 {
                Ok((m as i128).wrapping_neg() as i64)
            } else {
                Err(bad())
            }
        }
        None => {
            let m = digits_u64(tok.as_bytes(), 10).ok_or_else(bad)?;
            i64::try_from(m).map_err(|_| bad())
        }
    }
}

/// Strict signed decimal that must fit an `i32`.
pub(crate) fn dec_i32(tok: &str, line: usize, what: &str) -> Result<i32, ParseError> {
    let v = dec_i64(tok, line, what)?;
    i32::try_from(v).map_err(|_| ParseError::new(line, format!("{what}: {v} does not fit 32 bits")))
}

/// Hexadecimal digits (either case, no `0x`) as a `u64`.
pub(crate) fn hex_u64(tok: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    digits_u64(tok.as_bytes(), 16)
        .ok_or_else(|| ParseError::new(line, format!("{what}: {} is not a hexadecimal number", quote(tok))))
}

/// Digits in `radix` (10 or 16) → value; `None` if empty, a non-digit, or overflow.
pub(crate) fn digits_u64(bytes: &[u8], radix: u32) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in bytes {
        let d = (b as char).to_digit(radix)?;
        v = v.checked_mul(u64::from(radix))?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// An unsigned decimal exactly as `printf("%u")` writes it: ASCII digits, no sign, no leading
/// zero unless the number is `0`. `None` otherwise or on overflow. Parsers that promise
/// `render(parse(x)) == x` for every accepted `x` use this instead of [`digits_u64`].
pub(crate) fn printf_u64(bytes: &[u8]) -> Option<u64> {
    printf_digits(bytes, 10)
}

/// An unsigned hexadecimal exactly as `printf("%lx")` writes it: lowercase digits, no leading
/// zero unless the number is `0`. `None` otherwise or on overflow.
pub(crate) fn printf_hex_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    printf_digits(bytes, 16)
}

/// Digits in `radix` without the leading zeros printf never writes.
fn printf_digits(bytes: &[u8], radix: u32) -> Option<u64> {
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    digits_u64(bytes, radix)
}

/// Byte index of the first ASCII byte `b` in `s` at or after `from` (a plain loop: the
/// distances in trace lines are short, where `memchr`'s setup costs more than it saves).
#[inline]
pub(crate) fn find_byte(s: &str, from: usize, b: u8) -> Option<usize> {
    s.as_bytes().get(from..)?.iter().position(|&c| c == b).map(|i| i + from)
}

/// Splits `s` on the ASCII byte `sep` (like `str::split`, without the searcher overhead).
pub(crate) fn split_byte(s: &str, sep: u8) -> SplitByte<'_> {
    SplitByte { rest: Some(s), sep }
}

/// Iterator of [`split_byte`].
pub(crate) struct SplitByte<'a> {
    rest: Option<&'a str>,
    sep: u8,
}

impl<'a> Iterator for SplitByte<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match find_byte(rest, 0, self.sep) {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Writes `s` right-aligned in `width` bytes (`%Ns`).
pub(crate) fn pad_left(f: &mut impl fmt::Write, s: &str, width: usize) -> fmt::Result {
    spaces(f, width.saturating_sub(s.len()))?;
    f.write_str(s)
}

/// Writes `s` left-aligned in `width` bytes (`%-Ns`).
pub(crate) fn pad_right(f: &mut impl fmt::Write, s: &str, width: usize) -> fmt::Result {
    f.write_str(s)?;
    spaces(f, width.saturating_sub(s.len()))
}

/// Writes `n` spaces.
pub(crate) fn spaces(f: &mut impl fmt::Write, mut n: usize) -> fmt::Result {
    const SP: &str = "                                ";
    while n > 0 {
        let k = n.min(SP.len());
        f.write_str(&SP[..k])?;
        n -= k;
    }
    Ok(())
}

/// Parses the common `Node %d, zone %8s` head of a line from its whitespace tokens and returns
/// `(node, zone)`. The zone token keeps any trailing `,` (pagetypeinfo's free table has one).
pub(crate) fn node_zone<'a>(
    toks: &mut std::str::SplitAsciiWhitespace<'a>,
    line: usize,
) -> Result<(u32, &'a str), ParseError> {
    expect_tok(toks, "Node", line)?;
    let node_tok = toks.next().ok_or_else(|| ParseError::new(line, "line ends after `Node`"))?;
    let node_digits = node_tok.strip_suffix(',').ok_or_else(|| {
        ParseError::new(line, format!("expected `<node>,` after `Node`, found {}", quote(node_tok)))
    })?;
    let node = dec_u32(node_digits, line, "node id")?;
    expect_tok(toks, "zone", line)?;
    let zone = toks.next().ok_or_else(|| ParseError::new(line, "line ends after `zone` (no zone name)"))?;
    Ok((node, zone))
}

/// Takes the next token and checks that it is `want`.
pub(crate) fn expect_tok(
    toks: &mut std::str::SplitAsciiWhitespace<'_>,
    want: &str,
    line: usize,
) -> Result<(), ParseError> {
    match toks.next() {
        Some(t) if t == want => Ok(()),
        Some(t) => Err(ParseError::new(line, format!("expected `{want}`, found {}", quote(t)))),
        None => Err(ParseError::new(line, format!("line ends where `{want}` was expected"))),
    }
}

/// Error for an empty file.
pub(crate) fn empty_input() -> ParseError {
    ParseError::new(1, "empty input")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_numbering_and_final_newline() {
        let v: Vec<_> = lines("a\n\nb\n").collect();
        assert_eq!(v, vec![(1, "a"), (2, ""), (3, "b")]);
        let v: Vec<_> = lines("a\nb").collect();
        assert_eq!(v, vec![(1, "a"), (2, "b")]);
        assert_eq!(lines("").count(), 0);
        assert_eq!(lines("\n").collect::<Vec<_>>(), vec![(1, "")]);
    }

    #[test]
    fn strict_numbers() {
        assert_eq!(dec_u64("0", 1, "x"), Ok(0));
        assert_eq!(dec_u64("18446744073709551615", 1, "x"), Ok(u64::MAX));
        assert!(dec_u64("18446744073709551616", 1, "x").is_err());
        assert!(dec_u64("+1", 1, "x").is_err());
        assert!(dec_u64("", 1, "x").is_err());
        assert!(dec_u64("-1", 1, "x").is_err());
        assert_eq!(dec_i64("-9223372036854775808", 1, "x"), Ok(i64::MIN));
        assert!(dec_i64("-9223372036854775809", 1, "x").is_err());
        assert!(dec_i64("-", 1, "x").is_err());
        assert_eq!(dec_i32("-2147483648", 1, "x"), Ok(i32::MIN));
        assert!(dec_i32("2147483648", 1, "x").is_err());
        assert_eq!(hex_u64("ffFF", 1, "x"), Ok(0xffff));
        assert_eq!(printf_u64(b"0"), Some(0));
        assert_eq!(printf_u64(b"10"), Some(10));
        assert_eq!(printf_u64(b"010"), None);
        assert_eq!(printf_u64(b""), None);
        assert_eq!(printf_u64(b"-1"), None);
        assert!(hex_u64("0x1", 1, "x").is_err());
    }

    #[test]
    fn byte_helpers() {
        assert_eq!(find_byte("a:b:c", 2, b':'), Some(3));
        assert_eq!(find_byte("abc", 9, b':'), None);
        assert_eq!(split_byte("a  b", b' ').collect::<Vec<_>>(), ["a", "", "b"]);
        assert_eq!(split_byte("", b'|').collect::<Vec<_>>(), [""]);
        assert_eq!(split_byte("x|", b'|').collect::<Vec<_>>(), ["x", ""]);
    }

    #[test]
    fn padding_counts_bytes() {
        let mut s = String::new();
        pad_left(&mut s, "é", 4).unwrap();
        assert_eq!(s, "  é");
        s.clear();
        pad_right(&mut s, "ab", 1).unwrap();
        assert_eq!(s, "ab");
        s.clear();
        spaces(&mut s, 70).unwrap();
        assert_eq!(s.len(), 70);
    }

    #[test]
    fn quote_truncates_on_char_boundary() {
        let long = "é".repeat(50);
        let q = quote(&long);
        assert!(q.len() < 50);
    }
}
