//! What a recording tells on stderr at the end, and the exit code it ends with.

use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::ExitStatus;

use super::signals;
use super::writer::TraceSummary;
use crate::tracefs::CpuStats;

/// The recorder's exit code: 128 + the first signal it caught (130 after Ctrl-C), else
/// the command's exit code, or 128 + the signal that killed it (as shells report).
pub fn exit_code(status: ExitStatus, caught: Option<i32>) -> u8 {
    let code = match (caught, status.code(), status.signal()) {
        (Some(signal), _, _) => 128 + signal,
        (None, Some(code), _) => code,
        (None, None, Some(signal)) => 128 + signal,
        (None, None, None) => 1,
    };
    u8::try_from(code & 0xff).unwrap_or(1)
}

/// How the command ended, in words.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by {}", signals::name(signal)),
        (None, None) => "ended".to_owned(),
    }
}

/// `n noun`, the noun in the plural unless `n` is 1.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// The closing report: how the command ended, events per name, sizes, losses.
pub fn render(
    trace: &Path,
    command: &str,
    status: ExitStatus,
    summary: &TraceSummary,
    cpus: &[CpuStats],
) -> String {
    let mut out = String::new();
    let c = &summary.counts;
    let _ = writeln!(out, "pageblock record: `{command}` {}", describe(status));
    let _ = writeln!(
        out,
        "pageblock record: {}: {}, {} of text, {} compressed",
        trace.display(),
        count(c.total_events(), "event"),
        mib(summary.text_bytes),
        mib(summary.compressed_bytes)
    );
    for (name, n) in &c.events {
        let _ = writeln!(out, "  {n:>12}  {name}");
    }
    if c.other_lines > 0 {
        let _ = writeln!(out, "  {:>12}  (other lines)", c.other_lines);
    }
    let overrun: u64 = cpus.iter().map(|s| s.overrun + s.dropped).sum();
    let per_cpu: Vec<String> =
        cpus.iter().map(|s| format!("cpu{} {}", s.cpu, s.overrun + s.dropped)).collect();
    let uncounted =
        if c.lost_uncounted > 0 { format!(" and {} uncounted", c.lost_uncounted) } else { String::new() };
    let _ = writeln!(
        out,
        "pageblock record: lost events: {}{uncounted} in {}; ring buffer overrun per CPU: {}",
        c.lost_events,
        count(c.lost_lines, "[LOST] line"),
        per_cpu.join(", ")
    );
    if c.lost_lines > 0 || overrun > 0 {
        let _ = writeln!(
            out,
            "pageblock record: WARNING: the trace is incomplete; a larger --buffer-size-kb or fewer --events helps"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(raw: i32) -> ExitStatus {
        ExitStatus::from_raw(raw)
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(exit_code(status(0), None), 0);
        assert_eq!(exit_code(status(3 << 8), None), 3);
        assert_eq!(exit_code(status(libc::SIGKILL), None), 137, "killed by SIGKILL");
        assert_eq!(exit_code(status(0), Some(libc::SIGINT)), 130, "Ctrl-C wins over the command's 0");
        assert_eq!(exit_code(status(libc::SIGINT), Some(libc::SIGTERM)), 143);
        assert_eq!(describe(status(libc::SIGINT)), "was killed by SIGINT");
        assert_eq!(describe(status(1 << 8)), "exited with status 1");
    }

    #[test]
    fn the_report_names_every_event_and_warns_about_losses() {
        let mut summary =
            TraceSummary { text_bytes: 3 << 20, compressed_bytes: 1 << 19, ..TraceSummary::default() };
        summary.counts.events.insert("mm_page_alloc".into(), 10);
        summary.counts.events.insert("mm_page_free".into(), 7);
        let cpus = [CpuStats { cpu: 0, overrun: 0, dropped: 0 }, CpuStats { cpu: 1, overrun: 0, dropped: 0 }];
        let text = render(Path::new("d/trace.txt.zst"), "true", status(0), &summary, &cpus);
        assert!(text.contains("`true` exited with status 0"), "{text}");
        assert!(text.contains("d/trace.txt.zst: 17 events, 3.0 MiB of text, 0.5 MiB compressed"), "{text}");
        assert!(text.contains("            10  mm_page_alloc\n"), "{text}");
        assert!(
            text.contains("lost events: 0 in 0 [LOST] lines; ring buffer overrun per CPU: cpu0 0, cpu1 0")
        );
        assert!(!text.contains("WARNING"), "{text}");
        summary.counts.lost_lines = 1;
        summary.counts.lost_events = 99;
        let text = render(Path::new("t"), "true", status(0), &summary, &cpus);
        assert!(text.contains("lost events: 99 in 1 [LOST] line;") && text.contains("WARNING"), "{text}");
        summary.counts.events.clear();
        summary.counts.events.insert("mm_page_alloc".into(), 1);
        let text = render(Path::new("t"), "true", status(0), &summary, &cpus);
        assert!(text.contains("t: 1 event, "), "one event is not `1 events`: {text}");
    }
}
