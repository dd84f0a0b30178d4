//! `/proc/swaps` (`swap_show()` in `mm/swapfile.c`): the swap areas in use, one line each
//! under a fixed header.
//!
//! ```text
//! Filename<4 tabs>Type<2 tabs>Size<2 tabs>Used<2 tabs>Priority
//! /var/tmp/swapfile<spaces to column 40>file<2 tabs>65532<2 tabs>0<2 tabs>-2
//! ```
//!
//! The path is escaped by the kernel (`seq_file_path` with `" \t\n\\"`: a space reads
//! `\040`), so a line splits on whitespace into exactly five fields. Sizes are KiB. A
//! machine without swap has the header alone; a kernel without `CONFIG_SWAP` has no file.

use crate::text;
use crate::ParseError;

/// The header line, as the kernel prints it.
pub const HEADER: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority";

/// One swap area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwapArea {
    /// Its path, as the kernel escaped it.
    pub filename: String,
    /// `file` or `partition`.
    pub kind: String,
    /// Size, KiB.
    pub size_kib: u64,
    /// In use, KiB.
    pub used_kib: u64,
    /// Priority (negative for areas given none).
    pub priority: i32,
}

/// The swap areas in use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swaps {
    /// Every area, in the file's order.
    pub areas: Vec<SwapArea>,
}

impl Swaps {
    /// Parses the file text. Fails (naming the line) without the header first, or on a line
    /// that is not five fields with numbers where the kernel prints them.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut lines = text::lines(text);
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((no, line)) => {
                return Err(ParseError::new(
                    no,
                    format!("{} is not the /proc/swaps header", text::quote(line)),
                ))
            }
            None => return Err(ParseError::new(1, "empty: /proc/swaps always has its header")),
        }
        let mut areas = Vec::new();
        for (no, line) in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [filename, kind, size, used, priority] = f[..] else {
                return Err(ParseError::new(
                    no,
                    format!("{}: a swap area is five fields, not {}", text::quote(line), f.len()),
                ));
            };
            areas.push(SwapArea {
                filename: filename.to_owned(),
                kind: kind.to_owned(),
                size_kib: text::dec_u64(size, no, "size")?,
                used_kib: text::dec_u64(used, no, "used")?,
                priority: text::dec_i32(priority, no, "priority")?,
            });
        }
        Ok(Swaps { areas })
    }

    /// Total size of the areas, KiB (saturating).
    pub fn size_kib(&self) -> u64 {
        self.areas.iter().fold(0u64, |a, s| a.saturating_add(s.size_kib))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_alone_is_no_swap() {
        assert_eq!(Swaps::parse(&format!("{HEADER}\n")).unwrap(), Swaps::default());
    }

    #[test]
    fn malformed_files_name_the_line() {
        let e = Swaps::parse("").unwrap_err();
        assert_eq!(e.line, 1);
        let e = Swaps::parse("Filename Type\n").unwrap_err();
        assert!(e.reason.contains("header"), "{e}");
        let e = Swaps::parse(&format!("{HEADER}\n/swap file 10 0\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("five fields, not 4"), "{e}");
        let e = Swaps::parse(&format!("{HEADER}\n/swap file 10 x -2\n")).unwrap_err();
        assert!(e.reason.contains("used"), "{e}");
    }

    #[test]
    fn sizes_add_up_without_overflow() {
        let line = format!("/a file {} 0 -2", u64::MAX);
        let s = Swaps::parse(&format!("{HEADER}\n{line}\n{line}\n")).unwrap();
        assert_eq!(s.size_kib(), u64::MAX);
    }
}
