//! A value per pfn, for facts kept about most pages of a machine (the LRU lists' index; a
//! replay's traced pages).
//!
//! Pages are kept in chunks of 2^16 made on first write, found through a small hash map with
//! the last chunk used remembered: traces touch pfns in runs (a per-CPU batch, a pageblock),
//! so most lookups skip the hash. Sparse or absurd pfns cost one chunk each, never memory in
//! proportion to the pfn's value.

use rustc_hash::FxHashMap;

const CHUNK_SHIFT: u32 = 16;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// `pfn → T`, every pfn starting at `T::default()`.
#[derive(Debug, Default)]
pub struct PfnTable<T> {
    chunks: Vec<Box<[T]>>,
    index: FxHashMap<u64, usize>,
    /// The last chunk looked up: (chunk number, position in `chunks`).
    last: Option<(u64, usize)>,
}

impl<T: Copy + Default> PfnTable<T> {
    /// The value of `pfn`.
    #[inline]
    pub fn get(&mut self, pfn: u64) -> T {
        match self.chunk_of(pfn) {
            Some(c) => self.chunks[c][offset(pfn)],
            None => T::default(),
        }
    }

    /// The value of `pfn`, to change (its chunk is made if it is new).
    #[inline]
    pub fn entry(&mut self, pfn: u64) -> &mut T {
        let c = match self.chunk_of(pfn) {
            Some(c) => c,
            None => self.new_chunk(pfn >> CHUNK_SHIFT),
        };
        &mut self.chunks[c][offset(pfn)]
    }

    /// The value of `pfn`, to change, if its chunk exists: unlike [`PfnTable::entry`], a pfn
    /// never written makes no chunk (for taking a value out).
    #[inline]
    pub fn get_mut(&mut self, pfn: u64) -> Option<&mut T> {
        let c = self.chunk_of(pfn)?;
        Some(&mut self.chunks[c][offset(pfn)])
    }

    /// The value of `pfn`, without remembering its chunk (for a shared borrow).
    #[inline]
    pub fn peek(&self, pfn: u64) -> T {
        let n = pfn >> CHUNK_SHIFT;
        let c = match self.last {
            Some((last, c)) if last == n => Some(c),
            _ => self.index.get(&n).copied(),
        };
        c.map_or_else(T::default, |c| self.chunks[c][offset(pfn)])
    }

    #[inline]
    fn chunk_of(&mut self, pfn: u64) -> Option<usize> {
        let n = pfn >> CHUNK_SHIFT;
        match self.last {
            Some((last, c)) if last == n => Some(c),
            _ => {
                let c = *self.index.get(&n)?;
                self.last = Some((n, c));
                Some(c)
            }
        }
    }

    #[cold]
    fn new_chunk(&mut self, n: u64) -> usize {
        let c = self.chunks.len();
        self.chunks.push(vec![T::default(); CHUNK].into_boxed_slice());
        self.index.insert(n, c);
        self.last = Some((n, c));
        c
    }
}

#[inline]
fn offset(pfn: u64) -> usize {
    (pfn as usize) & (CHUNK - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_start_at_default_and_stay_where_they_were_put() {
        let mut t = PfnTable::<u8>::default();
        assert_eq!(t.get(5), 0);
        *t.entry(5) = 3;
        *t.entry(u64::MAX) = 7;
        *t.entry(5 + CHUNK as u64) = 9;
        assert_eq!((t.get(5), t.get(6), t.get(u64::MAX), t.get(5 + CHUNK as u64)), (3, 0, 7, 9));
        assert_eq!((t.peek(5), t.peek(6), t.peek(u64::MAX), t.peek(7 << CHUNK_SHIFT)), (3, 0, 7, 0));
        assert_eq!(t.chunks.len(), 3, "one chunk per touched 2^16 pfns, whatever their value");
        assert_eq!(t.get_mut(7 << CHUNK_SHIFT), None);
        assert_eq!(t.chunks.len(), 3, "get_mut makes no chunk");
        *t.get_mut(6).unwrap() = 4;
        assert_eq!(t.get(6), 4);
    }
}
