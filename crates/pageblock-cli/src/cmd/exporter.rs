//! `pageblock exporter`: this machine's fragmentation as Prometheus metrics, served by
//! `pageblock_live::exporter`.

use pageblock_live::exporter::{self, ExporterConfig};

use crate::cli::ExporterArgs;

/// Serve until killed; with `--once`, one scrape's text.
pub fn run(args: &ExporterArgs) -> Result<String, String> {
    exporter::run(&ExporterConfig {
        listen: args.listen.clone(),
        proc: args.proc.clone(),
        once: args.once,
        cache_seconds: args.cache_seconds,
        no_kpageflags: args.no_kpageflags,
        workers: args.workers,
    })
}
