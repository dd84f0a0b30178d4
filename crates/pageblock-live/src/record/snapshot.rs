//! `/proc` snapshots before and after a recording: byte-exact copies of the four files
//! `pageblock trace stats` and `pageblock replay` read next to the trace.

use std::path::Path;

/// The files copied, as `before.NAME` and `after.NAME`.
pub const PROC_FILES: [&str; 4] = ["zoneinfo", "pagetypeinfo", "buddyinfo", "vmstat"];

/// The four files, read into memory (so reading them is all that happens between the
/// snapshot and the start or stop of tracing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    files: Vec<(&'static str, Vec<u8>)>,
}

impl Snapshot {
    /// Reads the files from `proc` (`/proc`; `pagetypeinfo` needs root).
    pub fn read(proc: &Path) -> Result<Self, String> {
        let mut files = Vec::with_capacity(PROC_FILES.len());
        for name in PROC_FILES {
            let path = proc.join(name);
            files.push((name, std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?));
        }
        Ok(Snapshot { files })
    }

    /// Writes `DIR/PREFIX.NAME` for each file.
    pub fn write(&self, dir: &Path, prefix: &str) -> Result<(), String> {
        for (name, bytes) in &self.files {
            let path = dir.join(format!("{prefix}.{name}"));
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_byte_exact_and_a_missing_file_is_an_error() {
        let proc = tempfile::tempdir().unwrap();
        for (i, name) in PROC_FILES.iter().enumerate() {
            std::fs::write(proc.path().join(name), format!("{name} {i} \n\x01")).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        Snapshot::read(proc.path()).unwrap().write(out.path(), "before").unwrap();
        for name in PROC_FILES {
            let copy = std::fs::read(out.path().join(format!("before.{name}"))).unwrap();
            assert_eq!(copy, std::fs::read(proc.path().join(name)).unwrap());
        }
        std::fs::remove_file(proc.path().join("vmstat")).unwrap();
        let err = Snapshot::read(proc.path()).expect_err("vmstat is missing");
        assert!(err.contains("vmstat"), "{err}");
    }
}
