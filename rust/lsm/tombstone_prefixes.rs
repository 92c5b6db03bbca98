//! A filter in front of a range-tombstone search: every key a tombstone `[start, end)` covers
//! starts with one prefix of it, `start` itself when the tombstone deletes a whole prefix (as
//! `MapState.clear()` does: `end` is `start`'s successor), otherwise the bytes `start` and `end`
//! share. A key none of whose prefixes of those lengths is kept is covered by no tombstone: a hash
//! probe per length instead of a search (a cache miss per key it compares). Flink's range deletes
//! are prefix deletes of a few lengths (one per kind of state key); deletes over wider ranges
//! (a key-group range) or of too many lengths make the filter pass every key.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use crate::lsm::sst::hash64;

/// Prefix lengths told apart.
const MAX_LENGTHS: usize = 8;

#[derive(Debug, Clone, Default)]
pub struct TombstonePrefixes {
    /// The lengths of the prefixes, each once.
    lengths: Vec<usize>,
    /// `hash64` of each prefix: a collision only sends a key to the search.
    hashes: HashSet<u64, BuildHasherDefault<AsIs>>,
    /// Every key passes.
    pass_all: bool,
}

impl TombstonePrefixes {
    /// Takes in the tombstone `[start, end)` (non-empty).
    pub fn add(&mut self, start: &[u8], end: &[u8]) {
        if self.pass_all {
            return;
        }
        let prefix = if is_successor(start, end) {
            start
        } else {
            &start[..start.iter().zip(end).take_while(|(a, b)| a == b).count()]
        };
        let new_length = !self.lengths.contains(&prefix.len());
        if prefix.is_empty() || (new_length && self.lengths.len() == MAX_LENGTHS) {
            *self = TombstonePrefixes { pass_all: true, ..Default::default() };
            return;
        }
        if new_length {
            self.lengths.push(prefix.len());
        }
        self.hashes.insert(hash64(prefix));
    }

    /// False only if no tombstone taken in covers `key`.
    pub fn may_cover(&self, key: &[u8]) -> bool {
        self.pass_all
            || self
                .lengths
                .iter()
                .any(|&n| n <= key.len() && self.hashes.contains(&hash64(&key[..n])))
    }

    /// Heap bytes held: the lengths, and the hash table's slots with a control byte each (plus
    /// one group of control bytes).
    pub fn memory_size(&self) -> usize {
        let table = match self.hashes.capacity() {
            0 => 0,
            // hashbrown keeps at most 7/8 of its (power of two) slots full.
            n => (n * 8 / 7).next_power_of_two() * (size_of::<u64>() + 1) + 16,
        };
        self.lengths.capacity() * size_of::<usize>() + table
    }

    /// Whether the filter passes every key (then it holds nothing).
    #[cfg(test)]
    pub fn passes_all(&self) -> bool {
        self.pass_all
    }
}

/// Whether `end` is `column_family::prefix_successor(start)`: `start` without its trailing 0xff
/// bytes, the last byte left one higher. (Checked per fragment: without building it.)
fn is_successor(start: &[u8], end: &[u8]) -> bool {
    let kept = start.len() - start.iter().rev().take_while(|&&b| b == 0xff).count();
    kept > 0
        && end.len() == kept
        && start[..kept - 1] == end[..kept - 1]
        && start[kept - 1].checked_add(1) == Some(end[kept - 1])
}

/// Hashes `hash64` values as they are: they are hashes already.
#[derive(Default)]
struct AsIs(u64);

impl Hasher for AsIs {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not called for u64 keys; anything else still hashes.
        bytes.iter().for_each(|&b| self.0 = self.0.rotate_left(8) ^ u64::from(b));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_prefixes_are_kept_exactly_other_ranges_by_their_shared_bytes() {
        let mut filter = TombstonePrefixes::default();
        filter.add(b"map-1|", b"map-1}"); // a whole prefix
        filter.add(b"a\xff", b"b"); // a whole prefix ending in 0xff
        filter.add(b"key-10", b"key-19"); // shares "key-1"
        for covered in [&b"map-1|"[..], b"map-1|x", b"a\xff", b"a\xff\x00", b"key-10", b"key-18z"] {
            assert!(filter.may_cover(covered), "{covered:?}");
        }
        for outside in [&b"map-1"[..], b"map-2|x", b"a\xfe", b"key-2", b"k", b""] {
            assert!(!filter.may_cover(outside), "{outside:?}");
        }
        assert!(!filter.passes_all());
        filter.add(b"a", b"b\x00"); // shares nothing
        assert!(filter.passes_all() && filter.may_cover(b"zzz"));
    }

    #[test]
    fn successors_are_told_as_prefix_successor_builds_them() {
        use crate::lsm::column_family::prefix_successor;
        let starts: [&[u8]; 7] = [b"a", b"ab", b"a\xff", b"a\xff\xff", b"\xfe", b"\x00", b"\xff"];
        let ends: [&[u8]; 8] = [b"b", b"ac", b"b\x00", b"a", b"\xff", b"\x01", b"", b"ab"];
        for start in starts {
            for end in ends.iter().chain([&prefix_successor(start).unwrap_or_default()[..]].iter())
            {
                let expected = prefix_successor(start).is_some_and(|s| s == *end);
                assert_eq!(is_successor(start, end), expected, "{start:?} {end:?}");
            }
        }
    }
}
