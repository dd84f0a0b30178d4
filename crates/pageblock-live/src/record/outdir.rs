//! The recording's directory: refused if it holds anything, created first of all so a bad
//! path fails before tracefs is touched, and checked for room.

use std::path::{Path, PathBuf};

/// Less free space than this on the directory's file system is refused. The shared
/// clone-tar-python-thp trace (2.25 M events) compresses to 17 MiB; a long recording can
/// need far more, and a write failure midway is an error anyway.
pub const MIN_FREE_BYTES: u64 = 256 << 20;

/// The directory a recording writes.
#[derive(Debug)]
pub struct OutDir {
    /// Its path.
    pub path: PathBuf,
    /// Whether this run created it.
    pub created: bool,
}

impl OutDir {
    /// Checks and creates `dir` (default: `pageblock-record-YYYYmmdd-HHMMSS` here) and
    /// checks its free space.
    pub fn prepare(dir: Option<&Path>) -> Result<Self, String> {
        Self::prepare_or(dir, "pageblock-record")
    }

    /// [`OutDir::prepare`], the default name starting with `prefix` instead.
    pub fn prepare_or(dir: Option<&Path>, prefix: &str) -> Result<Self, String> {
        let path = dir.map_or_else(|| PathBuf::from(default_name(prefix)), Path::to_path_buf);
        let shown = path.display().to_string();
        let created = match std::fs::read_dir(&path) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(format!("{shown} exists and is not empty; give a new or empty directory"));
                }
                false
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&path).map_err(|e| format!("creating {shown}: {e}"))?;
                true
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        };
        let out = OutDir { path, created };
        let free = free_bytes(&out.path);
        match free {
            Ok(bytes) if bytes >= MIN_FREE_BYTES => Ok(out),
            Ok(bytes) => {
                out.remove_if_created();
                Err(format!(
                    "{shown}: only {} MiB free, a recording needs at least {} MiB",
                    bytes >> 20,
                    MIN_FREE_BYTES >> 20
                ))
            }
            Err(e) => {
                out.remove_if_created();
                Err(e)
            }
        }
    }

    /// `DIR/name`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Removes the directory if this run created it and it is still empty.
    pub fn remove_if_created(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

/// Bytes available to unprivileged users on the file system of `path`.
fn free_bytes(path: &Path) -> Result<u64, String> {
    let c = crate::tracefs::c_path(path)?;
    // SAFETY: statvfs only writes the struct we hand it; `c` is NUL-terminated and outlives
    // the call.
    let stat = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut stat) != 0 {
            return Err(format!("statvfs {}: {}", path.display(), std::io::Error::last_os_error()));
        }
        stat
    };
    // fsblkcnt_t and c_ulong are 32 bits wide on some targets.
    #[allow(clippy::useless_conversion)]
    let free = u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize));
    Ok(free)
}

/// `PREFIX-YYYYmmdd-HHMMSS` in local time.
pub fn default_name(prefix: &str) -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r only writes the struct we hand
    // it and is thread-safe.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    format!(
        "{prefix}-{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_name_has_the_documented_shape() {
        let name = default_name("pageblock-record");
        let stamp = name.strip_prefix("pageblock-record-").expect("prefix");
        let (date, time) = stamp.split_once('-').expect("date-time");
        assert_eq!((date.len(), time.len()), (8, 6), "{name}");
        assert!(date.starts_with("20") && stamp.bytes().all(|b| b.is_ascii_digit() || b == b'-'), "{name}");
    }

    #[test]
    fn an_empty_directory_is_used_a_full_one_refused_a_new_one_created() {
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::prepare(Some(tmp.path())).expect("empty is fine");
        assert!(!out.created);
        std::fs::write(tmp.path().join("x"), "").unwrap();
        let err = OutDir::prepare(Some(tmp.path())).expect_err("not empty");
        assert!(err.contains("exists and is not empty"), "{err}");
        let new = tmp.path().join("a/b");
        let out = OutDir::prepare(Some(&new)).unwrap();
        assert!(out.created && new.is_dir());
        out.remove_if_created();
        assert!(!new.exists());
        let err = OutDir::prepare(Some(&tmp.path().join("x/y"))).expect_err("under a file");
        assert!(err.contains("x/y"), "{err}");
    }
}
