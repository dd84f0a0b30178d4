//! The trace file: text from `trace_pipe` compressed into one zstd frame as it arrives,
//! each complete line counted on the way.

use std::io::{self, Write};

use super::count::EventCounts;

/// zstd level: fast enough to keep up with `trace_pipe` on one core (the shared trace
/// compresses 18:1 at this level).
const LEVEL: i32 = 3;

/// A writer that counts the bytes it passes on.
#[derive(Debug)]
pub struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What a finished trace file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// The lines, counted.
    pub counts: EventCounts,
    /// Bytes of text.
    pub text_bytes: u64,
    /// Bytes of the compressed file.
    pub compressed_bytes: u64,
}

/// Compresses trace text into `W` and counts its lines.
pub struct TraceWriter<W: Write> {
    encoder: zstd::stream::write::Encoder<'static, Counted<W>>,
    partial: Vec<u8>,
    summary: TraceSummary,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a zstd frame on `inner`.
    pub fn new(inner: W) -> io::Result<Self> {
        let mut encoder = zstd::stream::write::Encoder::new(Counted { inner, bytes: 0 }, LEVEL)?;
        encoder.include_checksum(true)?;
        Ok(TraceWriter { encoder, partial: Vec::new(), summary: TraceSummary::default() })
    }

    /// Compresses `data` and counts the lines it completes.
    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.encoder.write_all(data)?;
        self.summary.text_bytes += data.len() as u64;
        let mut rest = data;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                self.summary.counts.count_line(&rest[..nl]);
            } else {
                self.partial.extend_from_slice(&rest[..nl]);
                self.summary.counts.count_line(&self.partial);
                self.partial.clear();
            }
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Bytes of text written so far.
    pub fn text_bytes(&self) -> u64 {
        self.summary.text_bytes
    }

    /// Compressed bytes that reached `W` so far.
    pub fn compressed_bytes(&self) -> u64 {
        self.encoder.get_ref().bytes
    }

    /// Counts a last line without newline, ends the zstd frame and flushes: the inner
    /// writer and the summary.
    pub fn finish(mut self) -> io::Result<(W, TraceSummary)> {
        if !self.partial.is_empty() {
            self.summary.counts.count_line(&self.partial);
        }
        let mut counted = self.encoder.finish()?;
        counted.flush()?;
        self.summary.compressed_bytes = counted.bytes;
        Ok((counted.inner, self.summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_writes_are_counted_once_and_the_frame_decompresses() {
        let text = "  cat-1 [000] .....   1.000001: mm_page_alloc: pfn=0x1 order=0\n\
                    CPU:0 [LOST 5 EVENTS]\n\
                    \x20 cat-1 [001] .....   1.000002: mm_page_free: pfn=0x1 order=0";
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        for chunk in text.as_bytes().chunks(7) {
            w.write(chunk).unwrap();
        }
        assert_eq!(w.text_bytes(), text.len() as u64);
        let (bytes, summary) = w.finish().unwrap();
        assert_eq!(summary.compressed_bytes, bytes.len() as u64);
        assert_eq!(zstd::decode_all(&bytes[..]).unwrap(), text.as_bytes());
        assert_eq!(summary.counts.events.get("mm_page_alloc"), Some(&1));
        assert_eq!(summary.counts.events.get("mm_page_free"), Some(&1), "the last line has no newline");
        assert_eq!((summary.counts.lost_events, summary.counts.other_lines), (5, 0));
    }

    #[test]
    fn a_failing_file_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "no space"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = TraceWriter::new(Full).unwrap();
        let wrote =
            (0..1000).try_for_each(|i| w.write(format!("line {i} of incompressible-ish text\n").as_bytes()));
        let finished = wrote.and_then(|()| w.finish().map(|_| ()));
        assert!(finished.is_err(), "the error reaches the caller");
    }
}
