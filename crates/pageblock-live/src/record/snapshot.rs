//! `/proc` snapshots before and after a recording: byte-exact copies of the four files
//! `pageblock trace stats` and `pageblock replay` read next to the trace, and of
//! `/proc/swaps` (whether the machine could swap), which a kernel without swap lacks.

use std::path::Path;

/// The files copied, as `before.NAME` and `after.NAME`.
pub const PROC_FILES: [&str; 4] = ["zoneinfo", "pagetypeinfo", "buddyinfo", "vmstat"];

/// Copied when present: a kernel built without `CONFIG_SWAP` has no `/proc/swaps`.
pub const OPTIONAL_PROC_FILES: [&str; 1] = ["swaps"];

/// The files, read into memory (so reading them is all that happens between the
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
        for name in OPTIONAL_PROC_FILES {
            let path = proc.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => files.push((name, bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
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

/// The THP sysfs files copied once, as `thp.NAME`: the settings the recording was made
/// under, which `replay --thp-enabled/--thp-defrag` starts from.
pub const THP_FILES: [&str; 2] = ["enabled", "defrag"];

/// Copies `SYSFS/enabled` and `SYSFS/defrag` (`/sys/kernel/mm/transparent_hugepage`) into
/// `DIR/thp.enabled` and `DIR/thp.defrag`, byte for byte. A kernel without THP has neither
/// file: nothing is copied.
pub fn copy_thp_settings(sysfs: &Path, dir: &Path) -> Result<(), String> {
    if !sysfs.is_dir() {
        return Ok(());
    }
    for name in THP_FILES {
        let (from, to) = (sysfs.join(name), dir.join(format!("thp.{name}")));
        let bytes = std::fs::read(&from).map_err(|e| format!("{}: {e}", from.display()))?;
        std::fs::write(&to, bytes).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(())
}

/// The `vm` sysctls copied once, as `vm.NAME`: the policy the recording's kernel ran
/// (`replay` compares its own policy's replay with the kernel).
pub const VM_FILES: [&str; 1] = ["defrag_mode"];

/// Copies each of [`VM_FILES`] from `proc_vm` (`/proc/sys/vm`) into `DIR/vm.NAME`, byte for
/// byte; one the kernel lacks (`defrag_mode` is 6.15's) is left out.
pub fn copy_vm_settings(proc_vm: &Path, dir: &Path) -> Result<(), String> {
    for name in VM_FILES {
        let (from, to) = (proc_vm.join(name), dir.join(format!("vm.{name}")));
        match std::fs::read(&from) {
            Ok(bytes) => std::fs::write(&to, bytes).map_err(|e| format!("{}: {e}", to.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", from.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_settings_are_copied_when_the_kernel_has_them() {
        let proc_vm = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        copy_vm_settings(proc_vm.path(), out.path()).unwrap();
        assert!(!out.path().join("vm.defrag_mode").exists(), "a kernel before 6.15: no copy");
        std::fs::write(proc_vm.path().join("defrag_mode"), "1\n").unwrap();
        copy_vm_settings(proc_vm.path(), out.path()).unwrap();
        assert_eq!(std::fs::read(out.path().join("vm.defrag_mode")).unwrap(), b"1\n");
    }

    #[test]
    fn thp_settings_are_copied_when_the_kernel_has_thp() {
        let sysfs = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        copy_thp_settings(&sysfs.path().join("none"), out.path()).unwrap();
        assert!(!out.path().join("thp.enabled").exists(), "no THP, no copy");
        std::fs::write(sysfs.path().join("enabled"), "always [madvise] never\n").unwrap();
        let err = copy_thp_settings(sysfs.path(), out.path()).unwrap_err();
        assert!(err.contains("defrag"), "{err}");
        std::fs::write(sysfs.path().join("defrag"), "always defer defer+madvise [madvise] never\n").unwrap();
        copy_thp_settings(sysfs.path(), out.path()).unwrap();
        for name in THP_FILES {
            let copy = std::fs::read(out.path().join(format!("thp.{name}"))).unwrap();
            assert_eq!(copy, std::fs::read(sysfs.path().join(name)).unwrap());
        }
    }

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
        assert!(!out.path().join("before.swaps").exists(), "no /proc/swaps, no copy");
        std::fs::write(proc.path().join("swaps"), "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
            .unwrap();
        Snapshot::read(proc.path()).unwrap().write(out.path(), "after").unwrap();
        let copy = std::fs::read(out.path().join("after.swaps")).unwrap();
        assert_eq!(copy, std::fs::read(proc.path().join("swaps")).unwrap());
        std::fs::remove_file(proc.path().join("vmstat")).unwrap();
        let err = Snapshot::read(proc.path()).expect_err("vmstat is missing");
        assert!(err.contains("vmstat"), "{err}");
    }
}
