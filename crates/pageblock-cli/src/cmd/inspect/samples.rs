//! The `--json` file of `inspect --watch`: `{"meta":…,"samples":[…]}` and a newline, valid
//! JSON after every sample. The first sample writes the file whole (beside its path, renamed
//! into place, so an earlier result survives a watch that fails before it); each later sample
//! replaces the closing `]}` and newline with `,SAMPLE]}` and a newline, in place, so a sample
//! costs the same however long the watch has run.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use crate::output::OutputFile;

/// How the file ends after every sample.
const CLOSE: &[u8] = b"]}\n";

/// A watch's JSON file.
pub struct SampleFile {
    path: PathBuf,
    meta: String,
    /// The file once its first sample is in place.
    file: Option<File>,
}

impl SampleFile {
    /// A file for `path`, which must be a regular file or not exist yet, headed by `meta`
    /// (a JSON object).
    pub fn new(path: &Path, meta: String) -> Result<SampleFile, String> {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(format!(
                "{}: --watch appends to its --json file, which must be a regular file",
                path.display()
            ));
        }
        OutputFile::create(path)?;
        Ok(SampleFile { path: path.to_owned(), meta, file: None })
    }

    /// Add `sample` (a JSON value).
    pub fn push(&mut self, sample: &str) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        let Some(file) = &self.file else {
            let text = format!("{{\"meta\":{},\"samples\":[{sample}]}}\n", self.meta);
            OutputFile::create(&self.path)?.write_text(&text)?;
            self.file = Some(File::options().read(true).write(true).open(&self.path).map_err(|e| err(&e))?);
            return Ok(());
        };
        let end = file.metadata().map_err(|e| err(&e))?.len();
        let at = end.checked_sub(CLOSE.len() as u64).ok_or_else(|| err(&"changed by someone else"))?;
        let mut tail = [0u8; CLOSE.len()];
        file.read_exact_at(&mut tail, at).map_err(|e| err(&e))?;
        if tail != CLOSE {
            return Err(err(&"changed by someone else: it no longer ends as this watch left it"));
        }
        file.write_all_at(format!(",{sample}]}}\n").as_bytes(), at).map_err(|e| err(&e))?;
        file.sync_data().map_err(|e| err(&e))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn every_sample_leaves_valid_json_with_all_samples() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        std::fs::write(&path, "earlier").unwrap();
        let mut f = SampleFile::new(&path, "{\"v\":1}".into()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier", "untouched until a sample");
        for i in 0..5 {
            f.push(&format!("{{\"i\":{i}}}")).unwrap();
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(v["meta"]["v"], 1);
            let samples = v["samples"].as_array().unwrap();
            assert_eq!(samples.len(), i + 1);
            assert_eq!(samples[i]["i"], i);
        }
    }

    #[test]
    fn a_file_changed_under_the_watch_is_an_error_not_a_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let mut f = SampleFile::new(&path, "{}".into()).unwrap();
        f.push("1").unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"x").unwrap();
        assert!(f.push("2").unwrap_err().contains("changed by someone else"));
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("]}\nx"));
        assert!(SampleFile::new(Path::new("/dev/null"), "{}".into()).is_err());
    }
}
