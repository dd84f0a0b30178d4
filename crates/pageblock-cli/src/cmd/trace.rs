//! `pageblock trace stats FILE`: statistics of a real kernel trace, as text and JSON.

use std::fs::File;
use std::io::Write as _;
use std::time::Instant;

use pageblock_lab::trace::{Dialect, TraceReader, TraceStats};

use crate::cli::TraceStatsArgs;

/// Read the trace and return the summary to print.
pub fn stats(args: &TraceStatsArgs) -> Result<String, String> {
    let start = Instant::now();
    // Created before the work, so that a bad path fails at once, not after the whole trace.
    let json = match args.json.as_deref() {
        Some(path) => Some((path, File::create(path).map_err(|e| format!("{}: {e}", path.display()))?)),
        None => None,
    };
    let mut reader = TraceReader::open(&args.file).map_err(|e| e.to_string())?.skip_bad_lines(args.skip_bad);
    if args.perf {
        reader = reader.with_dialect(Dialect::PerfScript);
    }
    let input = reader.get_ref();
    let (progress, compression) = (input.progress(), input.compression());
    let bar = crate::progress::bytes_bar(input.size(), "reading");
    let stats = TraceStats::collect(&mut reader, &mut |_| bar.set_position(progress.bytes()));
    bar.finish_and_clear();
    let mut stats = stats.map_err(|e| e.to_string())?;
    stats.seconds = start.elapsed().as_secs_f64();
    if let Some((path, mut file)) = json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| e.to_string())?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(format!("trace           {} ({})\n{}", args.file.display(), compression.name(), stats.summary()))
}
