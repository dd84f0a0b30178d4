//! `buddyinfo.samples`: `/proc/buddyinfo` read again and again while a `lab real` run is
//! recorded, each copy after the time it was read. pageblock's own format, not a kernel file:
//!
//! ```text
//! time 14916.043
//! Node 0, zone      DMA      0      0 ...
//! Node 0, zone    DMA32     91     66 ...
//! time 14916.143
//! ...
//! ```
//!
//! `time` is `CLOCK_MONOTONIC` in seconds, the clock the trace's timestamps follow (tracefs'
//! default `local` clock), so a sample can be set beside the trace's events. Each copy is the
//! file as the kernel printed it ([`BuddyInfo`]). Times never go backwards.

use crate::buddyinfo::BuddyInfo;
use crate::text;
use crate::ParseError;

/// One reading of `/proc/buddyinfo`.
#[derive(Clone, Debug, PartialEq)]
pub struct BuddyInfoSample {
    /// When it was read: `CLOCK_MONOTONIC`, seconds.
    pub time_s: f64,
    /// What it said.
    pub buddyinfo: BuddyInfo,
}

/// The readings of one run, in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuddyInfoSamples {
    /// Every reading.
    pub samples: Vec<BuddyInfoSample>,
}

impl BuddyInfoSamples {
    /// The file text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.samples {
            out += &format!("time {:.3}\n", s.time_s);
            out += &s.buddyinfo.render();
        }
        out
    }

    /// Parses the file text. Fails (naming the line) on text before the first `time` line,
    /// a time that is not a finite number or goes backwards, a `time` line with no
    /// buddyinfo after it, or a malformed buddyinfo line. An empty file has no samples.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut samples = Vec::new();
        let mut cur: Option<Pending<'_>> = None;
        for (no, line) in text::lines(text) {
            if let Some(t) = line.strip_prefix("time ") {
                let time_s: f64 =
                    t.trim().parse().ok().filter(|t: &f64| t.is_finite() && *t >= 0.0).ok_or_else(|| {
                        ParseError::new(no, format!("`{}` is not a time in seconds", t.trim()))
                    })?;
                if cur.as_ref().is_some_and(|c| time_s < c.time_s) {
                    return Err(ParseError::new(no, "time goes backwards"));
                }
                if let Some(done) = cur.take() {
                    samples.push(done.finish()?);
                }
                cur = Some(Pending { time_s, at: no, lines: Vec::new() });
            } else {
                match &mut cur {
                    Some(p) => p.lines.push((no, line)),
                    None => return Err(ParseError::new(no, "buddyinfo before the first `time` line")),
                }
            }
        }
        if let Some(done) = cur {
            samples.push(done.finish()?);
        }
        Ok(BuddyInfoSamples { samples })
    }
}

/// A sample being read: its time, the line of its `time` line, its buddyinfo lines.
struct Pending<'a> {
    time_s: f64,
    at: usize,
    lines: Vec<(usize, &'a str)>,
}

impl Pending<'_> {
    fn finish(self) -> Result<BuddyInfoSample, ParseError> {
        let Some(&(first, _)) = self.lines.first() else {
            return Err(ParseError::new(self.at, "a `time` line with no buddyinfo after it"));
        };
        let body: String = self.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        let buddyinfo = BuddyInfo::parse(&body).map_err(|e| {
            let line = first + e.line - 1;
            e.at_line(line)
        })?;
        Ok(BuddyInfoSample { time_s: self.time_s, buddyinfo })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "time 10.000\n\
        Node 0, zone      DMA      1      0 \n\
        Node 0, zone    DMA32      5      2 \n\
        time 10.100\n\
        Node 0, zone      DMA      0      0 \n\
        Node 0, zone    DMA32      3      1 \n";

    #[test]
    fn samples_round_trip() {
        let s = BuddyInfoSamples::parse(TWO).unwrap();
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.samples[1].time_s, 10.1);
        assert_eq!(s.samples[1].buddyinfo.zone(0, "DMA32").unwrap().free_pages(), 5);
        assert_eq!(s.render(), TWO);
        assert_eq!(BuddyInfoSamples::parse("").unwrap().samples.len(), 0);
    }

    #[test]
    fn bad_samples_name_their_line() {
        let err = |t: &str| BuddyInfoSamples::parse(t).unwrap_err();
        assert_eq!(err("Node 0, zone DMA 1 \n").line, 1);
        assert_eq!(err("time x\n").line, 1);
        assert_eq!(err("time NaN\nNode 0, zone DMA 1 \n").line, 1);
        assert_eq!(err("time 2\nNode 0, zone DMA 1 \ntime 1\nNode 0, zone DMA 1 \n").line, 3);
        assert_eq!(err("time 1\ntime 2\nNode 0, zone DMA 1 \n").line, 1, "an empty sample");
        let e = err("time 1\nNode 0, zone DMA 1 \nNode 0, zone DMA32 x \n");
        assert_eq!(e.line, 3, "{e}");
    }
}
