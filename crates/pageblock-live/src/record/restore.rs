//! `pageblock record --restore [DIR]`: writes back the tracefs state that a recording which
//! died without restoring (SIGKILL, a crash) left changed, from its journal, and unmounts
//! tracefs if that recording had mounted it.

use std::path::{Path, PathBuf};

use crate::tracefs::{self, Mounted};

/// Restores from the well-known journal, or from the one in the recording directory `dir`.
pub fn run(dir: Option<&Path>) -> Result<(), String> {
    super::need_root()?;
    let path =
        dir.map_or_else(|| PathBuf::from(tracefs::JOURNAL_RUN_PATH), |d| d.join(tracefs::JOURNAL_FILE));
    if !path.exists() {
        return Err(format!(
            "{}: no journal, nothing to restore (a recording that ended by itself restored tracefs)",
            path.display()
        ));
    }
    let mut mounted = Mounted::find_or_mount()?;
    let state = tracefs::restore_journal(&mounted.fs, &path)?;
    if state.mounted_here && !mounted.mounted_here() && state.tracefs == mounted.fs.root() {
        mounted.take_over_mount();
    }
    mounted.unmount()?;
    eprintln!(
        "pageblock record: restored {} that pageblock record pid {} changed",
        super::report::count(state.saved.len() as u64, "tracefs file"),
        state.owner.pid
    );
    Ok(())
}
