//! Streaming reader of ftrace (or `perf script`) text.

use std::io::BufRead;

use super::{Line, LineRef};
use crate::ParseError;

/// Which text a [`FtraceReader`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `/sys/kernel/tracing/trace` or `trace_pipe` text.
    #[default]
    Ftrace,
    /// `perf script` default output.
    PerfScript,
}

/// Reads trace text line by line, reusing one buffer; never loads the input whole.
///
/// As an [`Iterator`] it yields `Ok((line_no, Line))` (1-based line numbers) or a
/// [`ParseError`] for a line that does not parse (or is not UTF-8); iteration goes on after a
/// bad line, so a caller may count and skip them. An I/O error is yielded once, then the
/// iteration ends. [`FtraceReader::next_ref`] is the allocation-free variant.
#[derive(Debug)]
pub struct FtraceReader<R> {
    inner: R,
    buf: Vec<u8>,
    line_no: usize,
    dialect: Dialect,
    done: bool,
}

impl<R: BufRead> FtraceReader<R> {
    /// A reader of ftrace text.
    pub fn new(inner: R) -> Self {
        Self::with_dialect(inner, Dialect::Ftrace)
    }

    /// A reader of `perf script` text.
    pub fn perf_script(inner: R) -> Self {
        Self::with_dialect(inner, Dialect::PerfScript)
    }

    /// A reader of the given dialect.
    pub fn with_dialect(inner: R, dialect: Dialect) -> Self {
        FtraceReader { inner, buf: Vec::with_capacity(256), line_no: 0, dialect, done: false }
    }

    /// Number of the last line read (0 before the first).
    pub fn line_no(&self) -> usize {
        self.line_no
    }

    /// The next line, borrowing the reader's buffer: `None` at the end of input.
    pub fn next_ref(&mut self) -> Option<Result<(usize, LineRef<'_>), ParseError>> {
        if self.done {
            return None;
        }
        self.buf.clear();
        match self.inner.read_until(b'\n', &mut self.buf) {
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.done = true;
                return Some(Err(ParseError::new(self.line_no + 1, format!("read error: {e}"))));
            }
        }
        self.line_no += 1;
        let no = self.line_no;
        let bytes = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => return Some(Err(ParseError::new(no, format!("line is not valid UTF-8: {e}")))),
        };
        let parsed = match self.dialect {
            Dialect::Ftrace => LineRef::parse(text),
            Dialect::PerfScript => LineRef::parse_perf(text),
        };
        Some(parsed.map(|l| (no, l)).map_err(|e| e.at_line(no)))
    }
}

impl<R: BufRead> Iterator for FtraceReader<R> {
    type Item = Result<(usize, Line), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(|(no, l)| (no, l.to_line())))
    }
}
