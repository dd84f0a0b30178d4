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

/// A recording's progress: a counter of the trace text streamed (a stream of unknown length)
/// and the compressed size, drawn on stderr only if it is a terminal.
pub struct Recording(ProgressBar);

impl Recording {
    /// The counter, at zero.
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} {prefix}: {bytes} of text ({binary_bytes_per_sec}), {msg}",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix("recording");
        Recording(bar)
    }
}

impl pageblock_live::record::Progress for Recording {
    fn update(&self, text_bytes: u64, compressed_bytes: u64) {
        self.0.set_position(text_bytes);
        self.0.set_message(format!("{} KiB compressed", compressed_bytes >> 10));
    }

    fn note(&self, line: &str) {
        self.0.suspend(|| eprintln!("{line}"));
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
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
