//! A bloom filter of the keys written to one memtable, so that a point read skips the skiplist
//! search (a dozen or more dependent cache misses) of each memtable that lacks the key: a read of
//! a key written earlier, whose newest version sits in a file, otherwise searches the active
//! memtable and every frozen one first. As RocksDB's `memtable_whole_key_filtering`.
//!
//! Blocked: all of a key's bits fall in one 64-byte line, one cache miss per check. The writer
//! sets a key's bits before the key enters the skiplist, and both happen before the batch's
//! sequence number is published (Release), so a reader whose snapshot covers the key (Acquire)
//! finds its bits set: no false negatives for any version a reader may see.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::lsm::sst::{fastrange, hash64};

/// One cache line of bits.
const BLOCK_WORDS: usize = 8;
/// Bits set per key, each chosen by 9 bits of the hash within its block.
const PROBES: u32 = 6;

pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl KeyFilter {
    /// A filter of about `bits` bits (at least one block).
    pub(crate) fn with_bits(bits: u64) -> Self {
        let blocks = bits.div_ceil(64 * BLOCK_WORDS as u64).max(1) as usize;
        KeyFilter { words: (0..blocks * BLOCK_WORDS).map(|_| AtomicU64::new(0)).collect() }
    }

    pub(crate) fn memory_bytes(&self) -> u64 {
        (self.words.len() * size_of::<AtomicU64>()) as u64
    }

    pub(crate) fn add(&self, key: &[u8]) {
        for (word, bit) in self.probes(key) {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }

    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        self.probes(key).all(|(word, bit)| word.load(Ordering::Relaxed) & bit != 0)
    }

    /// The word and bit of each of the key's probes, all in one block: the block from the hash
    /// (`fastrange`, no division), the probes from 9 bits each of a remix of it, so that they do
    /// not repeat the block choice.
    fn probes(&self, key: &[u8]) -> impl Iterator<Item = (&AtomicU64, u64)> {
        let hash = hash64(key);
        let blocks = (self.words.len() / BLOCK_WORDS) as u64;
        let block = &self.words[fastrange(hash, blocks) as usize * BLOCK_WORDS..][..BLOCK_WORDS];
        let picks = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        (0..PROBES).map(move |i| {
            let bit = (picks >> (9 * i)) & 511;
            (&block[(bit / 64) as usize], 1 << (bit % 64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives_at_ten_bits_per_key() {
        let filter = KeyFilter::with_bits(10 * 20_000);
        let key = |i: u32| [&[0, (i % 128) as u8][..], format!("user-{i:010}").as_bytes()].concat();
        (0..20_000).for_each(|i| filter.add(&key(i)));
        assert!((0..20_000).all(|i| filter.may_contain(&key(i))));
        let false_positives = (20_000..120_000).filter(|&i| filter.may_contain(&key(i))).count();
        assert!(false_positives < 3_000, "{false_positives} of 100000 absent keys pass");
        assert!(!KeyFilter::with_bits(1000).may_contain(&key(0)), "an empty filter passes nothing");
    }
}
