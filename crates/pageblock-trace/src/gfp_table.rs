//! [`GfpTable`]: the distinct gfp masks of a trace, interned as [`GfpId`]s.
//!
//! A trace has few distinct `gfp_flags=` strings (14 in 94,532 real events) but prints one
//! on every `mm_page_alloc` line, so the decoder looks the printed text up and parses it
//! with [`Gfp::parse`] only the first time it appears. The lookup allocates nothing: the
//! text last seen with the same length is tried first (distinct strings mostly differ in
//! length, so this is one comparison), then a hash map.
//! Entries are distinct masks: two spellings of one mask (the kernel prints one canonical
//! spelling, `Gfp::render`) share an id.

use std::collections::HashMap;

use pageblock_formats::gfp::Gfp;

use super::GfpId;

/// Texts up to this length get a slot in the by-length cache.
const CACHED_LEN: usize = 256;

/// The gfp masks seen so far, by id.
#[derive(Clone, Debug)]
pub struct GfpTable {
    masks: Vec<Gfp>,
    by_mask: HashMap<Gfp, GfpId>,
    /// Every distinct text seen, with its mask's id.
    texts: Vec<(Box<[u8]>, GfpId)>,
    by_text: HashMap<Box<[u8]>, usize>,
    /// Per text length, the index in `texts` of the last text seen with that length (+1;
    /// 0 is none).
    by_len: Box<[u32; CACHED_LEN]>,
}

impl Default for GfpTable {
    fn default() -> Self {
        GfpTable {
            masks: Vec::new(),
            by_mask: HashMap::new(),
            texts: Vec::new(),
            by_text: HashMap::new(),
            by_len: Box::new([0; CACHED_LEN]),
        }
    }
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
    pub(crate) fn intern(&mut self, gfp: Gfp) -> Result<GfpId, String> {
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
    #[inline]
    pub(crate) fn intern_text(&mut self, text: &[u8]) -> Result<GfpId, String> {
        let slot = self.by_len.get(text.len()).copied().unwrap_or(0) as usize;
        if let Some((cached, id)) = slot.checked_sub(1).and_then(|i| self.texts.get(i)) {
            if **cached == *text {
                return Ok(*id);
            }
        }
        self.intern_text_slow(text)
    }

    /// [`GfpTable::intern_text`] past the cache: the hash map, or a first parse.
    fn intern_text_slow(&mut self, text: &[u8]) -> Result<GfpId, String> {
        let index = match self.by_text.get(text) {
            Some(&i) => i,
            None => {
                let s = std::str::from_utf8(text).map_err(|_| "gfp flags are not UTF-8".to_owned())?;
                let gfp = Gfp::parse(s).map_err(|e| e.reason)?;
                let id = self.intern(gfp)?;
                self.texts.push((text.into(), id));
                self.by_text.insert(text.into(), self.texts.len() - 1);
                self.texts.len() - 1
            }
        };
        if let (Some(slot), Ok(i)) = (self.by_len.get_mut(text.len()), u32::try_from(index + 1)) {
            *slot = i;
        }
        Ok(self.texts[index].1)
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
        // Two texts of one length take turns in the cache slot.
        let (x, y) =
            (t.intern_text(b"GFP_DMA|__GFP_IO").unwrap(), t.intern_text(b"GFP_DMA|__GFP_FS").unwrap());
        for _ in 0..3 {
            assert_eq!(t.intern_text(b"GFP_DMA|__GFP_IO"), Ok(x));
            assert_eq!(t.intern_text(b"GFP_DMA|__GFP_FS"), Ok(y));
        }
        let long = vec![b'x'; 300];
        assert!(t.intern_text(&long).is_err(), "longer than the cache, still looked up");
        assert_eq!(t.len(), 5);
        assert_eq!(t.get(a), Some(Gfp::KERNEL | Gfp::ZERO));
        assert_eq!(t.get(GfpId(99)), None);
        assert!(t.intern_text(b"GFP_BOGUS").unwrap_err().contains("GFP_BOGUS"));
        assert!(t.intern_text(b"\xff").is_err());
        let ids: Vec<GfpId> = t.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [GfpId(0), GfpId(1), GfpId(2), GfpId(3), GfpId(4)]);
    }
}
