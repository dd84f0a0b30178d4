//! [`GfpTable`]: the distinct gfp masks of a trace, interned as [`GfpId`]s.
//!
//! A trace has few distinct `gfp_flags=` strings (14 in 94,532 real events) but prints one
//! on every `mm_page_alloc` line, so the decoder looks the printed text up (the last string
//! first, then a hash map) and parses it with [`Gfp::parse`] only the first time it appears.
//! Entries are distinct masks: two spellings of one mask (the kernel prints one canonical
//! spelling, `Gfp::render`) share an id.

use std::collections::HashMap;

use pageblock_formats::gfp::Gfp;

use super::GfpId;

/// The gfp masks seen so far, by id.
#[derive(Debug, Default)]
pub struct GfpTable {
    masks: Vec<Gfp>,
    by_mask: HashMap<Gfp, GfpId>,
    by_text: HashMap<Box<[u8]>, GfpId>,
    last: Option<(Box<[u8]>, GfpId)>,
}

impl GfpTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The mask of `id` (`None` for an id of another table).
    pub fn get(&self, id: GfpId) -> Option<Gfp> {
        self.masks.get(id.0 as usize).copied()
    }

    /// Number of distinct masks.
    pub fn len(&self) -> usize {
        self.masks.len()
    }

    /// True before the first allocation event.
    pub fn is_empty(&self) -> bool {
        self.masks.is_empty()
    }

    /// Every `(id, mask)`, in order of first appearance.
    pub fn iter(&self) -> impl Iterator<Item = (GfpId, Gfp)> + '_ {
        self.masks.iter().enumerate().map(|(i, g)| (GfpId(i as u32), *g))
    }

    /// The id of `gfp`, adding it if new.
    pub fn intern(&mut self, gfp: Gfp) -> Result<GfpId, String> {
        if let Some(id) = self.by_mask.get(&gfp) {
            return Ok(*id);
        }
        let id =
            GfpId(u32::try_from(self.masks.len()).map_err(|_| "too many distinct gfp masks".to_owned())?);
        self.masks.push(gfp);
        self.by_mask.insert(gfp, id);
        Ok(id)
    }

    /// The id of the mask printed as `text` (a `gfp_flags=` value), parsing it only the first
    /// time this text is seen.
    pub fn intern_text(&mut self, text: &[u8]) -> Result<GfpId, String> {
        if let Some((last, id)) = &self.last {
            if **last == *text {
                return Ok(*id);
            }
        }
        let id = match self.by_text.get(text) {
            Some(id) => *id,
            None => {
                let s = std::str::from_utf8(text).map_err(|_| "gfp flags are not UTF-8".to_owned())?;
                let gfp = Gfp::parse(s).map_err(|e| e.reason)?;
                let id = self.intern(gfp)?;
                self.by_text.insert(text.into(), id);
                id
            }
        };
        self.last = Some((text.into(), id));
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_id_per_mask() {
        let mut t = GfpTable::new();
        let a = t.intern_text(b"GFP_KERNEL|__GFP_ZERO").unwrap();
        let b = t.intern_text(b"GFP_HIGHUSER_MOVABLE").unwrap();
        assert_eq!(t.intern_text(b"GFP_KERNEL|__GFP_ZERO"), Ok(a));
        assert_eq!(t.intern_text(b"__GFP_ZERO|GFP_KERNEL"), Ok(a), "another spelling, same mask");
        assert_eq!(t.intern(Gfp::HIGHUSER_MOVABLE), Ok(b));
        assert_eq!(t.intern_text(b"0xcc0"), t.intern(Gfp::KERNEL));
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(a), Some(Gfp::KERNEL | Gfp::ZERO));
        assert_eq!(t.get(GfpId(99)), None);
        assert!(t.intern_text(b"GFP_BOGUS").unwrap_err().contains("GFP_BOGUS"));
        assert!(t.intern_text(b"\xff").is_err());
        let ids: Vec<GfpId> = t.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [GfpId(0), GfpId(1), GfpId(2)]);
    }
}
