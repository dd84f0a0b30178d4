//! Splitting a reader into lines without copying them.
//!
//! The splitter reads big chunks into a buffer of its own and hands out each line as a slice
//! of it; only the unfinished last line of a chunk is moved (to the front, before the next
//! read). Lines longer than [`MAX_LINE`] are cut there and flagged (the kernel's trace lines
//! are below 4 KiB; a longer one is garbage, and a file without newlines must not grow a
//! buffer without end).
//!
//! The splitter also tells whether a line is ASCII, from a check of each chunk as it is read
//! rather than of each line (most traces are ASCII from end to end; a line that is not must
//! still be valid UTF-8, which the decoder's strict path checks).

use std::io::{self, Read};

/// Longest line kept whole.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// The buffer: chunks of at least `BUF - MAX_LINE` bytes are read at a time.
const BUF: usize = 256 << 10;

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
    buf: Box<[u8]>,
    /// `buf[start..end]` is read and not handed out yet.
    start: usize,
    end: usize,
    /// `buf[start..ascii_to]` is ASCII, and `buf[ascii_to]` is not (when below `end`).
    ascii_to: usize,
    eof: bool,
    /// The rest of an overlong line, up to its `\n`, is to be dropped.
    skipping: bool,
}

/// Length of the ASCII prefix of `bytes` (`is_ascii` block by block, then the exact byte).
fn ascii_prefix(bytes: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let mut done = 0;
    for block in bytes.chunks(BLOCK) {
        if !block.is_ascii() {
            return done + block.iter().position(|b| !b.is_ascii()).unwrap_or(block.len());
        }
        done += block.len();
    }
    done
}

impl<R: Read> Lines<R> {
    /// Lines of `inner`.
    pub(crate) fn new(inner: R) -> Self {
        Lines {
            inner,
            buf: vec![0; BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            ascii_to: 0,
            eof: false,
            skipping: false,
        }
    }

    /// Calls `f` with the next line and returns its result, or `None` at the end of the
    /// input.
    pub(crate) fn next_line<T>(&mut self, f: impl FnOnce(Line<'_>) -> T) -> io::Result<Option<T>> {
        loop {
            let found = memchr::memchr(b'\n', &self.buf[self.start..self.end]).map(|k| self.start + k);
            let (line_end, next) = match found {
                Some(i) if self.skipping => {
                    self.skipping = false;
                    self.advance(i + 1);
                    continue;
                }
                Some(i) => (i, i + 1),
                None if self.skipping => {
                    self.advance(self.end);
                    if !self.fill()? {
                        return Ok(None);
                    }
                    continue;
                }
                None if self.end - self.start > MAX_LINE => {
                    self.skipping = true;
                    (self.end, self.end)
                }
                None if !self.eof => {
                    self.fill()?;
                    continue;
                }
                None if self.start == self.end => return Ok(None),
                None => (self.end, self.end),
            };
            let (start, cut) = (self.start, (line_end - self.start).min(MAX_LINE));
            let line = Line {
                bytes: &self.buf[start..start + cut],
                ascii: start + cut <= self.ascii_to,
                overlong: line_end - start > MAX_LINE || self.skipping,
            };
            let out = f(line);
            self.advance(next);
            return Ok(Some(out));
        }
    }

    /// Hands out `buf[..to]`.
    fn advance(&mut self, to: usize) {
        self.start = to;
        if self.ascii_to < to {
            self.ascii_to = to + ascii_prefix(&self.buf[to..self.end]);
        }
    }

    /// Moves what is left to the front and reads more; `false` at the end of the input.
    fn fill(&mut self) -> io::Result<bool> {
        self.buf.copy_within(self.start..self.end, 0);
        let (kept, ascii) = (self.end - self.start, self.ascii_to - self.start);
        (self.start, self.end, self.ascii_to) = (0, kept, ascii);
        let n = loop {
            match self.inner.read(&mut self.buf[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.end = kept + n;
        if self.ascii_to == kept {
            self.ascii_to = kept + ascii_prefix(&self.buf[kept..self.end]);
        }
        self.eof = n == 0;
        Ok(n > 0)
    }

    /// The reader.
    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `step` bytes per call.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn all(text: &[u8], step: usize) -> Vec<(Vec<u8>, bool)> {
        let mut lines = Lines::new(Trickle { bytes: text, step });
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
        for step in [1, 3, 8, 64, 4096] {
            assert_eq!(all(text.as_bytes(), step).len(), 300);
        }
        assert_eq!(ascii_prefix(b"abc\xffd"), 3);
        assert_eq!(ascii_prefix(&vec![b'x'; 10_000]), 10_000);
    }

    #[test]
    fn lines_across_reads() {
        let text = b"alpha\nbeta\n\ngamma";
        let want: Vec<(Vec<u8>, bool)> =
            [&b"alpha"[..], b"beta", b"", b"gamma"].iter().map(|l| (l.to_vec(), false)).collect();
        for step in [1, 2, 3, 5, 7, 64] {
            assert_eq!(all(text, step), want, "step {step}");
        }
        assert!(all(b"", 8).is_empty());
        assert_eq!(all(b"\n", 8), [(vec![], false)]);
        let many: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let got = all(many.as_bytes(), 100_000);
        assert_eq!(got.len(), 100_000);
        assert_eq!(got[99_999].0, b"line 99999");
    }

    #[test]
    fn overlong_lines_are_cut_and_flagged() {
        let mut text = vec![b'x'; MAX_LINE + 10];
        text.extend_from_slice(b"\nok\n");
        for step in [4096, BUF] {
            let got = all(&text, step);
            assert_eq!(got.len(), 2);
            assert_eq!((got[0].0.len(), got[0].1), (MAX_LINE, true));
            assert_eq!(got[1], (b"ok".to_vec(), false));
        }
        let tail = vec![b'y'; 3 * BUF];
        let got = all(&tail, 4096);
        assert_eq!(got.len(), 1);
        assert!(got[0].1);
        let exact = [vec![b'e'; MAX_LINE], b"\n".to_vec()].concat();
        assert!(!all(&exact, 4096)[0].1, "exactly MAX_LINE bytes is not overlong");
        assert!(!all(&exact[..MAX_LINE], 4096)[0].1, "nor at the end of the input");
        let mut whole = vec![b'z'; MAX_LINE + 1];
        whole.extend_from_slice(b"\nnext");
        let got = all(&whole, BUF);
        assert_eq!((got[0].0.len(), got[0].1, got.len()), (MAX_LINE, true, 2), "cut even when it fits");
        assert_eq!(got[1].0, b"next");
    }
}
