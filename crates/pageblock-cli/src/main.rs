//! `pageblock`: the command-line front end of the pageblock lab.
//!
//! Exit codes: 0 success, 1 a run failed (bad configuration, I/O — including a failed write
//! to stdout), 2 bad usage (from clap), 128 + the signal after SIGINT or SIGTERM. A closed
//! pipe on stdout (`| head`) is not a failure.

mod cli;
mod cmd;
mod meta;
mod output;
mod progress;
mod signals;
mod size;
mod spec;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if let cli::Command::Demo(_)
    | cli::Command::Show(_)
    | cli::Command::Bench(_)
    | cli::Command::Lab(cli::LabCommand::Seeds(_) | cli::LabCommand::Thp(_))
    | cli::Command::Replay(_)
    | cli::Command::Inspect(_) = &cli.command
    {
        if let Err(e) = signals::install() {
            eprintln!("pageblock: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match &cli.command {
        cli::Command::Demo(args) => cmd::demo::run(args),
        cli::Command::Show(args) => cmd::show::run(args),
        cli::Command::Bench(cli::BenchCommand::Fastpath(args)) => cmd::bench::fastpath(args),
        cli::Command::Lab(cli::LabCommand::Seeds(args)) => cmd::lab::seeds(args),
        cli::Command::Lab(cli::LabCommand::Thp(args)) => cmd::lab::thp(args),
        cli::Command::Lab(cli::LabCommand::Real(args)) => return cmd::real::main(args),
        cli::Command::Lab(cli::LabCommand::RealWorker(c)) => return cmd::real::worker(c),
        cli::Command::Replay(args) => cmd::replay::run(args),
        cli::Command::Record(args) => return cmd::record::main(args),
        cli::Command::Trace(cli::TraceCommand::Stats(args)) => cmd::trace::stats(args),
        cli::Command::Inspect(args) => return cmd::inspect::main(args),
        cli::Command::Exporter(args) => cmd::exporter::run(args),
    };
    finish(result)
}

/// Print a command's text, or its error; the exit status.
fn finish(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                // A closed pipe (`| head`) means the reader has what it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pageblock: writing to stdout: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("pageblock: {e}");
            ExitCode::FAILURE
        }
    }
}
