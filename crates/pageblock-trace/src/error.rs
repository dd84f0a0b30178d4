//! [`TraceError`]: what went wrong reading a trace, and where (`FILE:LINE: reason`).

use std::fmt;

/// A trace that could not be read: a malformed line, or a file that could not be opened or
/// decompressed. One pointer wide, so that the reader's `Result`s stay small.
#[derive(Debug)]
pub struct TraceError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    file: String,
    line: Option<u64>,
    reason: String,
    source: Option<std::io::Error>,
}

impl TraceError {
    /// A malformed line.
    pub fn bad_line(file: &str, line: u64, reason: impl Into<String>) -> Self {
        TraceError(Box::new(Inner {
            file: file.to_owned(),
            line: Some(line),
            reason: reason.into(),
            source: None,
        }))
    }

    /// An I/O error (open, read, decompress).
    pub fn io(file: &str, error: std::io::Error) -> Self {
        let reason = error.to_string();
        TraceError(Box::new(Inner { file: file.to_owned(), line: None, reason, source: Some(error) }))
    }

    /// Something about the whole file.
    pub fn whole_file(file: &str, reason: impl Into<String>) -> Self {
        TraceError(Box::new(Inner { file: file.to_owned(), line: None, reason: reason.into(), source: None }))
    }

    /// A compressed file that ends inside compressed data after line `lines`: `more` says
    /// what of it can be read.
    pub fn truncated(file: &str, error: std::io::Error, lines: u64, more: &str) -> Self {
        let reason = format!("{error} after line {lines}; {more}");
        TraceError(Box::new(Inner { file: file.to_owned(), line: None, reason, source: Some(error) }))
    }

    /// The file, as the user named it.
    pub fn file(&self) -> &str {
        &self.0.file
    }

    /// The 1-based line number, for errors about one line.
    pub fn line(&self) -> Option<u64> {
        self.0.line
    }

    /// What is wrong, in words a user can act on.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.line {
            Some(line) => write!(f, "{}:{line}: {}", self.0.file, self.0.reason),
            None => write!(f, "{}: {}", self.0.file, self.0.reason),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_ref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_line_reason() {
        let e = TraceError::bad_line("t.txt", 7, "bad");
        assert_eq!((e.file(), e.line(), e.reason()), ("t.txt", Some(7), "bad"));
        assert_eq!(e.to_string(), "t.txt:7: bad");
        assert_eq!(std::mem::size_of::<TraceError>(), std::mem::size_of::<usize>());
        let e = TraceError::io("t.zst", std::io::Error::other("truncated zstd stream"));
        assert_eq!(e.to_string(), "t.zst: truncated zstd stream");
        assert!(std::error::Error::source(&e).is_some());
    }
}
