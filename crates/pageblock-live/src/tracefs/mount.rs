//! Finding tracefs: `/sys/kernel/tracing` if tracefs is mounted there, else mounted there
//! by us (and unmounted again when done), else the old `/sys/kernel/debug/tracing`.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::Tracefs;

/// Where tracefs lives since Linux 4.1.
pub const TRACING: &str = "/sys/kernel/tracing";
/// Where it appears inside debugfs (older kernels, and still when debugfs is mounted).
pub const DEBUG_TRACING: &str = "/sys/kernel/debug/tracing";

/// A usable tracefs, and whether we mounted it (then [`Mounted::unmount`] or drop unmounts).
#[derive(Debug)]
pub struct Mounted {
    /// The tracefs.
    pub fs: Tracefs,
    mounted_here: Option<PathBuf>,
}

impl Mounted {
    /// Finds tracefs, mounting it on `/sys/kernel/tracing` if it is not mounted.
    pub fn find_or_mount() -> Result<Self, String> {
        let mounts =
            std::fs::read_to_string("/proc/self/mounts").map_err(|e| format!("/proc/self/mounts: {e}"))?;
        if is_mounted(&mounts, TRACING, "tracefs") {
            return Ok(Mounted { fs: Tracefs::at(TRACING), mounted_here: None });
        }
        let mount_error = match mount_tracefs(Path::new(TRACING)) {
            Ok(()) => return Ok(Mounted { fs: Tracefs::at(TRACING), mounted_here: Some(TRACING.into()) }),
            Err(e) => e,
        };
        if Path::new(DEBUG_TRACING).join("tracing_on").exists() {
            return Ok(Mounted { fs: Tracefs::at(DEBUG_TRACING), mounted_here: None });
        }
        Err(format!(
            "no tracefs: mounting it on {TRACING} failed ({mount_error}), and {DEBUG_TRACING} has none"
        ))
    }

    /// Whether tracefs was mounted by us (and is still).
    pub fn mounted_here(&self) -> bool {
        self.mounted_here.is_some()
    }

    /// Takes the mount over (a dead recording mounted it): [`Mounted::unmount`] unmounts it.
    pub fn take_over_mount(&mut self) {
        self.mounted_here = Some(self.fs.root().to_owned());
    }

    /// Unmounts tracefs if we mounted it. Every file in it must be closed.
    pub fn unmount(&mut self) -> Result<(), String> {
        let Some(path) = self.mounted_here.take() else { return Ok(()) };
        unmount(&path)
    }

    /// The tracefs, and where we mounted it if we did: the caller unmounts it ([`unmount`]);
    /// dropping what is returned does not.
    pub fn into_parts(mut self) -> (Tracefs, Option<PathBuf>) {
        let here = self.mounted_here.take();
        (self.fs.clone(), here)
    }
}

/// Unmounts the tracefs on `path`. Every file in it must be closed.
pub fn unmount(path: &Path) -> Result<(), String> {
    let target = c_path(path)?;
    // SAFETY: `target` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::umount2(target.as_ptr(), 0) } != 0 {
        let e = io::Error::last_os_error();
        return Err(format!("tracefs stays mounted on {}: umount: {e}", path.display()));
    }
    Ok(())
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("pageblock: {e}");
        }
    }
}

/// Whether `/proc/self/mounts` text shows a file system of type `fstype` on `target`.
pub fn is_mounted(mounts: &str, target: &str, fstype: &str) -> bool {
    mounts.lines().any(|line| {
        let mut fields = line.split(' ');
        let (_, point, kind) = (fields.next(), fields.next(), fields.next());
        point == Some(target) && kind == Some(fstype)
    })
}

/// `path` for a libc call.
pub(crate) fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| format!("{}: NUL in path", path.display()))
}

/// `mount -t tracefs nodev TARGET`.
fn mount_tracefs(target: &Path) -> Result<(), String> {
    let target = c_path(target)?;
    let (source, fstype) = (c"nodev", c"tracefs");
    // SAFETY: all three strings are valid and NUL-terminated and outlive the call; tracefs
    // takes no mount data, so the data pointer may be null.
    let rc = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tracefs_in_the_mount_table() {
        let mounts = "sysfs /sys sysfs rw,nosuid 0 0\n\
                      tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n";
        assert!(is_mounted(mounts, TRACING, "tracefs"));
        assert!(!is_mounted(mounts, DEBUG_TRACING, "tracefs"));
        assert!(!is_mounted("sysfs /sys sysfs rw 0 0\n", TRACING, "tracefs"));
        assert!(!is_mounted("none /sys/kernel/tracing debugfs rw 0 0\n", TRACING, "tracefs"));
    }
}
