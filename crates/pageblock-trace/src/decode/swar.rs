//! Word-at-a-time (SWAR) checks for the fast path: eight bytes of a line are compared,
//! classified or converted in a few integer operations, without a loop whose exit the branch
//! predictor would miss on every line. Every helper answers exactly what the byte-by-byte
//! code it replaces answers (tests compare them), or declines.

/// Eight bytes at `b[i..]` as a little-endian word (byte `i` lowest), if there are eight.
#[inline]
pub(super) fn word_at(b: &[u8], i: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(b.get(i..i + 8)?);
    Some(u64::from_le_bytes(w))
}

/// `0x80` in each byte of `w` that is an ASCII digit (for bytes below `0x80`).
#[inline]
pub(super) fn digit_bytes(w: u64) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // byte >= '0': (byte + 0x50) sets bit 7; byte <= '9': (byte + 0x46) leaves it clear.
    let ge = (w & !HIGH).wrapping_add(LOW * 0x50) & HIGH;
    let le = !(w & !HIGH).wrapping_add(LOW * 0x46) & HIGH;
    ge & le & !w
}

/// The six digits of `%06lu` at `b[i..i + 6]` followed by `:`, without a loop: the value,
/// or `None` if they are not six digits and a colon.
#[inline(always)]
pub(super) fn usecs_at(b: &[u8], i: usize) -> Option<u64> {
    let w = word_at(b, i)?;
    const SIX: u64 = 0x0000_8080_8080_8080;
    if digit_bytes(w) & SIX != SIX || (w >> 48) & 0xff != u64::from(b':') {
        return None;
    }
    // "00dddddd" in memory order, digit values, then pairs, quads and the whole (SWAR).
    let v = ((w << 16) | 0x3030) - 0x3030_3030_3030_3030;
    let v = (v * 10 + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v * 100 + (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((v * 10_000 + (v >> 32)) & 0xffff_ffff)
}

/// True if a byte of `w` is `b`.
#[inline]
pub(super) fn has_byte(w: u64, b: u8) -> bool {
    let x = w ^ (0x0101_0101_0101_0101 * u64::from(b));
    x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080 != 0
}

/// `a == b` for two slices of one length of at least 8 bytes, compared as four
/// (overlapping) words instead of a `memcmp` call; for kmem event names (at most 32 bytes).
#[inline]
pub(super) fn same_name(a: &[u8], b: &[u8]) -> bool {
    let n = b.len();
    if a.len() != n || !(8..=32).contains(&n) {
        return a == b;
    }
    [0, 8.min(n - 8), 16.min(n - 8), n - 8].into_iter().all(|i| word_at(a, i) == word_at(b, i))
}

/// The kernel's own `-%-7d` in the last eight bytes of `head`: a `-`, one to seven digits,
/// spaces to the seventh byte (checked a word at a time; any other shape: `false`, and
/// [`task_scan`] decides).
#[inline]
pub(super) fn padded_pid(head: &[u8]) -> bool {
    let Some(w) = head.len().checked_sub(8).and_then(|i| word_at(head, i)) else {
        return false;
    };
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // Bytes 1..8 of `w`, moved down one byte: digit flags, then space flags (a zero byte of
    // `y`, told without carries between bytes).
    let digits = digit_bytes(w) >> 8;
    let y = (w ^ 0x2020_2020_2020_2020) >> 8;
    let spaces = !(((y & LOW7) + LOW7) | y) & (HIGH >> 8);
    let n = (!digits & HIGH).trailing_zeros() / 8;
    let want_spaces = (HIGH >> 8) & !((1u64 << (8 * n)) - 1);
    w & 0xff == u64::from(b'-') && n >= 1 && spaces == want_spaces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::prefix::{task_scan, KMEM_NAMES};
    use pageblock_formats::ftrace::Dialect;

    #[test]
    fn six_digits_and_a_colon() {
        assert_eq!(usecs_at(b"119171: ", 0), Some(119_171));
        assert_eq!(usecs_at(b"000000:x", 0), Some(0));
        assert_eq!(usecs_at(b"999999:", 0), None, "needs eight bytes");
        for bad in [b"11917a: ", b"1191711:", b"119171 :", b"/19171: ", b"11917:: "] {
            assert_eq!(usecs_at(bad, 0), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn word_helpers() {
        assert!(
            has_byte(u64::from_le_bytes(*b"abcdefg["), b'[')
                && !has_byte(u64::from_le_bytes(*b"abcdefgh"), b'[')
        );
        for name in KMEM_NAMES {
            assert!(same_name(name, name));
            for i in 0..name.len() {
                let mut other = name.to_vec();
                other[i] ^= 1;
                assert!(!same_name(&other, name), "{i}");
            }
        }
        assert!(!same_name(b"mm_page_alloc", b"mm_page_free"));
    }

    #[test]
    fn padded_pids_agree_with_the_byte_scan() {
        for pid in ["1", "11292", "1234567"] {
            let head = format!("record2.sh-{pid:<7}");
            assert!(padded_pid(head.as_bytes()), "{head}");
        }
        for head in [
            &b"x-12345678"[..],
            b"x-       ",
            b"x-12 3   ",
            b"x-12\t   ",
            b"x 1      ",
            b"xx1      ",
            b"x-12 \xb3  ",
            b"x-\xb1     ",
            b"x-\xa0     ",
        ] {
            assert!(!padded_pid(head), "{}", String::from_utf8_lossy(head));
        }
        // Whenever the word check accepts, the byte scan does too.
        for head in [&b"a-0000000"[..], b"-9      ", b"(-42     ", b"-1      "] {
            assert!(padded_pid(head) && task_scan(head, Dialect::Ftrace));
        }
    }
}
