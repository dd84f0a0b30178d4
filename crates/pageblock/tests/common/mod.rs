//! Helpers shared by the library's integration tests: a seeded random stream and the byte
//! patterns written into movable handles.

#![allow(dead_code)] // each test file uses its own subset

use pageblock::{Allocator, Movable, Pinned};

/// xorshift64*: enough randomness for a stress test, seeded per thread.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The 8-byte word number `word` of `seed`'s pattern.
fn pattern(seed: u64, word: usize) -> u64 {
    seed.rotate_left((word % 64) as u32) ^ word as u64
}

/// Whether every byte of a pinned block holds `seed`'s pattern.
pub fn holds(p: &Pinned<'_>, seed: u64) -> bool {
    p.bytes().expect("arena").chunks(8).enumerate().all(|(i, w)| w == pattern(seed, i).to_le_bytes())
}

/// Write `seed`'s pattern over every byte of `m`.
pub fn fill(a: &Allocator, m: &mut Movable, seed: u64) {
    let mut p = a.pin(m).expect("own handle");
    for (i, word) in p.bytes_mut().expect("arena").chunks_mut(8).enumerate() {
        word.copy_from_slice(&pattern(seed, i).to_le_bytes());
    }
}

/// Whether every byte of `m` still holds `seed`'s pattern.
pub fn intact(a: &Allocator, m: &mut Movable, seed: u64) -> bool {
    holds(&a.pin(m).expect("own handle"), seed)
}

/// Every state word of zone 0 (to show that a refused call changed nothing).
pub fn state_words(a: &Allocator) -> Vec<u32> {
    let mm = a.shared().zone(0).memmap();
    (0..mm.len() as u32).map(|i| mm.info_word(i)).collect()
}
