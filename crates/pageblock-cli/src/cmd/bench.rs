//! `pageblock bench fastpath`: the run with its progress bar, its table
//! (`pageblock_bench::fastpath::table`) and optional JSON.

use pageblock_bench::fastpath::{self, FastpathConfig};

use crate::cli::FastpathArgs;

/// Run the benchmark and return the text to print.
pub fn fastpath(args: &FastpathArgs) -> Result<String, String> {
    if args.reps == 0 {
        return Err("--reps must be at least 1".to_owned());
    }
    let base = if args.smoke { FastpathConfig::smoke() } else { FastpathConfig::default() };
    let memmap_layout = match args.struct_page_bytes {
        Some(bytes) => super::memmap_records(bytes)?,
        None => base.memmap_layout,
    };
    let reps = if args.smoke { base.reps } else { args.reps };
    let cfg = FastpathConfig { reps, memmap_layout, ..base };
    let json = crate::output::create_output(args.json.as_deref())?;
    let bar = crate::progress::bar(cfg.reps as u64, "repetitions");
    let report = fastpath::run(&cfg, &mut |done, _| bar.set_position(done as u64));
    bar.finish_and_clear();
    let report = report?;
    if let Some(out) = json {
        out.write_json(&crate::meta::RunMeta::of_this_process().with(&report))?;
    }
    Ok(fastpath::table::render(&cfg, &report))
}
