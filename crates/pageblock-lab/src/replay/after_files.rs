//! The simulated machine at the end of a replay as the kernel's own files, beside the
//! recording's `after.*`: `POLICY.after.buddyinfo`, `.pagetypeinfo` and `.zoneinfo` in a
//! directory the user names (`replay --after-dir`), byte-compatible with `/proc`, so the
//! real and the simulated end can be diffed or read by the same tools (free memory by
//! migratetype, pageblocks by owner, watermarks).

use std::path::Path;

use pageblock_core::show::{self, PagetypeinfoMode};
use pageblock_core::Node;

/// The files written for each policy, as `POLICY.after.NAME`.
pub const NAMES: [&str; 3] = ["buddyinfo", "pagetypeinfo", "zoneinfo"];

/// Writes `node`'s files as `dir/POLICY.after.NAME`, each whole or not at all (a temporary
/// file renamed over the name, so an earlier replay's file is never left half written).
pub fn write(dir: &Path, policy: &str, node: &Node) -> Result<(), String> {
    let texts = [
        show::buddyinfo(node.shared()).render(),
        show::pagetypeinfo(node, PagetypeinfoMode::CountsCapped).render(),
        show::zoneinfo(node.shared()).render(),
    ];
    for (name, text) in NAMES.iter().zip(texts) {
        let path = dir.join(format!("{policy}.after.{name}"));
        let tmp = dir.join(format!(".{policy}.after.{name}.tmp"));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("--after-dir: {}: {e}", path.display()))?;
    }
    Ok(())
}
