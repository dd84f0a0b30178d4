//! Whether the recorded machine could swap. Without a swap area the kernel's reclaim
//! neither scans nor ages anonymous memory and does not count it as reclaimable
//! (`can_reclaim_anon_pages`), so a closed-loop replay that swapped where the traced kernel
//! could not would reclaim memory the kernel had to leave, and compact, stall and fall back
//! less. In order of what it rests on:
//!
//! * a what-if (`replay --swap on|off`);
//! * `before.swaps`, the recording's copy of `/proc/swaps` (`record` and `lab real` take it):
//!   any area listed means swap;
//! * without it, the traced kernel's own counters: a run that scanned page cache
//!   (`pgscan_file`) and not one anonymous page (`pgscan_anon`, `pswpout` 0) had nothing
//!   to swap to, or never needed to, and the replay does not swap either;
//! * otherwise swap is assumed, as the simulator always did.

use serde::Serialize;

use super::load::Snapshots;

/// The replay's swap, and what it rests on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwapSpace {
    /// Anonymous memory can be swapped out.
    pub swap: bool,
    /// Why, in words.
    pub source: String,
}

/// The swap of the machine `s` describes, or of the what-if `what_if`.
pub fn swap_space(s: &Snapshots, what_if: Option<bool>) -> SwapSpace {
    if let Some(swap) = what_if {
        let source = format!("what if: swap {}", if swap { "on" } else { "off" });
        return SwapSpace { swap, source };
    }
    if let Some(swaps) = &s.before_swaps {
        let swap = !swaps.areas.is_empty();
        let source = if swap {
            format!("{} KiB in {} area(s) (before.swaps)", swaps.size_kib(), swaps.areas.len())
        } else {
            "none (before.swaps lists no area)".to_owned()
        };
        return SwapSpace { swap, source };
    }
    if let Some(d) = s.real_vmstat_delta() {
        let (file, anon, out) = (d.get("pgscan_file"), d.get("pgscan_anon"), d.get("pswpout"));
        if let (Some(file @ 1..), Some(0), Some(0)) = (file, anon, out) {
            let source =
                format!("none: the traced kernel scanned {file} page cache pages and no anonymous one (no before.swaps)");
            return SwapSpace { swap: false, source };
        }
    }
    SwapSpace { swap: true, source: "assumed (no before.swaps)".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_formats::swaps::{Swaps, HEADER};
    use pageblock_formats::vmstat::VmStat;

    fn with(swaps: Option<&str>, delta: Option<&str>) -> Snapshots {
        Snapshots {
            before_swaps: swaps.map(|t| Swaps::parse(&format!("{HEADER}\n{t}")).unwrap()),
            vmstat_delta: delta.map(|t| VmStat::parse_delta(t).unwrap()),
            ..Snapshots::default()
        }
    }

    #[test]
    fn the_recorded_areas_decide_then_the_kernels_scanning() {
        let area = "/swapfile file 4194300 0 -2\n";
        let no_anon = "pgscan_file=100\npgscan_anon=0\npswpout=0\n";
        assert!(swap_space(&with(Some(area), Some(no_anon)), None).swap, "an area listed: swap");
        let none = swap_space(&with(Some(""), None), None);
        assert_eq!((none.swap, none.source.as_str()), (false, "none (before.swaps lists no area)"));
        // No copy of /proc/swaps: the counters.
        let inferred = swap_space(&with(None, Some(no_anon)), None);
        assert!(!inferred.swap && inferred.source.contains("scanned 100 page cache pages"), "{inferred:?}");
        assert!(swap_space(&with(None, Some("pgscan_file=100\npgscan_anon=5\npswpout=0\n")), None).swap);
        assert!(
            swap_space(&with(None, Some("pgscan_file=0\npgscan_anon=0\npswpout=0\n")), None).swap,
            "no pressure"
        );
        assert!(swap_space(&with(None, Some("pgscan_file=100\n")), None).swap, "no anon counter: assumed");
        assert!(swap_space(&with(None, None), None).swap);
        // A what-if overrides the recording.
        assert!(!swap_space(&with(Some(area), None), Some(false)).swap);
        assert!(swap_space(&with(None, Some(no_anon)), Some(true)).swap);
    }
}
