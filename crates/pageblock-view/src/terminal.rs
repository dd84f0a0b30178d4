//! The pageblock map on a terminal: one character per pageblock, as `show map` and
//! `inspect --map` print it.

use std::fmt::Write as _;

use crate::html::MAP_COLUMNS;
use crate::BlockKind;

/// A pageblock map for a terminal: one character per pageblock, [`MAP_COLUMNS`] per line.
/// With `colour`, a full block in each state's colour (24-bit ANSI); without, a letter per
/// state (`.` free, `T` THP, `m` movable, `U` unmovable, `X` mixed, `H` hugetlb, `-` not
/// managed, ` ` hole).
pub fn terminal_map(label: &str, kinds: &[BlockKind], colour: bool) -> String {
    let mut out = format!("{label}\n");
    for row in kinds.chunks(MAP_COLUMNS) {
        for &k in row {
            let (letter, hex) = match k {
                BlockKind::Free => ('.', "dcedc8"),
                BlockKind::Thp => ('T', "2e7d32"),
                BlockKind::Movable => ('m', "64b5f6"),
                BlockKind::Unmovable => ('U', "e57373"),
                BlockKind::Mixed => ('X', "ffb300"),
                BlockKind::Hugetlb => ('H', "7e57c2"),
                BlockKind::NotManaged => ('-', "90a4ae"),
                BlockKind::Hole => (' ', "eeeeee"),
            };
            if colour {
                let v = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
                let _ = write!(out, "\x1b[38;2;{};{};{}m\u{2588}", v(0), v(2), v(4));
            } else {
                out.push(letter);
            }
        }
        if colour {
            out.push_str("\x1b[0m");
        }
        out.push('\n');
    }
    out
}

/// Each labelled map by [`terminal_map`], then the [`TERMINAL_LEGEND`].
pub fn terminal_maps<'a>(maps: impl IntoIterator<Item = (String, &'a [BlockKind])>, colour: bool) -> String {
    let mut out: String =
        maps.into_iter().map(|(label, kinds)| terminal_map(&label, kinds, colour)).collect();
    out.push_str(TERMINAL_LEGEND);
    out
}

/// The legend of [`terminal_map`]'s letters.
pub const TERMINAL_LEGEND: &str =
    ". whole free   T THP   m movable only   U unmovable only   X mixed   H hugetlb   - not managed   (blank) no memory\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_map_has_a_character_per_pageblock() {
        let kinds = [BlockKind::Free, BlockKind::Mixed, BlockKind::Thp];
        assert_eq!(terminal_map("z", &kinds, false), "z\n.XT\n");
        let coloured = terminal_map("z", &kinds, true);
        assert_eq!(coloured.matches('\u{2588}').count(), 3);
        assert!(coloured.contains("\x1b[38;2;255;179;0m"), "mixed in amber");
    }
}
