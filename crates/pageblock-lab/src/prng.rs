//! The project's own pseudo-random generator: xoshiro256** seeded through SplitMix64.
//!
//! Every random choice of a lab run flows from one `u64` seed through this type, so a run is
//! reproducible byte for byte on any machine and any version of the dependencies. It is not
//! cryptographic and does not try to be.

/// xoshiro256** (Blackman & Vigna), seeded with SplitMix64.
#[derive(Clone, Debug)]
pub struct Prng {
    s: [u64; 4],
}

impl Prng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Prng {
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Prng { s: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A value in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant here). `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Shuffle `v` in place (Fisher-Yates, from the last element down).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
    }

    /// A value in `lo..hi`. `lo < hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo)
    }

    /// An index into `weights`, chosen with probability proportional to its weight.
    /// Weights must not all be zero.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        let mut pick = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if pick < w as u64 {
                return i;
            }
            pick -= w as u64;
        }
        unreachable!("weights sum to {total}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let a: Vec<u64> = {
            let mut p = Prng::new(1);
            (0..4).map(|_| p.next_u64()).collect()
        };
        let mut p = Prng::new(1);
        assert_eq!(a, (0..4).map(|_| p.next_u64()).collect::<Vec<_>>());
        let mut q = Prng::new(2);
        assert_ne!(a[0], q.next_u64());
    }

    #[test]
    fn reference_vector() {
        // First outputs for seed 0, from an independent Python implementation of
        // SplitMix64 + xoshiro256**.
        let mut p = Prng::new(0);
        let got: Vec<u64> = (0..3).map(|_| p.next_u64()).collect();
        assert_eq!(got, vec![0x99ec_5f36_cb75_f2b4, 0xbf6e_1f78_4956_452a, 0x1a5f_849d_4933_e6e0]);
    }

    #[test]
    fn shuffle_permutes_and_depends_only_on_the_seed() {
        let shuffled = |seed| {
            let mut v: Vec<u32> = (0..1000).collect();
            Prng::new(seed).shuffle(&mut v);
            v
        };
        let mut sorted = shuffled(3);
        assert_ne!(sorted, (0..1000).collect::<Vec<_>>(), "the order changed");
        assert_eq!(shuffled(3), sorted);
        assert_ne!(shuffled(4), sorted);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>(), "nothing lost or repeated");
    }

    #[test]
    fn weighted_respects_zero_weights_and_range() {
        let mut p = Prng::new(7);
        for _ in 0..1000 {
            assert_ne!(p.weighted(&[3, 0, 5]), 1);
            let v = p.range(10, 20);
            assert!((10..20).contains(&v));
        }
    }
}
