//! The trace file: text from `trace_pipe` compressed into zstd frames as it arrives, each
//! complete line counted on the way.
//!
//! A frame is ended at least every [`FRAME_INTERVAL`] (and every [`FRAME_TEXT`] bytes of
//! text), so that the file is always complete frames plus at most one frame's worth of
//! recent text: a recording killed (SIGKILL, out of space) leaves a file whose frames read
//! back, not an empty or undecodable one. Readers read concatenated frames as one stream.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use super::count::EventCounts;

/// zstd level: fast enough to keep up with `trace_pipe` on one core (the shared trace
/// compresses 18:1 at this level).
const LEVEL: i32 = 3;

/// The longest a frame stays open.
pub const FRAME_INTERVAL: Duration = Duration::from_secs(1);

/// The most text one frame holds (a frame per 8 MiB costs nothing measurable in size).
const FRAME_TEXT: u64 = 8 << 20;

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

type Encoder<W> = zstd::stream::write::Encoder<'static, Counted<W>>;

/// Compresses trace text into `W` and counts its lines.
pub struct TraceWriter<W: Write> {
    /// The open frame's encoder (`None` after ending a frame failed).
    encoder: Option<Encoder<W>>,
    /// When the open frame got its first text, and how much it has.
    frame_since: Option<Instant>,
    frame_text: u64,
    partial: Vec<u8>,
    summary: TraceSummary,
}

fn failed_before() -> io::Error {
    io::Error::other("the trace file failed earlier")
}

/// An encoder starting a frame on `inner`.
fn encoder<W: Write>(inner: Counted<W>) -> io::Result<Encoder<W>> {
    let mut encoder = zstd::stream::write::Encoder::new(inner, LEVEL)?;
    encoder.include_checksum(true)?;
    Ok(encoder)
}

impl<W: Write> TraceWriter<W> {
    /// Starts a zstd frame on `inner`.
    pub fn new(inner: W) -> io::Result<Self> {
        Ok(TraceWriter {
            encoder: Some(encoder(Counted { inner, bytes: 0 })?),
            frame_since: None,
            frame_text: 0,
            partial: Vec::new(),
            summary: TraceSummary::default(),
        })
    }

    /// The open frame's encoder, or the error of a file that failed before.
    fn encoder(&mut self) -> io::Result<&mut Encoder<W>> {
        self.encoder.as_mut().ok_or_else(failed_before)
    }

    /// Ends the open frame if it has text and is [`FRAME_INTERVAL`] old at `now`: every
    /// byte written so far then reads back from `W`.
    pub fn end_frame_if_due(&mut self, now: Instant) -> io::Result<()> {
        match self.frame_since {
            Some(since) if now.duration_since(since) >= FRAME_INTERVAL => self.end_frame(),
            _ => Ok(()),
        }
    }

    /// Ends the open frame, writes it out and opens the next.
    fn end_frame(&mut self) -> io::Result<()> {
        let mut inner = self.encoder.take().ok_or_else(failed_before)?.finish()?;
        inner.flush()?;
        self.encoder = Some(encoder(inner)?);
        (self.frame_since, self.frame_text) = (None, 0);
        Ok(())
    }

    /// Compresses `data` and counts the lines it completes.
    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.encoder()?.write_all(data)?;
        self.frame_since.get_or_insert_with(Instant::now);
        self.frame_text += data.len() as u64;
        if self.frame_text >= FRAME_TEXT {
            self.end_frame()?;
        }
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
        self.encoder.as_ref().map_or(0, |e| e.get_ref().bytes)
    }

    /// Counts a last line without newline, ends the zstd frame and flushes: the inner
    /// writer and the summary.
    pub fn finish(mut self) -> io::Result<(W, TraceSummary)> {
        if !self.partial.is_empty() {
            self.summary.counts.count_line(&self.partial);
        }
        let mut counted = self.encoder.take().ok_or_else(failed_before)?.finish()?;
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

    /// A file shared with the test, to look at while the writer still holds it.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Regression: the trace file was one zstd frame ended at the very end, so a recording
    /// killed after 2 s left 0 bytes (or an undecodable prefix). After each periodic end of a
    /// frame, the file as it is decodes to all the text written so far.
    #[test]
    fn after_each_frame_the_file_reads_back_whole() {
        let file = Shared::default();
        let mut w = TraceWriter::new(file.clone()).unwrap();
        let mut text = Vec::new();
        for second in 1..=3u32 {
            let line =
                format!("  cat-1 [000] .....   {second}.000001: mm_page_free: pfn=0x{second:x} order=0\n");
            w.write(line.as_bytes()).unwrap();
            text.extend_from_slice(line.as_bytes());
            let before = w.compressed_bytes();
            w.end_frame_if_due(Instant::now()).unwrap();
            assert_eq!(w.compressed_bytes(), before, "a frame younger than FRAME_INTERVAL stays open");
            w.end_frame_if_due(Instant::now() + FRAME_INTERVAL).unwrap();
            let on_disk = file.0.borrow().clone();
            assert_eq!(zstd::decode_all(&on_disk[..]).unwrap(), text, "after frame {second}");
            let reader = pageblock_trace::TraceInput::from_reader(io::Cursor::new(on_disk), None);
            assert_eq!(io::read_to_string(reader.unwrap()).unwrap().as_bytes(), text, "as replay reads it");
        }
        // A burst of text ends its frame without waiting for the clock.
        let big = vec![b'x'; FRAME_TEXT as usize];
        w.write(&big).unwrap();
        text.extend_from_slice(&big);
        assert_eq!(zstd::decode_all(&file.0.borrow()[..]).unwrap(), text);
        let (_, summary) = w.finish().unwrap();
        assert_eq!(summary.text_bytes, text.len() as u64);
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
