//! Progress of long runs on stderr (hidden when stderr is not a terminal, so that output
//! redirected to a file or a pipe stays clean and stdout is never touched).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over `total` operations, drawn on stderr only if it is a terminal.
pub fn bar(total: u64, label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {human_pos}/{human_len} ops ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_owned());
    bar
}

/// A counter of bytes for a stream of unknown length, drawn on stderr only if it is a
/// terminal; the message says what else is worth seeing.
pub fn bytes(label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {prefix}: {bytes} of text ({binary_bytes_per_sec}), {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix(label.to_owned());
    bar
}

/// A progress bar over the `total` bytes of a file (a spinner when the size is unknown),
/// drawn on stderr only if it is a terminal.
pub fn bytes_bar(total: Option<u64>, label: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template = match total {
        Some(_) => "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})",
        None => "{spinner} {msg} {bytes}",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_owned());
    bar
}
