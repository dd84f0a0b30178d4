//! Reads a trace (plain, gzip or zstd) through `TraceReader` and reports the decode rate:
//! the read + decompress + decode half of the replay pipeline, single-threaded.
//!
//! ```sh
//! cargo run --release -p pageblock-trace --example trace_read -- TRACE [REPEATS]
//! ```

use std::path::Path;
use std::time::Instant;

use pageblock_trace::TraceReader;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: trace_read TRACE [REPEATS]")?;
    let repeats: u32 = args.next().map_or(Ok(1), |s| s.parse())?;
    for _ in 0..repeats {
        let start = Instant::now();
        let mut reader = TraceReader::open(Path::new(&path))?;
        let (mut records, mut pfn_sum) = (0u64, 0u64);
        for item in &mut reader {
            let (_, r) = item?;
            records += 1;
            pfn_sum = pfn_sum.wrapping_add(r.pfn);
        }
        let secs = start.elapsed().as_secs_f64();
        let c = reader.counts();
        println!(
            "{} lines, {records} records, {} other, {} bad in {secs:.3} s: {:.2} M lines/s (pfn sum {pfn_sum:#x})",
            c.lines,
            c.other_events,
            c.bad_lines,
            c.lines as f64 / secs / 1e6
        );
    }
    Ok(())
}
