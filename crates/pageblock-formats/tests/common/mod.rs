//! Helpers shared by the integration tests: the sample files in `tests/data/`.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

/// Path of a file under `tests/data/`.
pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// Text of a file under `tests/data/`.
pub fn data(name: &str) -> String {
    let p = data_path(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The decompressed 94,532-event real trace (`trace_full.txt.gz`).
pub fn trace_full() -> String {
    let f = std::fs::File::open(data_path("trace_full.txt.gz")).expect("trace_full.txt.gz");
    let mut s = String::new();
    flate2::read::GzDecoder::new(f).read_to_string(&mut s).expect("gunzip");
    s
}

/// The /proc snapshots of the linux-6.18 clone/tar/python/THP run: `(label, name)` pairs.
pub const SNAPSHOTS: [&str; 2] = ["before", "after"];
