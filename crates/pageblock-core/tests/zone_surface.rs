//! A zone cannot be changed from outside the crate: `NodeLocks::lock_zone` is public (the
//! library implements it), so every mutating method of `Zone` must be crate-private. The
//! simulator's few operations outside the allocation path are behind the
//! `unstable-internals` feature (`pageblock_core::unstable::ZoneInternals`).

use std::path::Path;

/// Every `pub fn …(&mut self` in `dir`, as `file:line`.
fn public_mutators(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read the sources") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            public_mutators(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let mut lines = text.lines().enumerate().peekable();
            while let Some((i, line)) = lines.next() {
                let line = line.trim_start();
                if !line.starts_with("pub fn ") {
                    continue;
                }
                // The receiver may sit on the next line when rustfmt breaks the signature.
                let next = lines.peek().map_or("", |(_, l)| l.trim_start());
                if line.contains("(&mut self") || (line.ends_with('(') && next.starts_with("&mut self")) {
                    found.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
}

/// Regression (issue 22): `free_pcp_page`, `split_page`, `adopt_allocated`, `set_layout`
/// and eight more were `pub`, so `node.lock_zone(0).free_pcp_page(..)` corrupted a node from
/// safe code outside the crate.
#[test]
fn no_zone_method_that_changes_it_is_public() {
    let mut found = Vec::new();
    public_mutators(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/zone"), &mut found);
    assert!(found.is_empty(), "public mutating methods of Zone: {found:?}");
}
