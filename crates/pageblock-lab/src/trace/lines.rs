//! Splitting a [`BufRead`] into lines without copying them.
//!
//! A line that lies whole in the reader's buffer is handed out in place; only a line that
//! straddles two buffer fills is copied into a carry buffer. Lines longer than
//! [`MAX_LINE`] are cut there and flagged (the kernel's trace lines are below 4 KiB; a
//! longer one is garbage, and a file without newlines must not grow a buffer without end).
//!
//! The splitter also tells whether a line is ASCII, from a check of the buffer ahead done
//! once per stretch rather than once per line (most traces are ASCII from end to end; a line
//! that is not must still be valid UTF-8, which the decoder's strict path checks).

use std::io::{self, BufRead};

/// Longest line kept whole.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// One line, without its `\n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// Its bytes (the first [`MAX_LINE`] if it was longer).
    pub bytes: &'a [u8],
    /// Every byte is ASCII.
    pub ascii: bool,
    /// It was longer than [`MAX_LINE`] and was cut.
    pub overlong: bool,
}

/// The lines of a reader, `\n`-separated; a missing final `\n` is tolerated.
pub(crate) struct Lines<R> {
    inner: R,
    carry: Vec<u8>,
    overlong: bool,
    /// How many bytes at the front of the reader's buffer are known to be ASCII.
    ascii_ahead: usize,
}

/// Length of the ASCII prefix of `buf` (`is_ascii` block by block, then the exact byte).
fn ascii_prefix(buf: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let mut done = 0;
    for block in buf.chunks(BLOCK) {
        if !block.is_ascii() {
            return done + block.iter().position(|b| !b.is_ascii()).unwrap_or(block.len());
        }
        done += block.len();
    }
    done
}

impl<R: BufRead> Lines<R> {
    /// Lines of `inner`.
    pub(crate) fn new(inner: R) -> Self {
        Lines { inner, carry: Vec::new(), overlong: false, ascii_ahead: 0 }
    }

    /// Calls `f` with the next line and returns its result, or `None` at the end of the
    /// input.
    pub(crate) fn next_line<T>(&mut self, f: impl FnOnce(Line<'_>) -> T) -> io::Result<Option<T>> {
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok((!self.carry.is_empty() || self.overlong).then(|| self.take_carry(f)));
            }
            let Some(i) = memchr::memchr(b'\n', buf) else {
                let n = buf.len();
                Self::append(&mut self.carry, &mut self.overlong, buf);
                self.consume(n);
                continue;
            };
            if !self.carry.is_empty() || self.overlong {
                Self::append(&mut self.carry, &mut self.overlong, &buf[..i]);
                self.consume(i + 1);
                return Ok(Some(self.take_carry(f)));
            }
            if self.ascii_ahead <= i {
                self.ascii_ahead = ascii_prefix(buf);
            }
            let line =
                Line { bytes: &buf[..i.min(MAX_LINE)], ascii: i < self.ascii_ahead, overlong: i > MAX_LINE };
            let out = f(line);
            self.consume(i + 1);
            return Ok(Some(out));
        }
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.ascii_ahead = self.ascii_ahead.saturating_sub(n);
    }

    fn append(carry: &mut Vec<u8>, overlong: &mut bool, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(carry.len());
        carry.extend_from_slice(&bytes[..bytes.len().min(room)]);
        *overlong |= bytes.len() > room;
    }

    fn take_carry<T>(&mut self, f: impl FnOnce(Line<'_>) -> T) -> T {
        let out = f(Line { bytes: &self.carry, ascii: self.carry.is_ascii(), overlong: self.overlong });
        self.carry.clear();
        self.overlong = false;
        out
    }

    /// The reader.
    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn all(text: &[u8], capacity: usize) -> Vec<(Vec<u8>, bool)> {
        let mut lines = Lines::new(BufReader::with_capacity(capacity, text));
        let mut out = Vec::new();
        while let Some(l) = lines
            .next_line(|l| {
                assert_eq!(l.ascii, l.bytes.is_ascii());
                (l.bytes.to_vec(), l.overlong)
            })
            .unwrap()
        {
            out.push(l);
        }
        out
    }

    #[test]
    fn ascii_flags_follow_the_bytes() {
        let text = "a\né\nb\nc\u{80}d\n\ne\n".repeat(50);
        for cap in [1, 3, 8, 64, 4096] {
            assert_eq!(all(text.as_bytes(), cap).len(), 300);
        }
        assert_eq!(ascii_prefix(b"abc\xffd"), 3);
        assert_eq!(ascii_prefix(&vec![b'x'; 10_000]), 10_000);
    }

    #[test]
    fn split_across_buffer_fills() {
        let text = b"alpha\nbeta\n\ngamma";
        let want: Vec<(Vec<u8>, bool)> =
            [&b"alpha"[..], b"beta", b"", b"gamma"].iter().map(|l| (l.to_vec(), false)).collect();
        for cap in [1, 2, 3, 5, 7, 64] {
            assert_eq!(all(text, cap), want, "capacity {cap}");
        }
        assert!(all(b"", 8).is_empty());
        assert_eq!(all(b"\n", 8), [(vec![], false)]);
    }

    #[test]
    fn overlong_lines_are_cut_and_flagged() {
        let mut text = vec![b'x'; MAX_LINE + 10];
        text.extend_from_slice(b"\nok\n");
        let got = all(&text, 4096);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0.len(), got[0].1), (MAX_LINE, true));
        assert_eq!(got[1], (b"ok".to_vec(), false));
        let tail = vec![b'y'; MAX_LINE + 1];
        assert!(all(&tail, 4096)[0].1);
        let mut whole = vec![b'z'; MAX_LINE + 1];
        whole.push(b'\n');
        assert_eq!(all(&whole, 4 * MAX_LINE)[0].0.len(), MAX_LINE, "cut even when it fits the buffer");
    }
}
