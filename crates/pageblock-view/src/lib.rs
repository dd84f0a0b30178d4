//! # pageblock-view: pageblock maps and reports
//!
//! What both the simulator (`pageblock-lab`: `show map`, `lab thp`, `replay`) and the live
//! inspector (`pageblock-live`: `inspect`, its watch) draw: a pageblock's state
//! ([`BlockKind`], from a [`PageTally`]), self-contained HTML pages ([`html`]) and the
//! terminal map ([`terminal`]); and a figure over several runs ([`Spread`]). It knows
//! neither where the pages were counted nor how.

pub mod block_kind;
pub mod html;
pub mod spread;
pub mod terminal;

pub use block_kind::{BlockKind, PageTally};
pub use spread::Spread;
