//! `pageblock trace stats FILE`: statistics of a real kernel trace, as text and JSON.

use crate::meta::RunMeta;
use pageblock_trace::{trace_file, Dialect, TraceReader, TraceStats};

use crate::cli::TraceStatsArgs;

/// Read the trace and return the summary to print.
pub fn stats(args: &TraceStatsArgs) -> Result<String, String> {
    let json = crate::output::create_output(args.json.as_deref())?;
    // A file, or a `pageblock record` directory.
    let file = trace_file(&args.file)?;
    let mut reader = TraceReader::open(&file).map_err(|e| e.to_string())?.skip_bad_lines(args.skip_bad);
    if args.perf {
        reader = reader.with_dialect(Dialect::PerfScript);
    }
    let input = reader.get_ref();
    let (progress, compression) = (input.progress(), input.compression());
    let bar = crate::progress::bytes_bar(input.size(), "reading");
    let stats = TraceStats::collect(&mut reader, &mut |_| bar.set_position(progress.bytes()));
    bar.finish_and_clear();
    let stats = stats.map_err(|e| e.to_string())?;
    if let Some(cut) = &stats.truncated {
        eprintln!("pageblock: warning: {cut}");
    }
    if let Some(out) = json {
        out.write_json(&RunMeta::of_this_process().with(&stats))?;
    }
    Ok(format!("trace           {} ({})\n{}", file.display(), compression.name(), stats.summary()))
}
