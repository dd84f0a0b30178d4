//! `pageblock record -- COMMAND`: its command line, and its exit code. The recording itself
//! is `pageblock_live::record`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pageblock_live::record::{self, Failure, RecordConfig, DEFAULT_BUFFER_KB, DEFAULT_EVENTS};

use crate::progress::Recording;

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

/// Records (or restores); the exit code is the recorded command's (see
/// `pageblock_live::record::run`), or the failure's.
pub fn main(args: &RecordArgs) -> ExitCode {
    let result = match &args.restore {
        Some(dir) => record::restore::run(dir.as_deref()).map(|()| 0).map_err(Failure::from),
        None => record::run(&config(args), Box::new(Recording::new())),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("pageblock: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}

fn config(args: &RecordArgs) -> RecordConfig {
    RecordConfig {
        output: args.output.clone(),
        buffer_size_kb: args.buffer_size_kb,
        events: args.events.clone(),
        force: args.force,
        command: args.command.clone(),
    }
}
