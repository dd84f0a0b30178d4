//! `pageblock inspect`: the live machine's pageblocks (or a snapshot's).

use std::io::Write as _;
use std::time::Duration;

use pageblock_lab::inspect::{self, Inspection};
use serde::Serialize;

use crate::cli::InspectArgs;

/// Every sample of a `--watch` run.
#[derive(Serialize)]
struct Samples<'a> {
    samples: &'a [Inspection],
}

/// Inspect once (the summary is returned) or, with `--watch`, print a line per sample.
pub fn run(args: &InspectArgs) -> Result<String, String> {
    let json = crate::output::create_output(args.json.as_deref())?;
    let html = crate::output::create_output(args.html.as_deref())?;
    let once = || inspect::inspect(&args.proc).map_err(|e| e.to_string());
    let Some(every) = args.watch else {
        let report = once()?;
        if let Some(out) = json {
            out.write_json(&report)?;
        }
        if let Some(out) = html {
            out.write_text(&report.html(&[]))?;
        }
        let mut text = report.render();
        if args.map {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
            for z in &report.zones {
                if let Some(c) = &z.content {
                    let label = format!("\nNode {}, zone {}", z.node, z.zone);
                    text.push_str(&pageblock_lab::html::terminal_map(&label, &c.kinds, colour));
                }
            }
            text.push_str(pageblock_lab::html::TERMINAL_LEGEND);
        }
        return Ok(text);
    };
    if !(every.is_finite() && every > 0.0) {
        return Err(format!("--watch {every}: the interval must be a positive number of seconds"));
    }
    let mut samples = Vec::new();
    let start = std::time::Instant::now();
    let mut stdout = std::io::stdout().lock();
    loop {
        let report = once()?;
        let t = start.elapsed().as_secs_f64();
        let mut line = format!("{t:9.3}s");
        for z in &report.zones {
            match &z.content {
                Some(c) => line.push_str(&format!(
                    "  {}:{} free {} thp {} mixed {} of {}",
                    z.node, z.zone, c.free_pageblocks, c.thp_pageblocks, c.mixed_pageblocks, c.pageblocks
                )),
                None => line.push_str(&format!(
                    "  {}:{} free {} (buddyinfo)",
                    z.node,
                    z.zone,
                    z.buddyinfo_free_pageblocks.map_or("?".into(), |n| n.to_string())
                )),
            }
        }
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
        samples.push(report);
        if args.count.is_some_and(|n| samples.len() as u64 >= n) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(every));
    }
    if let Some(out) = json {
        out.write_json(&Samples { samples: &samples })?;
    }
    if let (Some(out), Some(last)) = (html, samples.last()) {
        out.write_text(&last.html(&samples))?;
    }
    Ok(String::new())
}
