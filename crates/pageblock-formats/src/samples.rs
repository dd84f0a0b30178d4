//! `buddyinfo.samples`, `pagetypeinfo.samples`: a `/proc` file read again and again while a
//! `lab real` run is recorded, each copy after the time it was read. pageblock's own framing,
//! not a kernel file:
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
//! file as the kernel printed it, blank lines and all ([`SampledFile`]). Times never go
//! backwards.

use crate::buddyinfo::BuddyInfo;
use crate::pagetypeinfo::PageTypeInfo;
use crate::text;
use crate::ParseError;

/// A `/proc` file that can be sampled: its model parses and renders the file's whole text.
/// No line of the file starts with `time `.
pub trait SampledFile: Sized {
    /// What the file is, for errors: `buddyinfo`.
    const NAME: &'static str;
    /// Parses one copy of the file.
    fn parse(text: &str) -> Result<Self, ParseError>;
    /// The copy as the kernel printed it.
    fn render(&self) -> String;
}

impl SampledFile for BuddyInfo {
    const NAME: &'static str = "buddyinfo";
    fn parse(text: &str) -> Result<Self, ParseError> {
        BuddyInfo::parse(text)
    }
    fn render(&self) -> String {
        BuddyInfo::render(self)
    }
}

impl SampledFile for PageTypeInfo {
    const NAME: &'static str = "pagetypeinfo";
    fn parse(text: &str) -> Result<Self, ParseError> {
        PageTypeInfo::parse(text)
    }
    fn render(&self) -> String {
        PageTypeInfo::render(self)
    }
}

/// One reading of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample<T> {
    /// When it was read: `CLOCK_MONOTONIC`, seconds.
    pub time_s: f64,
    /// What it said.
    pub file: T,
}

/// The readings of one run, in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples<T> {
    /// Every reading.
    pub samples: Vec<Sample<T>>,
}

impl<T> Default for Samples<T> {
    fn default() -> Self {
        Samples { samples: Vec::new() }
    }
}

/// `buddyinfo.samples`.
pub type BuddyInfoSamples = Samples<BuddyInfo>;
/// `pagetypeinfo.samples`.
pub type PageTypeInfoSamples = Samples<PageTypeInfo>;

impl<T: SampledFile> Samples<T> {
    /// The file text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.samples {
            out += &format!("time {:.3}\n", s.time_s);
            out += &s.file.render();
        }
        out
    }

    /// Parses the file text. Fails (naming the line) on text before the first `time` line,
    /// a time that is not a finite number or goes backwards, a `time` line with nothing
    /// after it, or a malformed copy of the file. An empty file has no samples.
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
                    None => {
                        return Err(ParseError::new(no, format!("{} before the first `time` line", T::NAME)))
                    }
                }
            }
        }
        if let Some(done) = cur {
            samples.push(done.finish()?);
        }
        Ok(Samples { samples })
    }
}

/// A sample being read: its time, the line of its `time` line, its file's lines.
struct Pending<'a> {
    time_s: f64,
    at: usize,
    lines: Vec<(usize, &'a str)>,
}

impl Pending<'_> {
    fn finish<T: SampledFile>(self) -> Result<Sample<T>, ParseError> {
        let Some(&(first, _)) = self.lines.first() else {
            return Err(ParseError::new(self.at, format!("a `time` line with no {} after it", T::NAME)));
        };
        let body: String = self.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        let file = T::parse(&body).map_err(|e| {
            let line = first + e.line - 1;
            e.at_line(line)
        })?;
        Ok(Sample { time_s: self.time_s, file })
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
        assert_eq!(s.samples[1].file.zone(0, "DMA32").unwrap().free_pages(), 5);
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

    /// A pagetypeinfo copy has blank lines between its tables; they stay inside the sample.
    #[test]
    fn pagetypeinfo_samples_keep_the_whole_file() {
        let real = include_str!("../tests/data/pagetypeinfo.txt");
        let text = format!("time 5.000\n{real}time 5.250\n{real}");
        let s = PageTypeInfoSamples::parse(&text).unwrap();
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.samples[1].file, PageTypeInfo::parse(real).unwrap());
        assert_eq!(s.render(), text);
        let bad = format!("time 1\n{}", real.replacen("Unmovable", "Unmovable x", 1));
        assert!(PageTypeInfoSamples::parse(&bad).unwrap_err().line > 1);
        let e = PageTypeInfoSamples::parse("Node 0\n").unwrap_err();
        assert!(e.to_string().contains("pagetypeinfo before the first `time` line"), "{e}");
    }
}
