//! `pageblock record`'s command line.

use std::path::PathBuf;

use clap::Args;

/// The kmem page events and every compaction event.
pub const DEFAULT_EVENTS: &str = "kmem:mm_page_alloc,kmem:mm_page_free,kmem:mm_page_free_batched,\
kmem:mm_page_alloc_zone_locked,kmem:mm_page_pcpu_drain,kmem:mm_page_alloc_extfrag,compaction:*";

/// Ring buffer per CPU, KiB: 64 MiB holds about half a million events per CPU, time for the
/// recorder to catch up after a burst.
pub const DEFAULT_BUFFER_KB: u64 = 64 * 1024;

/// `pageblock record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Directory to write (created; if it exists it must be empty): trace.txt.zst and
    /// before./after. snapshots of zoneinfo, pagetypeinfo, buddyinfo and vmstat. Default:
    /// pageblock-record-YYYYmmdd-HHMMSS in the current directory.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Ring buffer size per CPU in KiB while recording (restored afterwards).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUFFER_KB,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub buffer_size_kb: u64,
    /// Events to record, comma-separated: SYSTEM:EVENT, SYSTEM:* (or SYSTEM) for all of a
    /// system, or a bare EVENT name.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_EVENTS)]
    pub events: String,
    /// Take tracefs over even if someone else is tracing (their settings are restored
    /// afterwards, their buffered events are lost).
    #[arg(long)]
    pub force: bool,
    /// Restore the tracefs state a killed recording left changed, from its journal
    /// (/run/pageblock/record.state, or DIR/record.state of the recording's directory), and
    /// record nothing.
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["output", "force", "command"])]
    pub restore: Option<Option<PathBuf>>,
    /// The command to run while recording, after `--`; the recorder exits with its status.
    #[arg(value_name = "COMMAND", trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}
