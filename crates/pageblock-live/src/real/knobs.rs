//! The kernel settings `lab real` changes — sysctls under `/proc/sys/vm`, THP's `enabled` and
//! `defrag`, the ring buffers' size in tracefs (and tracefs mounted, if it was not), and a
//! swap file turned on — each saved in a journal on disk before its first
//! change and written back at the end, on every way out that runs code (a normal end, an
//! error, SIGINT, SIGTERM). A harness killed outright leaves its journal behind:
//! `pageblock lab real --restore` writes the state back from it.
//!
//! The journal has two copies, as `record`'s has: [`JOURNAL_RUN_PATH`], created exclusively
//! (so two harnesses never fight over the same settings), and [`JOURNAL_FILE`] in the run's
//! directory. A clean restore removes both.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state_file::{claim_copies, remove_own_copies, replace};
use crate::tracefs::{buffer_size_as_found, c_path, set_buffer_size, unmount, Mounted, Owner, Tracefs};

/// The well-known copy of the journal.
pub const JOURNAL_RUN_PATH: &str = "/run/pageblock/real.state";
/// The copy's name in the harness's output directory.
pub const JOURNAL_FILE: &str = "real.state";

/// One setting as found: the file and the value that writes its state back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedKnob {
    /// The file.
    pub path: PathBuf,
    /// What to write to it.
    pub value: String,
}

/// What a journal holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobsState {
    /// The harness that changed the settings.
    pub owner: Owner,
    /// Every copy of the journal.
    pub copies: Vec<PathBuf>,
    /// The settings as found, in the order they were first changed.
    pub saved: Vec<SavedKnob>,
    /// A swap file the harness turned on (turned off again at the restore).
    pub swapfile: Option<PathBuf>,
    /// Where the harness mounted tracefs (unmounted at the restore, after the settings).
    #[serde(default)]
    pub tracefs_mount: Option<PathBuf>,
}

/// The settings changed so far, and how to put them back.
#[derive(Debug)]
pub struct Knobs {
    state: KnobsState,
}

/// The value that writes a settings file's current state back: the selected word of a
/// choice file (`always [madvise] never` → `madvise`), else the text without its newline.
pub fn current_value(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].to_owned(),
        _ => text.trim_end_matches('\n').to_owned(),
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing `{value}` to {}: {e}", path.display()))
}

impl Knobs {
    /// Creates every copy of an empty journal. Refused while the first copy exists: another
    /// harness is running, or one died without restoring.
    pub fn claim(copies: &[PathBuf]) -> Result<Knobs, String> {
        let state = KnobsState {
            owner: Owner::this_process()?,
            copies: copies.to_vec(),
            saved: Vec::new(),
            swapfile: None,
            tracefs_mount: None,
        };
        claim_copies(copies, &to_json(&state)?, refusal)?;
        Ok(Knobs { state })
    }

    /// Writes `value` to the settings file `path`, saving what it held first (once: the
    /// first value found is the one restored). The journal is on disk before the change.
    pub fn set(&mut self, path: &Path, value: &str) -> Result<(), String> {
        if !self.state.saved.iter().any(|s| s.path == path) {
            let found = current_value(&read(path)?);
            self.state.saved.push(SavedKnob { path: path.to_owned(), value: found });
            self.sync()?;
        }
        write(path, value)?;
        let now = current_value(&read(path)?);
        if now != value {
            return Err(format!("{} holds `{now}` after writing `{value}`", path.display()));
        }
        Ok(())
    }

    /// Finds tracefs, mounting it if it is not mounted: a mount made here is in the journal
    /// before anything in it changes, and the restore undoes it after the settings.
    pub fn tracefs(&mut self) -> Result<Tracefs, String> {
        let (fs, mounted_here) = Mounted::find_or_mount()?.into_parts();
        if let Some(path) = mounted_here {
            self.state.tracefs_mount = Some(path);
            self.sync()?;
        }
        Ok(fs)
    }

    /// Sizes the ring buffer of every CPU of tracefs `fs` to `kb` KiB until the restore,
    /// saving the size found (per CPU when the CPUs differ, see
    /// [`crate::tracefs::buffer_size_as_found`]). The recordings of the session then find
    /// their buffers allocated: none allocates hundreds of MiB of unmovable memory just
    /// before its trace begins.
    pub fn set_ring_buffer(&mut self, fs: &Tracefs, kb: u64) -> Result<(), String> {
        if !self.state.saved.iter().any(|s| s.path.ends_with("buffer_size_kb")) {
            for (rel, value) in buffer_size_as_found(fs)? {
                self.state.saved.push(SavedKnob { path: fs.path(&rel), value });
            }
            self.sync()?;
        }
        set_buffer_size(fs, kb)
    }

    /// Turns the swap file `file` on (it stays on until the restore).
    pub fn swapon(&mut self, file: &Path) -> Result<(), String> {
        self.state.swapfile = Some(file.to_owned());
        self.sync()?;
        let c = c_path(file)?;
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        if unsafe { libc::swapon(c.as_ptr(), 0) } != 0 {
            let e = std::io::Error::last_os_error();
            self.state.swapfile = None;
            self.sync()?;
            return Err(format!("swapon {}: {e}", file.display()));
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), String> {
        let json = to_json(&self.state)?;
        self.state.copies.iter().try_for_each(|path| replace(path, &json))
    }

    /// Writes every setting back (newest first) and turns the swap file off; removes the
    /// journal if all of it went back, else keeps it and says how to finish.
    pub fn restore(self) -> Result<(), String> {
        let result = write_back(&self.state);
        match result {
            Ok(()) => {
                remove_copies(&self.state);
                Ok(())
            }
            Err(e) => Err(format!(
                "{e}; the journal is kept: run `pageblock lab real --restore` when the cause is gone"
            )),
        }
    }
}

/// Puts back what `state` saved: each setting, then the swap file off, then tracefs
/// unmounted if the harness mounted it.
fn write_back(state: &KnobsState) -> Result<(), String> {
    let mut first_error = None;
    for saved in state.saved.iter().rev() {
        if let Err(e) = write(&saved.path, &saved.value) {
            first_error.get_or_insert(e);
        }
    }
    if let Some(file) = &state.swapfile {
        if let Err(e) = swapoff(file) {
            first_error.get_or_insert(e);
        }
    }
    if let Some(path) = &state.tracefs_mount {
        if let Err(e) = unmount(path) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Turns `file` off as swap; a file that is not in use as swap is fine.
fn swapoff(file: &Path) -> Result<(), String> {
    let c = c_path(file)?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) && e.kind() != std::io::ErrorKind::NotFound {
            return Err(format!("swapoff {}: {e}", file.display()));
        }
    }
    Ok(())
}

/// `pageblock lab real --restore [DIR]`: writes back what the journal at `path` saved, when
/// its harness is no longer running; the number of settings written.
pub fn restore_journal(path: &Path) -> Result<usize, String> {
    restore_journal_after(path, Path::new(crate::tracefs::JOURNAL_RUN_PATH))
}

/// [`restore_journal`], refused while the journal of a recording (`record_journal`) is
/// still there: that recording saved the session's ring buffer size, and writing it back
/// after the session's restore would leave the buffers at the session's size (and need
/// tracefs after the session unmounted it).
fn restore_journal_after(path: &Path, record_journal: &Path) -> Result<usize, String> {
    if record_journal.exists() {
        return Err(format!(
            "{} is there: a recording of the session died too; run `pageblock record --restore` first",
            record_journal.display()
        ));
    }
    if !path.exists() {
        return Err(format!(
            "{}: no journal, nothing to restore (a lab real that ended by itself put its settings back)",
            path.display()
        ));
    }
    let state = load(path)?;
    if state.owner.is_running() {
        return Err(format!(
            "pageblock lab real pid {} is still running; it restores its settings itself",
            state.owner.pid
        ));
    }
    write_back(&state)?;
    remove_copies(&state);
    Ok(state.saved.len())
}

fn load(path: &Path) -> Result<KnobsState, String> {
    let text = read(path)?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a pageblock lab real journal: {e}", path.display()))
}

fn remove_copies(state: &KnobsState) {
    remove_own_copies(&state.copies, |path| load(path).is_ok_and(|other| other.owner == state.owner));
}

/// Why a harness cannot start while the journal at `path` exists.
fn refusal(path: &Path) -> String {
    match load(path) {
        Ok(other) if other.owner.is_running() => {
            format!("another pageblock lab real (pid {}) is running; wait until it ends", other.owner.pid)
        }
        Ok(other) => format!(
            "a pageblock lab real (pid {}, no longer running) left kernel settings changed; run `pageblock lab real --restore`",
            other.owner.pid
        ),
        Err(e) => format!("{e}; remove it if no pageblock lab real is running"),
    }
}

fn to_json(state: &KnobsState) -> Result<String, String> {
    serde_json::to_string_pretty(state).map(|j| j + "\n").map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_of_a_choice_file_is_its_selected_word() {
        assert_eq!(current_value("always [madvise] never\n"), "madvise");
        assert_eq!(current_value("[always] defer defer+madvise madvise never\n"), "always");
        assert_eq!(current_value("1\n"), "1");
        assert_eq!(current_value("256\t256\t32\t0\n"), "256\t256\t32\t0");
    }

    fn knob(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn settings_go_back_as_found_and_the_journal_goes_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let journal = [dir.path().join("run/real.state"), dir.path().join("out/real.state")];
        let dm = knob(dir.path(), "defrag_mode", "0\n");
        let mut knobs = Knobs::claim(&journal).unwrap();
        knobs.set(&dm, "1").unwrap();
        knobs.set(&dm, "0").unwrap();
        knobs.set(&dm, "1").unwrap();
        let saved = load(&journal[1]).unwrap().saved;
        assert_eq!(
            saved,
            vec![SavedKnob { path: dm.clone(), value: "0".into() }],
            "the first value found, once"
        );
        assert!(Knobs::claim(&journal).unwrap_err().contains("is running"), "a second harness is refused");
        knobs.restore().unwrap();
        assert_eq!(std::fs::read_to_string(&dm).unwrap(), "0");
        assert!(!journal[0].exists() && !journal[1].exists());
    }

    #[test]
    fn a_dead_harness_journal_is_restored_by_restore_journal() {
        let dir = tempfile::tempdir().unwrap();
        let journal = [dir.path().join("real.state")];
        let dm = knob(dir.path(), "defrag_mode", "0\n");
        let mut knobs = Knobs::claim(&journal).unwrap();
        knobs.set(&dm, "1").unwrap();
        // A harness killed outright: its journal stays, naming a process that is gone.
        std::mem::forget(knobs);
        let mut state = load(&journal[0]).unwrap();
        state.owner.start_time += 1;
        std::fs::write(&journal[0], to_json(&state).unwrap()).unwrap();
        assert!(Knobs::claim(&journal).unwrap_err().contains("--restore"));
        // A recording's journal left beside it goes first.
        let record_journal = dir.path().join("record.state");
        std::fs::write(&record_journal, "{}").unwrap();
        let refused = restore_journal_after(&journal[0], &record_journal).unwrap_err();
        assert!(refused.contains("record --restore` first"), "{refused}");
        assert_eq!(std::fs::read_to_string(&dm).unwrap(), "1", "nothing written back yet");
        std::fs::remove_file(&record_journal).unwrap();
        assert_eq!(restore_journal_after(&journal[0], &record_journal).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(&dm).unwrap(), "0");
        assert!(!journal[0].exists());
    }

    #[test]
    fn a_setting_the_kernel_refuses_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let journal = [dir.path().join("real.state")];
        let mut knobs = Knobs::claim(&journal).unwrap();
        let missing = dir.path().join("no_such_sysctl");
        let err = knobs.set(&missing, "1").unwrap_err();
        assert!(err.contains("no_such_sysctl"), "{err}");
        knobs.restore().unwrap();
    }

    /// The session's ring buffer size goes back as found: the expanded size of a boot-time
    /// buffer, each CPU's own when they differ.
    #[test]
    fn the_ring_buffers_go_back_to_the_size_found() {
        for (found, per_cpu, restored) in [
            ("7 (expanded: 1408)\n", ["7\n", "7\n"], vec![("buffer_size_kb", "1408")]),
            (
                "X\n",
                ["1024\n", "2048\n"],
                vec![("per_cpu/cpu0/buffer_size_kb", "1024"), ("per_cpu/cpu1/buffer_size_kb", "2048")],
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("tracing");
            std::fs::create_dir_all(root.join("per_cpu/cpu0")).unwrap();
            std::fs::create_dir_all(root.join("per_cpu/cpu1")).unwrap();
            knob(&root, "buffer_size_kb", found);
            for (cpu, text) in per_cpu.iter().enumerate() {
                knob(&root, &format!("per_cpu/cpu{cpu}/buffer_size_kb"), text);
            }
            let fs = Tracefs::at(&root);
            let journal = [dir.path().join("real.state")];
            let mut knobs = Knobs::claim(&journal).unwrap();
            knobs.set_ring_buffer(&fs, 262_144).unwrap();
            assert_eq!(std::fs::read_to_string(root.join("buffer_size_kb")).unwrap(), "262144");
            let saved = load(&journal[0]).unwrap().saved;
            let want: Vec<SavedKnob> = restored
                .iter()
                .map(|(rel, v)| SavedKnob { path: root.join(rel), value: (*v).into() })
                .collect();
            assert_eq!(saved, want, "{found:?}");
            knobs.restore().unwrap();
            for (rel, v) in &restored {
                assert_eq!(std::fs::read_to_string(root.join(rel)).unwrap(), *v);
            }
        }
    }
}
