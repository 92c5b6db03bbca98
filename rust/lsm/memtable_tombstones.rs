//! The range deletes of one memtable, fragmented as they arrive: sorted, non-overlapping fragments
//! in a B-tree, each with every sequence number written over it. A new delete always has the
//! highest number so far (writers are serialized), so adding one only cuts the two fragments at
//! its ends and pushes its number onto the fragments in between. Readers of the active memtable
//! may read at a snapshot older than its newest deletes (a write can land while they read), so
//! they take the highest number at or below their snapshot.
//!
//! A key no delete can cover (`TombstonePrefixes`) skips the B-tree.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;

use crate::lsm::key::SeqNo;
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::tombstone_prefixes::TombstonePrefixes;

#[derive(Debug)]
struct Fragment {
    end: Bytes,
    /// Ascending.
    seqs: Vec<SeqNo>,
}

#[derive(Debug, Default)]
pub struct MemTombstones {
    /// Keyed by fragment start.
    fragments: BTreeMap<Bytes, Fragment>,
    prefixes: TombstonePrefixes,
}

impl MemTombstones {
    /// Adds a tombstone newer than every one added before; returns the number of fragments it
    /// touched (for memory accounting).
    pub fn add(&mut self, tombstone: RangeTombstone) -> usize {
        let RangeTombstone { start, end, seq } = tombstone;
        if start >= end {
            return 0;
        }
        self.prefixes.add(&start, &end);
        self.split_at(&start);
        self.split_at(&end);
        let mut gaps = Vec::new();
        let mut covered_to = start.clone();
        let mut touched = 0;
        for (from, fragment) in self.fragments.range_mut(start.clone()..end.clone()) {
            debug_assert!(fragment.seqs.last().is_none_or(|&s| s < seq), "tombstones out of order");
            if covered_to < *from {
                gaps.push((covered_to, from.clone()));
            }
            fragment.seqs.push(seq);
            covered_to = fragment.end.clone();
            touched += 1;
        }
        if covered_to < end {
            gaps.push((covered_to, end));
        }
        touched += gaps.len();
        for (from, to) in gaps {
            self.fragments.insert(from, Fragment { end: to, seqs: vec![seq] });
        }
        touched
    }

    /// Cuts the fragment that spans `at` (if any) in two, so a fragment starts at `at`.
    fn split_at(&mut self, at: &Bytes) {
        let below = (Bound::Unbounded, Bound::Excluded(at.as_ref()));
        let Some((_, fragment)) = self.fragments.range_mut::<[u8], _>(below).next_back() else {
            return;
        };
        if fragment.end <= *at {
            return;
        }
        let right = Fragment {
            end: std::mem::replace(&mut fragment.end, at.clone()),
            seqs: fragment.seqs.clone(),
        };
        self.fragments.insert(at.clone(), right);
    }

    /// Highest sequence number at or below `snapshot` of a tombstone covering `key` (0 if none).
    pub fn covering_seq(&self, key: &[u8], snapshot: SeqNo) -> SeqNo {
        if !self.prefixes.may_cover(key) {
            return 0;
        }
        let upto = (Bound::Unbounded, Bound::Included(key));
        match self.fragments.range::<[u8], _>(upto).next_back() {
            Some((_, fragment)) if key < fragment.end.as_ref() => visible_seq(fragment, snapshot),
            _ => 0,
        }
    }

    /// The fragments overlapping [lower, upper) (`None`: unbounded) as seen at `snapshot`.
    pub fn view(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        snapshot: SeqNo,
    ) -> FragmentedTombstones {
        let first = (Bound::Unbounded, Bound::Included(lower));
        let from = match self.fragments.range::<[u8], _>(first).next_back() {
            Some((start, fragment)) if fragment.end.as_ref() > lower => start.clone(),
            _ => Bytes::copy_from_slice(lower),
        };
        let range =
            (Bound::Included(from.as_ref()), upper.map_or(Bound::Unbounded, Bound::Excluded));
        let mut out = FragmentedTombstones::default();
        for (start, fragment) in self.fragments.range::<[u8], _>(range) {
            match visible_seq(fragment, snapshot) {
                0 => {}
                seq => out.push(start, &fragment.end, seq),
            }
        }
        out
    }
}

fn visible_seq(fragment: &Fragment, snapshot: SeqNo) -> SeqNo {
    let visible = fragment.seqs.partition_point(|&s| s <= snapshot);
    if visible == 0 { 0 } else { fragment.seqs[visible - 1] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::column_family::prefix_successor;
    use crate::lsm::key::MAX_SEQ;

    fn t(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: Bytes::from(start.to_owned()),
            end: Bytes::from(end.to_owned()),
            seq,
        }
    }

    fn covering(tombstones: &[RangeTombstone], key: &[u8], snapshot: SeqNo) -> SeqNo {
        tombstones
            .iter()
            .filter(|t| t.seq <= snapshot && t.contains(key))
            .map(|t| t.seq)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn every_snapshot_sees_exactly_the_deletes_written_before_it() {
        let tombstones = [
            t("c", "m", 1),
            t("a", "z", 2),
            t("f", "h", 3),
            t("f", "h", 4),
            t("b", "c", 5),
            t("g", "q", 6),
            t("x", "x", 7),
            t("m", "n", 8),
        ];
        let mut mem = MemTombstones::default();
        for tombstone in &tombstones {
            mem.add(tombstone.clone());
        }
        let keys = ["0", "a", "b", "bb", "c", "f", "g", "gg", "h", "m", "n", "q", "y", "z"];
        for snapshot in 0..=9 {
            for key in keys {
                let expected = covering(&tombstones, key.as_bytes(), snapshot);
                assert_eq!(
                    mem.covering_seq(key.as_bytes(), snapshot),
                    expected,
                    "{key}@{snapshot}"
                );
            }
            let view = mem.view(b"", None, snapshot);
            for key in keys {
                let expected = covering(&tombstones, key.as_bytes(), snapshot);
                assert_eq!(view.covering_seq(key.as_bytes()), expected, "view {key}@{snapshot}");
            }
        }
    }

    #[test]
    fn a_view_keeps_only_fragments_in_its_range() {
        let mut mem = MemTombstones::default();
        mem.add(t("a", "c", 1));
        mem.add(t("e", "k", 2));
        mem.add(t("p", "r", 3));
        let view = mem.view(b"f", Some(b"p"), MAX_SEQ);
        assert_eq!(view.to_tombstones(), [t("e", "k", 2)]);
        assert_eq!(mem.view(b"c", Some(b"e"), MAX_SEQ).len(), 0);
        assert_eq!(mem.view(b"b", Some(b"b\0"), MAX_SEQ).to_tombstones(), [t("a", "c", 1)]);
    }

    /// Prefix deletes (`[p, successor(p))`) of keys over a tiny alphabet, so that keys equal,
    /// extend and fall just outside deleted prefixes, and prefixes end in 0xff: the prefix probe
    /// must never hide a covered key, with few prefix lengths, after a delete that is not of a
    /// whole prefix, then past the limit of lengths.
    #[test]
    fn deleted_prefixes_never_hide_a_covered_key() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        let alphabet = [0u8, 1, 0x7f, 0xfe, 0xff];
        let key = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<u8> {
            (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
        };
        let prefix_delete = |start: Vec<u8>, seq| {
            let end = prefix_successor(&start).expect("not all 0xff");
            RangeTombstone { start: Bytes::from(start), end: Bytes::from(end), seq }
        };
        let mut mem = MemTombstones::default();
        let mut tombstones = Vec::new();
        let mut probes: Vec<Vec<u8>> = (0..400).map(|i| key(&mut rng, i % 7)).collect();
        for seq in 1..=120 {
            // Lengths 1-3 first; from seq 60 on up to 11, past the filter's 8.
            let len = if seq < 60 { 1 + seq as usize % 3 } else { 1 + seq as usize % 11 };
            let mut prefix = key(&mut rng, len);
            if prefix.iter().all(|&b| b == 0xff) {
                prefix[0] = 1;
            }
            probes.push(prefix.clone());
            probes.push([&prefix[..], &[0]].concat());
            let tombstone = if seq == 50 {
                t("\u{1}", "\u{1}\u{1}", seq) // not a whole prefix
            } else {
                prefix_delete(prefix, seq)
            };
            mem.add(tombstone.clone());
            tombstones.push(tombstone);
            if seq % 20 == 0 {
                assert_eq!(mem.prefixes.passes_all(), seq >= 80, "prefixes probed until then");
                for probe in &probes {
                    for snapshot in [seq / 2, seq] {
                        assert_eq!(
                            mem.covering_seq(probe, snapshot),
                            covering(&tombstones, probe, snapshot),
                            "{probe:?}@{snapshot} after {seq} deletes"
                        );
                    }
                }
            }
        }
        assert!(mem.prefixes.passes_all(), "past the length limit");
    }

    #[test]
    fn repeated_deletes_of_one_range_add_no_fragments() {
        let mut mem = MemTombstones::default();
        for seq in 1..=100 {
            mem.add(t("map-7|", "map-7}", seq));
        }
        assert_eq!(mem.fragments.len(), 1);
        assert_eq!(mem.covering_seq(b"map-7|k", 50), 50);
    }
}
