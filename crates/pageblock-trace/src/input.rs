//! Opening a trace file: plain text, gzip or zstd, told apart by content.
//!
//! The first bytes decide (`28 b5 2f fd` zstd, `1f 8b` gzip, anything else text), never the
//! file name, so `trace.txt` that is really compressed, or a pipe, reads right. Concatenated
//! gzip members and zstd frames are read to the end. A decompressor that reaches the end of
//! the file inside a frame reports it, and so does [`TraceInput`], after the text decoded
//! before the cut: `truncated zstd stream` is an error ([`is_truncated`] tells it apart),
//! never a silent early end of the trace.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Buffer between the decompressor and `BufRead` users. The trace reader reads bigger
/// chunks than this, which `BufReader` passes straight through (no second copy).
const BUF_CAPACITY: usize = 64 << 10;

/// How the file is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Text.
    Plain,
    /// gzip (RFC 1952), possibly several members.
    Gzip,
    /// Zstandard, possibly several frames.
    Zstd,
}

impl Compression {
    /// The compression whose magic number `head` (the file's first bytes) starts with.
    pub fn detect(head: &[u8]) -> Self {
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else {
            Compression::Plain
        }
    }

    /// `plain`, `gzip` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Plain => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// How many bytes of the file (compressed bytes, for a compressed file) have been read;
/// a cheap handle to share with a progress display.
#[derive(Clone, Debug, Default)]
pub struct ReadProgress(Arc<AtomicU64>);

impl ReadProgress {
    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    progress: ReadProgress,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The error of a compressed file that ends inside compressed data.
#[derive(Debug)]
struct Truncated(Compression);

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "truncated {} stream (the file ends inside compressed data)", self.0.name())
    }
}

impl std::error::Error for Truncated {}

/// True if `e` is a compressed file's early end (everything before it was read).
pub(crate) fn is_truncated(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Truncated>())
}

/// A decompressor whose errors say what broke (`truncated zstd stream`).
struct Decompress<R> {
    inner: R,
    compression: Compression,
}

impl<R: Read> Read for Decompress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            let name = self.compression.name();
            match e.kind() {
                io::ErrorKind::UnexpectedEof => io::Error::new(e.kind(), Truncated(self.compression)),
                kind => io::Error::new(kind, format!("bad {name} stream: {e}")),
            }
        })
    }
}

/// A trace file opened for reading as text, decompressing if needed.
pub struct TraceInput {
    inner: Box<dyn BufRead + Send>,
    compression: Compression,
    progress: ReadProgress,
    size: Option<u64>,
}

impl TraceInput {
    /// Opens `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
        Self::from_reader(file, size)
    }

    /// Reads from `source` (of `size` bytes, if known).
    pub fn from_reader(mut source: impl Read + Send + 'static, size: Option<u64>) -> io::Result<Self> {
        let mut magic = [0u8; 4];
        let mut n = 0;
        while n < magic.len() {
            match source.read(&mut magic[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let progress = ReadProgress::default();
        let counted =
            Counting { inner: Cursor::new(magic).take(n as u64).chain(source), progress: progress.clone() };
        let compression = Compression::detect(&magic[..n]);
        let inner: Box<dyn BufRead + Send> = match compression {
            Compression::Plain => Box::new(BufReader::with_capacity(BUF_CAPACITY, counted)),
            Compression::Gzip => {
                let inner = flate2::read::MultiGzDecoder::new(counted);
                Box::new(BufReader::with_capacity(BUF_CAPACITY, Decompress { inner, compression }))
            }
            Compression::Zstd => {
                let inner = zstd::Decoder::new(counted)?;
                Box::new(BufReader::with_capacity(BUF_CAPACITY, Decompress { inner, compression }))
            }
        };
        Ok(TraceInput { inner, compression, progress, size })
    }

    /// How the file is stored.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// A handle on the number of file bytes read so far.
    pub fn progress(&self) -> ReadProgress {
        self.progress.clone()
    }

    /// The file's size in bytes, when it is a regular file.
    pub fn size(&self) -> Option<u64> {
        self.size
    }
}

impl Read for TraceInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl BufRead for TraceInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt)
    }
}

/// The names `pageblock record` and ftrace users give a trace file, tried in this order in a
/// directory.
const TRACE_NAMES: [&str; 4] = ["trace.txt.zst", "trace.txt.gz", "trace.txt", "trace"];

/// The trace file `path` names: itself, or the first of the usual names in a directory.
pub fn trace_file(path: &Path) -> Result<PathBuf, String> {
    if !path.is_dir() {
        return Ok(path.to_owned());
    }
    TRACE_NAMES
        .iter()
        .map(|n| path.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{}: no {} in this directory", path.display(), TRACE_NAMES.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TEXT: &[u8] = b"line one\nline two\n";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(bytes: Vec<u8>) -> (Compression, io::Result<Vec<u8>>) {
        let mut input = TraceInput::from_reader(Cursor::new(bytes), None).unwrap();
        let mut out = Vec::new();
        let r = input.read_to_end(&mut out).map(|_| out);
        (input.compression(), r)
    }

    #[test]
    fn detected_by_content() {
        let zst = zstd::encode_all(TEXT, 3).unwrap();
        for (bytes, c) in
            [(TEXT.to_vec(), Compression::Plain), (gzip(TEXT), Compression::Gzip), (zst, Compression::Zstd)]
        {
            let (got, out) = read_all(bytes);
            assert_eq!((got, out.unwrap()), (c, TEXT.to_vec()));
        }
        assert_eq!(read_all(Vec::new()).0, Compression::Plain);
        assert_eq!(read_all(b"ab".to_vec()).1.unwrap(), b"ab");
    }

    #[test]
    fn concatenated_members_and_frames_read_whole() {
        let mut two = gzip(b"a\n");
        two.extend(gzip(b"b\n"));
        assert_eq!(read_all(two).1.unwrap(), b"a\nb\n");
        let mut two = zstd::encode_all(&b"a\n"[..], 1).unwrap();
        two.extend(zstd::encode_all(&b"b\n"[..], 1).unwrap());
        assert_eq!(read_all(two).1.unwrap(), b"a\nb\n");
    }

    #[test]
    fn truncated_or_corrupt_streams_are_errors() {
        let big: Vec<u8> = (0..20_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        for (name, full) in [("zstd", zstd::encode_all(&big[..], 3).unwrap()), ("gzip", gzip(&big))] {
            for cut in [full.len() / 2, full.len() - 1, 10] {
                let err = read_all(full[..cut].to_vec()).1.expect_err(name);
                assert!(is_truncated(&err), "{name} cut {cut}: {err}");
                assert!(
                    err.to_string().contains(&format!("truncated {name} stream")),
                    "{name} cut {cut}: {err}"
                );
            }
            let mut garbage = full.clone();
            garbage.extend_from_slice(b"trailing junk");
            let junk = read_all(garbage).1.expect_err("junk after the last frame");
            assert!(!is_truncated(&junk), "{name}: junk is not a truncation: {junk}");
        }
    }

    #[test]
    fn progress_counts_file_bytes() {
        let zst = zstd::encode_all(TEXT, 3).unwrap();
        let len = zst.len() as u64;
        let mut input = TraceInput::from_reader(Cursor::new(zst), Some(len)).unwrap();
        let progress = input.progress();
        io::copy(&mut input, &mut io::sink()).unwrap();
        assert_eq!((progress.bytes(), input.size()), (len, Some(len)));
    }
}
