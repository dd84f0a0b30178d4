//! `mm_vmscan_lru_shrink_inactive` (`include/trace/events/vmscan.h`): one call of
//! `shrink_inactive_list()`, a batch of reclaim's looks at one inactive LRU list.
//!
//! ```text
//! nid=%d nr_scanned=%ld nr_reclaimed=%ld nr_dirty=%ld nr_writeback=%ld nr_congested=%ld
//! nr_immediate=%ld nr_activate_anon=%d nr_activate_file=%d nr_ref_keep=%ld nr_unmap_fail=%ld
//! priority=%d flags=%s
//! ```
//!
//! (one line), where `flags` is `show_reclaim_flags()`: `RECLAIM_WB_ANON` or
//! `RECLAIM_WB_FILE` for the list, joined by `|` with `RECLAIM_WB_ASYNC` (what every 6.x
//! kernel passes: `trace_reclaim_flags(file)`). The tracepoint is the only record of how
//! reclaim judged the pages it met: kept because young (`nr_ref_keep`), activated because used
//! again, dirty or under writeback, or reclaimed.

use std::fmt;

use crate::scan::Scan;
use crate::text::quote;
use crate::ParseError;

/// The tracepoint's name.
pub const LRU_SHRINK_INACTIVE: &str = "mm_vmscan_lru_shrink_inactive";

/// One `shrink_inactive_list()` call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MmVmscanLruShrinkInactive {
    /// The node.
    pub nid: i32,
    /// Pages isolated from the list's tail and looked at (a large folio counts all of its pages).
    pub nr_scanned: i64,
    /// Pages freed by this call.
    pub nr_reclaimed: i64,
    /// Dirty pages met.
    pub nr_dirty: i64,
    /// Pages met under writeback.
    pub nr_writeback: i64,
    /// Dirty pages whose device was congested.
    pub nr_congested: i64,
    /// Anonymous pages moved to the active list (used again, or not unmappable).
    pub nr_activate_anon: i32,
    /// File pages moved to the active list (used again, mapped executable, dirty or under
    /// writeback).
    pub nr_activate_file: i32,
    /// Pages met under writeback with `PG_reclaim` already set (`nr_immediate`).
    pub nr_immediate: i64,
    /// Pages kept on the inactive list because they were referenced (`FOLIOREF_KEEP`: a
    /// young page table entry seen for the first time).
    pub nr_ref_keep: i64,
    /// Pages that could not be unmapped.
    pub nr_unmap_fail: i64,
    /// The reclaim priority (12 = lightest).
    pub priority: i32,
    /// The file list (`RECLAIM_WB_FILE`), else the anonymous one (`RECLAIM_WB_ANON`).
    pub file: bool,
}

impl MmVmscanLruShrinkInactive {
    /// Parses the payload (the text after `mm_vmscan_lru_shrink_inactive: `).
    pub fn parse(payload: &str) -> Result<Self, ParseError> {
        let mut s = Scan::new(LRU_SHRINK_INACTIVE, payload);
        let ld = |s: &mut Scan<'_>, lit: &str, what: &str| -> Result<i64, ParseError> {
            s.lit(lit)?;
            s.ld(what)
        };
        s.lit("nid=")?;
        let nid = s.d("nid")?;
        let nr_scanned = ld(&mut s, " nr_scanned=", "nr_scanned")?;
        let nr_reclaimed = ld(&mut s, " nr_reclaimed=", "nr_reclaimed")?;
        let nr_dirty = ld(&mut s, " nr_dirty=", "nr_dirty")?;
        let nr_writeback = ld(&mut s, " nr_writeback=", "nr_writeback")?;
        let nr_congested = ld(&mut s, " nr_congested=", "nr_congested")?;
        let nr_immediate = ld(&mut s, " nr_immediate=", "nr_immediate")?;
        s.lit(" nr_activate_anon=")?;
        let nr_activate_anon = s.d("nr_activate_anon")?;
        s.lit(" nr_activate_file=")?;
        let nr_activate_file = s.d("nr_activate_file")?;
        let nr_ref_keep = ld(&mut s, " nr_ref_keep=", "nr_ref_keep")?;
        let nr_unmap_fail = ld(&mut s, " nr_unmap_fail=", "nr_unmap_fail")?;
        s.lit(" priority=")?;
        let priority = s.d("priority")?;
        s.lit(" flags=")?;
        let flags = s.s("flags")?;
        s.end()?;
        let file = match flags {
            "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC" => true,
            "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC" => false,
            other => {
                let want = "`RECLAIM_WB_ANON|RECLAIM_WB_ASYNC` or `RECLAIM_WB_FILE|RECLAIM_WB_ASYNC`";
                return Err(s.error(format!("flags {} are not {want}", quote(other))));
            }
        };
        Ok(MmVmscanLruShrinkInactive {
            nid,
            nr_scanned,
            nr_reclaimed,
            nr_dirty,
            nr_writeback,
            nr_congested,
            nr_activate_anon,
            nr_activate_file,
            nr_immediate,
            nr_ref_keep,
            nr_unmap_fail,
            priority,
            file,
        })
    }
}

impl fmt::Display for MmVmscanLruShrinkInactive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nid={} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} \
             nr_immediate={} nr_activate_anon={} nr_activate_file={} nr_ref_keep={} \
             nr_unmap_fail={} priority={} flags={}|RECLAIM_WB_ASYNC",
            self.nid,
            self.nr_scanned,
            self.nr_reclaimed,
            self.nr_dirty,
            self.nr_writeback,
            self.nr_congested,
            self.nr_immediate,
            self.nr_activate_anon,
            self.nr_activate_file,
            self.nr_ref_keep,
            self.nr_unmap_fail,
            self.priority,
            if self.file { "RECLAIM_WB_FILE" } else { "RECLAIM_WB_ANON" },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANON: &str = "nid=0 nr_scanned=512 nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 \
        nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=512 nr_unmap_fail=0 \
        priority=11 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC";

    #[test]
    fn a_real_payload_round_trips() {
        let e = MmVmscanLruShrinkInactive::parse(ANON).unwrap();
        assert_eq!((e.nr_scanned, e.nr_ref_keep, e.priority, e.file), (512, 512, 11, false));
        assert_eq!(e.to_string(), ANON);
    }

    #[test]
    fn malformed_payloads_name_their_field() {
        let bad = |from: &str, to: &str, want: &str| {
            let err = MmVmscanLruShrinkInactive::parse(&ANON.replace(from, to)).unwrap_err();
            assert!(err.reason.contains(want), "{}", err.reason);
        };
        bad("nr_ref_keep=512", "nr_ref_keep=x", "nr_ref_keep");
        bad("priority=11", "priority=011", "priority");
        bad("RECLAIM_WB_ANON|", "RECLAIM_WB_MIXED|", "flags");
        bad(" nr_congested=0", "", "nr_congested");
        let err = MmVmscanLruShrinkInactive::parse(&format!("{ANON} extra")).unwrap_err();
        assert!(err.reason.contains("after the last field"), "{}", err.reason);
    }
}
