//! `pageblock inspect --watch`: a sample every interval, at a fixed rate, until `--count`
//! samples or a signal. Each sample is printed as one line and, with `--json`, added to the
//! file ([`super::samples`]: `{"meta": ..., "samples": [...]}`, valid JSON after every
//! sample); `--html` is written at the end, from a bounded history. After
//! SIGINT or SIGTERM everything collected is written and the status is 128 + the signal.

use std::io::Write as _;
use std::time::{Duration, Instant};

use pageblock_live::inspect::{self, History, Inspection};

use super::samples::SampleFile;
use super::ticks::next_tick;
use crate::cli::InspectArgs;
use crate::meta::RunMeta;
use crate::output::OutputFile;
use crate::signals;

/// Watch until done; the signal that stopped it, if one did.
pub fn run(args: &InspectArgs, every: f64) -> Result<Option<i32>, String> {
    let interval = Duration::try_from_secs_f64(every)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--watch {every}: the interval must be a positive number of seconds"))?;
    // Fail on an unwritable path now, not at the first sample.
    let meta = serde_json::to_string(&RunMeta::of_this_process()).map_err(|e| e.to_string())?;
    let mut json = args.json.as_deref().map(|p| SampleFile::new(p, meta)).transpose()?;
    crate::output::create_output(args.html.as_deref())?;
    signals::defer();
    let start = Instant::now();
    let mut history = History::new(args.keep_maps);
    let mut last = None;
    let mut sample = || -> Result<bool, String> {
        let at = start.elapsed().as_secs_f64();
        let report = inspect::inspect(&args.proc).map_err(|e| e.to_string())?;
        history.push(&report);
        if let Some(json) = &mut json {
            json.push(&serde_json::to_string(&report).map_err(|e| e.to_string())?)?;
        }
        let line = summary_line(at, &report);
        last = Some(report);
        // A closed stdout (`| head`) ends the watch like a signal would.
        let mut stdout = std::io::stdout().lock();
        Ok(writeln!(stdout, "{line}").and_then(|()| stdout.flush()).is_ok())
    };
    let mut taken = 0u64;
    let outcome = loop {
        match sample() {
            Ok(true) => taken += 1,
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
        if args.count.is_some_and(|n| taken >= n)
            || !signals::sleep_until(next_tick(start, interval, Instant::now()))
        {
            break Ok(());
        }
    };
    if let (Some(path), Some(last)) = (&args.html, &last) {
        OutputFile::create(path)?.write_text(&last.html(Some(&history)))?;
    }
    outcome.map(|()| signals::received())
}

/// One sample as a line: when it started, and per zone its whole free, THP and
/// mixed pageblocks (or buddyinfo's whole free blocks without kpageflags).
fn summary_line(t: f64, report: &Inspection) -> String {
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
    line
}
