//! The one error type of every parser in this crate.

use std::fmt;

/// A parse failure: which line (1-based, within the text handed to the parser) and why.
///
/// Callers that read files wrap it with the file name, so that the user sees
/// `file:line: reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number within the parsed text.
    pub line: usize,
    /// What was wrong, in words a user can act on.
    pub reason: String,
}

impl ParseError {
    /// A new error at `line` (1-based).
    pub fn new(line: usize, reason: impl Into<String>) -> Self {
        Self { line, reason: reason.into() }
    }

    /// The same error at another line: for parsers of one line or one field (which report
    /// line 1) whose caller knows where that line sits in a file.
    pub fn at_line(self, line: usize) -> Self {
        Self { line, ..self }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}
