//! # pageblock-view: pageblock maps and reports
//!
//! What both the simulator (`pageblock-lab`: `show map`, `lab thp`, `replay`) and the live
//! inspector (`pageblock-live`: `inspect`, its watch) draw: a pageblock's state
//! ([`BlockKind`], from a [`PageTally`]), self-contained HTML pages ([`html`]) and the
//! terminal map ([`terminal`]). It knows neither where the pages were counted nor how.

pub mod block_kind;
pub mod html;
pub mod terminal;

pub use block_kind::{BlockKind, PageTally};
