//! Output files that never destroy an earlier result.
//!
//! A result is written to a temporary file beside its path (`.NAME.XXXXXX.part`, created when
//! the command starts, so a path that cannot be written fails in milliseconds instead of after
//! a long run) and renamed over the path only once it is complete and synced. A run that fails,
//! is interrupted or cannot write leaves whatever was at the path before untouched; the
//! temporary file is removed when the [`OutputFile`] is dropped unfinished, or by
//! [`crate::signals`] when SIGINT or SIGTERM ends the process. A symbolic link keeps pointing
//! to its (new) file; a device or pipe (`/dev/null`, `/dev/stdout`, anything under `/dev` or
//! `/proc`) is written as it is, never replaced.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A result on its way to `path`.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    target: Target,
}

/// Where the bytes go.
#[derive(Debug)]
enum Target {
    /// A temporary file beside the regular file (or the new one) it is renamed over.
    Beside {
        tmp: tempfile::NamedTempFile,
        /// Removes the temporary file on a signal while it exists.
        _on_signal: OnSignal,
    },
    /// A device, pipe or socket (`/dev/null`, `/dev/stdout`, a FIFO), written as it is:
    /// renaming a file over it would replace the device node.
    InPlace(File),
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
    /// Start a result for `path`: check it can be written and open the temporary file beside it
    /// (beside the file a symbolic link names), or open a device or pipe as it is.
    pub fn create(path: &Path) -> Result<OutputFile, String> {
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        if path.is_dir() {
            return Err(err(&"is a directory"));
        }
        if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
            return Err(err(&"the file is read-only"));
        }
        let special = path.starts_with("/dev") || path.starts_with("/proc");
        if special || std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| err(&e))?;
            return Ok(OutputFile { path: path.to_owned(), target: Target::InPlace(file) });
        }
        let real = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| err(&e))?,
            _ => path.to_owned(),
        };
        let name = real.file_name().ok_or_else(|| err(&"names no file"))?;
        let dir = match real.parent() {
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
        Ok(OutputFile { path: real, target: Target::Beside { tmp, _on_signal: on_signal } })
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
    pub fn write_text(self, text: &str) -> Result<(), String> {
        self.stream()?.write_all(text.as_bytes()).map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.commit()
    }

    /// A second handle on the file written, for a writer that streams into it.
    fn stream(&self) -> Result<File, String> {
        let file = match &self.target {
            Target::Beside { tmp, .. } => tmp.as_file(),
            Target::InPlace(file) => file,
        };
        file.try_clone().map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Sync what was written and rename it over the path.
    pub fn commit(self) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        match self.target {
            Target::Beside { tmp, .. } => {
                tmp.as_file().sync_all().map_err(|e| err(&e))?;
                tmp.persist(&self.path).map_err(|e| err(&e.error))?;
            }
            Target::InPlace(_) => {}
        }
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
    fn devices_are_written_as_they_are_and_links_keep_pointing_to_the_result() {
        let err = OutputFile::create(Path::new("/dev/full")).unwrap().write_text("x").unwrap_err();
        assert!(err.contains("/dev/full"), "{err}");
        let meta = std::fs::metadata("/dev/full").unwrap();
        assert!(
            std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()),
            "/dev/full stays a device"
        );
        OutputFile::create(Path::new("/dev/null")).unwrap().write_text("gone\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (real, link) = (dir.path().join("real.json"), dir.path().join("link.json"));
        std::fs::write(&real, "earlier\n").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        OutputFile::create(&link).unwrap().write_text("new\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "still a link");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left");
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
