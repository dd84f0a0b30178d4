//! `pageblock inspect`: the live machine's pageblocks (or a snapshot's), once or, with
//! `--watch`, as a time series ([`watch`]).

mod samples;
mod ticks;
mod watch;

use std::process::ExitCode;

use pageblock_live::inspect;

use crate::cli::InspectArgs;

/// Inspect once, or watch; the exit status.
pub fn main(args: &InspectArgs) -> ExitCode {
    match args.watch {
        None => crate::finish(once(args)),
        Some(every) => match watch::run(args, every) {
            Ok(None) => ExitCode::SUCCESS,
            Ok(Some(signal)) => ExitCode::from(128u8.saturating_add(u8::try_from(signal).unwrap_or(0))),
            Err(e) => crate::finish(Err(e)),
        },
    }
}

/// One inspection: the summary (and maps) as text, JSON and HTML files as asked.
fn once(args: &InspectArgs) -> Result<String, String> {
    let json = crate::output::create_output(args.json.as_deref())?;
    let html = crate::output::create_output(args.html.as_deref())?;
    let report = inspect::inspect(&args.proc).map_err(|e| e.to_string())?;
    if let Some(out) = json {
        out.write_json(&crate::meta::RunMeta::of_this_process().with(&report))?;
    }
    if let Some(out) = html {
        out.write_text(&report.html(None))?;
    }
    let mut text = report.render();
    if args.map {
        let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
        let labelled = report.zones.iter().filter_map(|z| {
            z.content.as_ref().map(|c| (format!("\nNode {}, zone {}", z.node, z.zone), c.kinds.as_slice()))
        });
        text.push_str(&pageblock_view::terminal::terminal_maps(labelled, colour));
    }
    Ok(text)
}
