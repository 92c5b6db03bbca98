//! Per-file bloom filter over user keys, so a point lookup skips files that cannot hold the key
//! without touching storage.
//!
//! Raw layout: `bits: [u8; m/8]  probes: u8`. Bit `b` is `bits[b / 8] >> (b % 8) & 1`. A key sets
//! `probes` bits chosen by double hashing one 64-bit hash: position i is
//! `fastrange(h + i * delta, m)` with `delta = h.rotate_left(21) | 1` (odd, so probes never
//! collapse onto one bit). The hash is defined here and fixed by the format: it must never change
//! for existing files.

use bytes::Bytes;

use super::coding::{Decoded, Malformed};
use super::live::LiveBytes;

/// Stable 64-bit hash of a byte string: 8-byte little-endian words folded with multiply-rotate
/// rounds, then a murmur3-style finalizer for avalanche so both halves are usable.
pub(crate) fn hash64(data: &[u8]) -> u64 {
    const P1: u64 = 0x9e37_79b1_85eb_ca87;
    const P2: u64 = 0xc2b2_ae3d_27d4_eb4f;
    const P3: u64 = 0x1656_67b1_9e37_79f9;
    let mut h = P3 ^ (data.len() as u64).wrapping_mul(P1);
    let mut round = |word: u64| {
        h ^= word.wrapping_mul(P2).rotate_left(31).wrapping_mul(P1);
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P3);
    };
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        round(u64::from_le_bytes(word));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        round(u64::from_le_bytes(word));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Maps a uniform u64 onto 0..m without a division.
pub(crate) fn fastrange(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

const MAX_PROBES: u8 = 30;

pub(crate) struct BloomBuilder {
    bits_per_key: usize,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub(crate) fn new(bits_per_key: usize) -> Self {
        BloomBuilder { bits_per_key, hashes: Vec::new() }
    }

    /// Callers add each distinct user key once (versions of a key are adjacent).
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        self.hashes.push(hash64(user_key));
    }

    pub(crate) fn estimated_size(&self) -> usize {
        (self.hashes.len() * self.bits_per_key).div_ceil(8) + 1
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        // k = ln 2 * bits/key minimises the false-positive rate.
        let probes = ((self.bits_per_key as f64 * 0.69).round() as u8).clamp(1, MAX_PROBES);
        // A floor keeps tiny filters from saturating.
        let bytes = (self.hashes.len() * self.bits_per_key).max(64).div_ceil(8);
        let mut out = vec![0u8; bytes + 1];
        let m = (bytes * 8) as u64;
        for &h in &self.hashes {
            for bit in probe_bits(h, probes, m) {
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[bytes] = probes;
        out
    }
}

fn probe_bits(h: u64, probes: u8, m: u64) -> impl Iterator<Item = u64> {
    let delta = h.rotate_left(21) | 1;
    (0..u64::from(probes)).map(move |i| fastrange(h.wrapping_add(i.wrapping_mul(delta)), m))
}

/// A decoded filter partition, cached in the block cache.
pub(crate) struct Bloom {
    /// A slice of the block as read (the bits are nearly all of it): no copy.
    bits: Bytes,
    probes: u8,
    _live: LiveBytes,
}

impl Bloom {
    pub(crate) fn decode(raw: Bytes) -> Decoded<Bloom> {
        let Some((&probes, bits)) = raw.split_last() else {
            return Err(Malformed::new("empty filter block"));
        };
        if probes == 0 || probes > MAX_PROBES || bits.is_empty() {
            return Err(Malformed::new(format!(
                "filter with {probes} probes over {} bytes",
                bits.len()
            )));
        }
        let live = LiveBytes::new(std::mem::size_of::<Bloom>() + bits.len());
        Ok(Bloom { bits: raw.slice(..bits.len()), probes, _live: live })
    }

    #[cfg(test)]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hashed(hash64(user_key))
    }

    /// `may_contain` of the key hashed to `hash` (`hash64`): a read hashes its key once for all
    /// the files it probes.
    pub(crate) fn may_contain_hashed(&self, hash: u64) -> bool {
        let m = (self.bits.len() * 8) as u64;
        probe_bits(hash, self.probes, m)
            .all(|bit| self.bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    /// Asks the CPU to fetch the bytes a `may_contain` of the key hashed to `hash` (`hash64`)
    /// will read. A batch does this for every file a key is about to probe, so that the probes'
    /// misses to memory overlap instead of coming one file after the other.
    pub(crate) fn prefetch(&self, hash: u64) {
        let m = (self.bits.len() * 8) as u64;
        for bit in probe_bits(hash, self.probes, m) {
            prefetch_line(&self.bits[(bit / 8) as usize] as *const u8);
        }
    }

    pub(crate) fn memory_size(&self) -> usize {
        std::mem::size_of::<Bloom>() + self.bits.len()
    }
}

/// Asks the CPU to bring the cache line of `at` in while the program goes on.
pub(crate) fn prefetch_line(at: *const u8) {
    // SAFETY: SSE is part of every x86_64 target, and a prefetch is only a hint: it never faults,
    // whatever the address, and has no effect the program can observe.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(keys: impl Iterator<Item = Vec<u8>>, bits_per_key: usize) -> Bloom {
        let mut b = BloomBuilder::new(bits_per_key);
        for k in keys {
            b.add(&k);
        }
        Bloom::decode(Bytes::from(b.finish())).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let n = 100_000u32;
        let key = |i: u32| format!("cf1/user{i:08}").into_bytes();
        let bloom = build((0..n).map(key), 10);
        for i in 0..n {
            assert!(bloom.may_contain(&key(i)), "false negative for {i}");
        }
        let probes = 200_000u32;
        let fp = (n..n + probes).filter(|&i| bloom.may_contain(&key(i))).count();
        let rate = fp as f64 / probes as f64;
        // Theory for 10 bits/key and 7 probes: 0.82%.
        assert!(rate < 0.0125, "false-positive rate {rate}");
        assert!(rate > 0.003, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn short_and_binary_keys() {
        // Keys differing in one short tail byte or by length only must still hash apart.
        let keys: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).chain([vec![], vec![0, 0]]).collect();
        let bloom = build(keys.iter().cloned(), 10);
        for k in &keys {
            assert!(bloom.may_contain(k));
        }
        let fp = (0..10_000u32).filter(|i| bloom.may_contain(&i.to_be_bytes())).count();
        assert!(fp < 300, "{fp} false positives");
        assert_ne!(hash64(b""), hash64(&[0]));
        assert_ne!(hash64(&[0]), hash64(&[0, 0]));
    }

    #[test]
    fn hash_is_stable() {
        // Filters on disk depend on these exact values; changing them needs a format version.
        assert_eq!(hash64(b""), 0xf490_368a_ba8b_feac);
        assert_eq!(hash64(b"a"), 0x87f1_e1ae_a678_013d);
        assert_eq!(hash64(b"hello world, this is forst"), 0xe776_0e85_e7f9_9ddd);
    }

    #[test]
    fn bad_filters_are_rejected() {
        assert!(Bloom::decode(Bytes::new()).is_err());
        assert!(Bloom::decode(Bytes::from_static(&[0xff, 0])).is_err());
        assert!(Bloom::decode(Bytes::from_static(&[0xff, 31])).is_err());
        assert!(Bloom::decode(Bytes::from_static(&[7])).is_err());
    }
}
