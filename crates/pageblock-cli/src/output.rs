//! Output files that never destroy an earlier result.
//!
//! A result is written to a temporary file beside its path (`.NAME.XXXXXX.part`, created when
//! the command starts, so a path that cannot be written fails in milliseconds instead of after
//! a long run) and renamed over the path only once it is complete and synced. A run that fails,
//! is interrupted or cannot write leaves whatever was at the path before untouched; the
//! temporary file is removed when the [`OutputFile`] is dropped unfinished, or by
//! [`crate::signals`] when SIGINT or SIGTERM ends the process.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A result on its way to `path`.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    tmp: tempfile::NamedTempFile,
    /// Removes the temporary file on a signal while it exists.
    _on_signal: OnSignal,
}

/// A temporary file registered with [`crate::signals`], unregistered on drop (once it is
/// renamed into place or removed).
#[derive(Debug)]
struct OnSignal(PathBuf);

impl Drop for OnSignal {
    fn drop(&mut self) {
        crate::signals::forget(&self.0);
    }
}

impl OutputFile {
    /// Start a result for `path`: check it can be written and open the temporary file beside it.
    pub fn create(path: &Path) -> Result<OutputFile, String> {
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        if path.is_dir() {
            return Err(err(&"is a directory"));
        }
        if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
            return Err(err(&"the file is read-only"));
        }
        let name = path.file_name().ok_or_else(|| err(&"names no file"))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".part")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| err(&e))?;
        crate::signals::remove_on_signal(tmp.path());
        let on_signal = OnSignal(tmp.path().to_owned());
        Ok(OutputFile { path: path.to_owned(), tmp, _on_signal: on_signal })
    }

    /// The path the result will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `value` as pretty JSON and put it in place.
    pub fn write_json(self, value: &impl serde::Serialize) -> Result<(), String> {
        let json =
            serde_json::to_string_pretty(value).map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.write_text(&(json + "\n"))
    }

    /// Write `text` and put it in place.
    pub fn write_text(mut self, text: &str) -> Result<(), String> {
        self.tmp
            .as_file_mut()
            .write_all(text.as_bytes())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.commit()
    }

    /// A second handle on the temporary file, for a writer that streams into it.
    fn stream(&self) -> Result<File, String> {
        self.tmp.as_file().try_clone().map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Sync what was written and rename it over the path.
    pub fn commit(self) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        self.tmp.as_file().sync_all().map_err(|e| err(&e))?;
        self.tmp.persist(&self.path).map_err(|e| err(&e.error))?;
        Ok(())
    }
}

/// [`OutputFile::create`] for an optional path.
pub fn create_output(path: Option<&Path>) -> Result<Option<OutputFile>, String> {
    path.map(OutputFile::create).transpose()
}

/// A streamed text output into an [`OutputFile`], compressed by the path's extension: `.zst`
/// (zstd), `.gz` (gzip), anything else plain. [`TextStream::complete`] ends the compressed
/// stream; [`OutputFile::commit`] then puts the file in place.
pub struct TextStream(Encoder);

enum Encoder {
    Plain(BufWriter<File>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

impl TextStream {
    /// A stream into `out`'s temporary file.
    pub fn new(out: &OutputFile) -> Result<TextStream, String> {
        let file = BufWriter::new(out.stream()?);
        Ok(TextStream(match out.path.extension().and_then(|e| e.to_str()) {
            Some("zst") => Encoder::Zstd(
                zstd::Encoder::new(file, 3).map_err(|e| format!("{}: {e}", out.path.display()))?,
            ),
            Some("gz") => Encoder::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::default())),
            _ => Encoder::Plain(file),
        }))
    }

    /// End the compressed format and flush everything to the file.
    pub fn complete(&mut self) -> std::io::Result<()> {
        match &mut self.0 {
            Encoder::Plain(w) => w.flush(),
            Encoder::Zstd(w) => w.do_finish().and_then(|()| w.get_mut().flush()),
            Encoder::Gzip(w) => w.try_finish().and_then(|()| w.get_mut().flush()),
        }
    }
}

impl Write for TextStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.0 {
            Encoder::Plain(w) => w.write(buf),
            Encoder::Zstd(w) => w.write(buf),
            Encoder::Gzip(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.0 {
            Encoder::Plain(w) => w.flush(),
            Encoder::Zstd(w) => w.flush(),
            Encoder::Gzip(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfinished_result_leaves_the_earlier_one_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "earlier\n").unwrap();
        let out = OutputFile::create(&path).unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the temporary file is gone");
    }

    #[test]
    fn a_finished_result_replaces_the_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "earlier\n").unwrap();
        OutputFile::create(&path).unwrap().write_text("new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn unwritable_paths_fail_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(OutputFile::create(dir.path()).unwrap_err().contains("is a directory"));
        assert!(OutputFile::create(&dir.path().join("no/such/dir/x")).is_err());
    }

    #[test]
    fn streams_are_compressed_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let text = "line one\nline two\n".repeat(100);
        for name in ["t.zst", "t.gz", "t.txt"] {
            let path = dir.path().join(name);
            let out = OutputFile::create(&path).unwrap();
            let mut s = TextStream::new(&out).unwrap();
            s.write_all(text.as_bytes()).unwrap();
            s.complete().unwrap();
            out.commit().unwrap();
            let raw = std::fs::read(&path).unwrap();
            let back = match name {
                "t.zst" => zstd::decode_all(&raw[..]).unwrap(),
                "t.gz" => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut v).unwrap();
                    v
                }
                _ => raw,
            };
            assert_eq!(String::from_utf8(back).unwrap(), text, "{name}");
        }
    }
}
