//! Small state files that must never be seen half written: a journal of settings to write
//! back, created exclusively by the one process that owns it and replaced whole on each
//! change.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Creates `path` (and its directory) holding `text`; fails with `AlreadyExists` if it is
/// there, which is how two owners of the same state keep each other out.
fn create_new(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    if let Err(e) = file.write_all(text.as_bytes()) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}

/// Writes `text` beside `path` and renames it over `path`: a reader (or a kill midway)
/// sees the old file or the new one, never half of one.
pub(crate) fn replace(path: &Path, text: &str) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".pageblock.").tempfile_in(dir).map_err(|e| err(&e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| err(&e))?;
    tmp.persist(path).map_err(|e| err(&e.error))?;
    Ok(())
}

/// Creates every copy of a journal holding `text`, the first exclusively: if it exists,
/// another owner has the state (or died holding it), and the error is `refusal(first)`.
/// On any failure the copies made are removed again.
pub(crate) fn claim_copies(
    copies: &[PathBuf],
    text: &str,
    refusal: impl FnOnce(&Path) -> String,
) -> Result<(), String> {
    for (i, path) in copies.iter().enumerate() {
        if let Err(e) = create_new(path, text) {
            for made in &copies[..i] {
                let _ = std::fs::remove_file(made);
            }
            return Err(match (i, e.kind()) {
                (0, std::io::ErrorKind::AlreadyExists) => refusal(path),
                _ => format!("{}: {e}", path.display()),
            });
        }
    }
    Ok(())
}

/// Removes the copies that `is_ours` still recognises (another owner may have claimed a
/// well-known path since).
pub(crate) fn remove_own_copies(copies: &[PathBuf], is_ours: impl Fn(&Path) -> bool) {
    for path in copies {
        if is_ours(path) {
            let _ = std::fs::remove_file(path);
        }
    }
}
