//! `pageblock`: the command-line front end of the pageblock lab.
//!
//! Exit codes: 0 success, 1 a run failed (bad configuration, I/O), 2 bad usage (from clap).

mod cli;
mod cmd;
mod progress;
mod size;
mod spec;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Demo(args) => cmd::demo::run(args),
        cli::Command::Show(args) => cmd::show::run(args),
        cli::Command::Bench(cli::BenchCommand::Fastpath(args)) => cmd::bench::fastpath(args),
        cli::Command::Lab(cli::LabCommand::Seeds(args)) => cmd::lab::seeds(args),
        cli::Command::Trace(cli::TraceCommand::Stats(args)) => cmd::trace::stats(args),
    };
    match result {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pageblock: {e}");
            ExitCode::FAILURE
        }
    }
}
