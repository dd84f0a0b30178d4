//! The kernel's own line layout, read at fixed offsets.
//!
//! With the default options (irq-info on, no tgid), `trace_print_context()` writes
//! `%16s-%-7d [%03d] %c%c%c%c%c %5lu.%06lu: ` — as long as the pid has at most 7 digits, the
//! CPU at most 3 and the seconds at most 5, every field sits at the same offset on every
//! line and the event name starts at byte 51:
//!
//! ```text
//!       record2.sh-11292   [000] .....   495.119171: mm_page_alloc: page=…
//! 0               16      24 26   31    37   42    49 51
//! ```
//!
//! Checking those offsets (several bytes at a time) costs a fraction of finding the fields;
//! a line of another shape is left to [`super::prefix`]'s general reading. What this accepts
//! the general reading (and the strict parser) reads the same way.

use super::swar::{has_byte, padded_pid, usecs_at, word_at};

/// Where the event name starts in the kernel's layout.
pub(super) const EVENT_AT: usize = 51;

/// The comm's field (`%16s`, right-aligned) in the kernel's layout.
pub(super) const COMM_LEN: usize = 16;

/// The task field (`%16s-%-7d`) in the kernel's layout.
pub(super) const TASK_LEN: usize = 24;

/// The CPU and the timestamp (µs) of a line in the kernel's layout, or `None`.
#[inline]
pub(super) fn kernel_layout(line: &[u8]) -> Option<(u32, u64)> {
    let b = line.get(..EVENT_AT)?;
    let separators = [(24, b' '), (25, b'['), (29, b']'), (30, b' '), (36, b' '), (42, b'.'), (50, b' ')];
    if separators.iter().any(|&(i, c)| b[i] != c) || !padded_pid(&b[..TASK_LEN]) {
        return None;
    }
    // The first `[` must be the CPU field's (no `[` in the comm), flags must not contain a
    // space (they end at the first one).
    let comm_words = [0, 8, 16].map(|i| word_at(b, i));
    let flags = word_at(b, 31)? | 0xffff_ff00_0000_0000;
    if comm_words.iter().any(|w| w.is_none_or(|w| has_byte(w, b'['))) || has_byte(flags, b' ') {
        return None;
    }
    let cpu =
        b[26..29].iter().try_fold(0u32, |v, &c| c.is_ascii_digit().then(|| v * 10 + u32::from(c - b'0')))?;
    let secs = right_aligned(&b[37..42])?;
    let usecs = usecs_at(b, 43)?;
    Some((cpu, secs.saturating_mul(1_000_000).saturating_add(usecs)))
}

/// A `%5lu`: spaces, then at least one digit, to the end.
#[inline(always)]
fn right_aligned(b: &[u8]) -> Option<u64> {
    let digits = b.iter().position(|&c| c != b' ')?;
    b[digits..].iter().try_fold(0u64, |v, &c| c.is_ascii_digit().then(|| v * 10 + u64::from(c - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_lines_at_fixed_offsets() {
        let l = b"      record2.sh-11292   [000] .....   495.119171: mm_page_alloc: page=1";
        assert_eq!(kernel_layout(l), Some((0, 495_119_171)));
        assert_eq!(&l[EVENT_AT..EVENT_AT + 13], b"mm_page_alloc");
        let l = b" memfd:sealed-91-2769    [001] d..3.     0.000001: e: p";
        assert_eq!(kernel_layout(l), Some((1, 1)));
        assert_eq!(right_aligned(b"99999"), Some(99_999));
        assert_eq!(right_aligned(b"     "), None);
        assert_eq!(right_aligned(b"  4 5"), None);
    }

    #[test]
    fn other_shapes_are_declined() {
        for l in [
            &b"      record2.sh-11292   [000] ....   495.119171: e: p"[..],
            b"      record2.sh-11292   [000] .. ..   495.119171: e: p",
            b"      record2.sh-11292   [0a0] .....   495.119171: e: p",
            b"      rec[rd2.sh-11292   [000] .....   495.119171: e: p",
            b"      record2.sh-11292   [000] .....   495.11917x: e: p",
            b"      record2.sh-11292   [000] ..... 123456.119171: e: p",
            b"      record2.sh-11292   [000] .....   495.119171:e: p",
            b"      record2.sh 11292   [000] .....   495.119171: e: p",
            b"            bash-2783    (   2783) [000] .....   123.000007: e: p",
            b"      record2.sh-11292   [000] .....   495.119171:",
        ] {
            assert_eq!(kernel_layout(l), None, "{}", String::from_utf8_lossy(l));
        }
    }
}
