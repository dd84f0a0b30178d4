//! Running the `pageblock` binary from the end-to-end tests.

use std::process::{Command, Output};

/// Run `pageblock ARGS` to completion.
pub fn pageblock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pageblock")).args(args).output().expect("run pageblock")
}

/// The stdout of `pageblock ARGS`, which must succeed.
pub fn stdout_of(args: &[&str]) -> String {
    let out = pageblock(args);
    assert!(out.status.success(), "pageblock {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}
