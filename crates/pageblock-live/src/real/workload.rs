//! The pressure workloads `lab real` runs: a C build, THP-madvised anonymous bursts,
//! page-cache churn over a large file, and the memory hog that leaves the rest of them a
//! chosen amount of memory. Which parts run is named on the command line
//! (`--workload build,bursts,churn`); the hog runs whenever `--available` is given.
//!
//! The build is `make -jN` in a fresh copy of a source tree given by path, or of a synthetic
//! one this module writes: C files of generated functions, each costing `cc -O2` about a
//! second and 80 MiB on this machine — a compile job's size and life.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The workload's parts that can be named.
pub const PARTS: [&str; 3] = ["build", "bursts", "churn"];

/// Where the build's sources come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildSource {
    /// A tree with a Makefile, copied fresh for every run.
    Tree(PathBuf),
    /// The synthetic tree of this many C files.
    Synthetic {
        /// Files (compile jobs).
        files: u32,
    },
}

/// A C build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    /// Its sources.
    pub source: BuildSource,
    /// `make -j`.
    pub jobs: u32,
}

/// THP bursts: every `period_ms`, map `mib` MiB aligned to the huge page size,
/// `madvise(MADV_HUGEPAGE)` it, fault every page in, hold it, unmap it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bursts {
    /// Size of a burst.
    pub mib: u64,
    /// Time from one burst's start to the next's.
    pub period_ms: u64,
}

/// Page-cache churn: read a file of `mib` MiB over and over, rewriting one chunk in eight (so
/// that dirty pages and writeback take part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Churn {
    /// The file's size.
    pub mib: u64,
}

/// A named pressure workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The build, if it is part of it; a run lasts until the build ends.
    pub build: Option<Build>,
    /// THP bursts, if part of it.
    pub bursts: Option<Bursts>,
    /// Page-cache churn, if part of it.
    pub churn: Option<Churn>,
    /// How long a run lasts when there is no build (and the most a build may take).
    pub duration_s: u64,
}

impl Workload {
    /// The parts' names, as given to `--workload`.
    pub fn name(&self) -> String {
        let parts = [self.build.is_some(), self.bursts.is_some(), self.churn.is_some()];
        PARTS.iter().zip(parts).filter(|(_, on)| *on).map(|(n, _)| *n).collect::<Vec<_>>().join(",")
    }
}

/// Functions per synthetic file: with 60, `gcc -O2` takes ~1.4 s and ~80 MiB a file here.
const FUNCTIONS_PER_FILE: u32 = 60;

/// A small deterministic generator, so the synthetic tree is the same on every machine.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The text of synthetic file `index`: functions of a 64-way switch and a loop each, which
/// keep the optimiser busy.
pub fn synthetic_source(index: u32) -> String {
    let mut r = Lcg(u64::from(index) + 1);
    let mut s = String::from("typedef unsigned long u64;\n");
    for f in 0..FUNCTIONS_PER_FILE {
        let _ = writeln!(
            s,
            "u64 f{index}_{f}(u64 x, u64 y) {{ u64 a = x ^ {}u, b = y + {}u;",
            r.below(1 << 30),
            r.below(1 << 20)
        );
        s.push_str("  switch ((x >> 3) & 63) {\n");
        for c in 0..64 {
            let _ = writeln!(
                s,
                "  case {c}: a = a * {}u + (b >> {}); b ^= a << {}; break;",
                3 + r.below(997),
                1 + r.below(29),
                1 + r.below(19)
            );
        }
        let _ = writeln!(
            s,
            "  }}\n  for (int i = 0; i < {}; i++) {{ a += b * i; b = (b << 1) | (a >> 63); }}",
            4 + r.below(60)
        );
        s.push_str("  return a ^ b; }\n");
    }
    s
}

/// Writes the synthetic tree of `files` C files and its Makefile into `dir`.
pub fn write_synthetic_tree(dir: &Path, files: u32) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    let objs: Vec<String> = (0..files).map(|i| format!("u{i}.o")).collect();
    let makefile = format!(
        "# Written by pageblock lab real: a synthetic C build, one compile job a file.\n\
         all: {}\n%.o: %.c\n\tcc -O2 -c $< -o $@\nclean:\n\trm -f *.o\n",
        objs.join(" ")
    );
    let path = dir.join("Makefile");
    std::fs::write(&path, makefile).map_err(|e| err(&path, e))?;
    for i in 0..files {
        let path = dir.join(format!("u{i}.c"));
        std::fs::write(&path, synthetic_source(i)).map_err(|e| err(&path, e))?;
    }
    Ok(())
}

/// Copies the tree at `from` to `to` (which must not exist), regular files, directories and
/// symbolic links only.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| format!("{}: {e}", src.display()))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(|e| format!("{}: {e}", src.display()))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_tree_is_the_same_every_time_and_differs_per_file() {
        assert_eq!(synthetic_source(3), synthetic_source(3));
        assert_ne!(synthetic_source(3), synthetic_source(4));
        assert_eq!(synthetic_source(0).matches("switch").count(), FUNCTIONS_PER_FILE as usize);
    }

    #[test]
    fn a_written_tree_has_a_makefile_naming_every_object_and_copies_whole() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        write_synthetic_tree(&tree, 3).unwrap();
        let makefile = std::fs::read_to_string(tree.join("Makefile")).unwrap();
        assert!(makefile.contains("all: u0.o u1.o u2.o\n"), "{makefile}");
        let copy = dir.path().join("c");
        copy_tree(&tree, &copy).unwrap();
        assert_eq!(std::fs::read_to_string(copy.join("u2.c")).unwrap(), synthetic_source(2));
        assert!(copy_tree(&tree, &copy).is_err(), "an existing destination is refused");
    }

    #[test]
    fn a_workload_is_named_by_its_parts() {
        let w = Workload {
            build: None,
            bursts: Some(Bursts { mib: 1, period_ms: 1 }),
            churn: Some(Churn { mib: 1 }),
            duration_s: 1,
        };
        assert_eq!(w.name(), "bursts,churn");
    }
}
