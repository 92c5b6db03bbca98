//! Range deletions and their searchable form. A range delete lives in its memtable until flush
//! (`memtable_tombstones`), then in the version (the manifest), not in SST files: it needs no
//! format change, and a get pays one binary search for the whole version instead of one per file.
//!
//! Both places keep tombstones *fragmented*, as RocksDB's `FragmentedRangeTombstoneList` does:
//! overlapping tombstones are cut at every start and end into sorted, non-overlapping fragments,
//! each carrying the highest sequence number of the tombstones over it. A point read then finds
//! its one fragment by binary search, and a scan or compaction walks the fragments alongside its
//! keys (`TombstoneCursor`). Only the highest number is kept because every reader of a version or
//! of a frozen memtable reads at a snapshot that includes all of their writes (see
//! `db_state::read_view`); the active memtable, which writers still fill, keeps every number.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use crate::lsm::key::{SeqNo, head_of};
use crate::lsm::sst::prefetch_line;
use crate::lsm::tombstone_prefixes::TombstonePrefixes;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// Inclusive start (column-family prefixed user key).
    pub start: Bytes,
    /// Exclusive end.
    pub end: Bytes,
    /// Entries with a smaller sequence number inside [start, end) are deleted.
    pub seq: SeqNo,
}

impl RangeTombstone {
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_ref() <= key && key < self.end.as_ref()
    }
}

/// One fragment of a `FragmentedTombstones`, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    pub start: &'a [u8],
    pub end: &'a [u8],
    pub seq: SeqNo,
}

impl Fragment<'_> {
    pub fn to_tombstone(self) -> RangeTombstone {
        RangeTombstone {
            start: Bytes::copy_from_slice(self.start),
            end: Bytes::copy_from_slice(self.end),
            seq: self.seq,
        }
    }
}

/// Where a fragment's keys sit in `FragmentedTombstones::keys`: start, then end, back to back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bounds {
    offset: usize,
    start_len: u32,
    end_len: u32,
}

/// Sorted, non-overlapping fragments; each holds the highest sequence number of the tombstones
/// that cover it. Contiguous fragments of equal number are one fragment.
///
/// Laid out flat for the binary search of every get: all keys in one buffer in fragment order,
/// so the last steps of a search stay within a few cache lines, and the per-fragment bounds in
/// one small array (tens of thousands of separately allocated keys cost a cache miss per step).
/// A search starts in the fence, the end keys of every `FENCE_STRIDE`-th fragment packed
/// together: small enough to stay in the CPU caches, it narrows the search to one stride of
/// fragments, so a get pays a few cache misses instead of one per step over 50,000 fragments.
/// The fence's steps compare the keys' first 16 bytes as integers (`head_of`), and whole keys
/// only where those tie. Before any of that, a key no fragment can cover is turned away by
/// `TombstonePrefixes`.
#[derive(Clone, Default)]
pub struct FragmentedTombstones {
    keys: Vec<u8>,
    bounds: Vec<Bounds>,
    seqs: Vec<SeqNo>,
    /// The end keys of fragments FENCE_STRIDE - 1, 2 * FENCE_STRIDE - 1, ..., concatenated.
    fence_keys: Vec<u8>,
    /// Where each fence key ends in `fence_keys`.
    fence_ends: Vec<u32>,
    /// `head_of` each fence key.
    fence_heads: Vec<u128>,
    /// Of every fragment, as pushed (a fragment joined to the last one adds its prefix again).
    prefixes: TombstonePrefixes,
}

/// Equal fragments: the rest is derived from them.
impl PartialEq for FragmentedTombstones {
    fn eq(&self, other: &Self) -> bool {
        self.keys == other.keys && self.bounds == other.bounds && self.seqs == other.seqs
    }
}

impl Eq for FragmentedTombstones {}

/// Fragments per fence key.
const FENCE_STRIDE: usize = 16;

const CACHE_LINE: usize = 64;

/// Most key bytes of a stride prefetched (the rest, of long keys, is read as the search needs it).
const MAX_PREFETCH_KEY_BYTES: usize = 4096;

impl std::fmt::Debug for FragmentedTombstones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FragmentedTombstones {
    /// Fragments any tombstones (overlapping, nested, unsorted, empty ones are ignored).
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>) -> Self {
        let mut tombstones: Vec<RangeTombstone> =
            tombstones.into_iter().filter(|t| t.start < t.end).collect();
        tombstones.sort_by(|a, b| a.start.cmp(&b.start));
        let mut points: Vec<Bytes> =
            tombstones.iter().flat_map(|t| [t.start.clone(), t.end.clone()]).collect();
        points.sort();
        points.dedup();
        // Sweep the boundaries left to right; `open` holds the tombstones started so far by
        // (seq, end), and ended ones leave it lazily, when they reach the top.
        let mut open: BinaryHeap<(SeqNo, Reverse<Bytes>)> = BinaryHeap::new();
        let mut next = tombstones.into_iter().peekable();
        let mut out = FragmentedTombstones::default();
        for pair in points.windows(2) {
            let (from, to) = (&pair[0], &pair[1]);
            while let Some(t) = next.next_if(|t| t.start <= *from) {
                open.push((t.seq, Reverse(t.end)));
            }
            while open.peek().is_some_and(|(_, Reverse(end))| end <= from) {
                open.pop();
            }
            if let Some(&(seq, _)) = open.peek() {
                out.push(from, to, seq);
            }
        }
        out
    }

    /// Appends a fragment after every other one (start at or after the last end), joining it to
    /// the last one when they touch and have the same number.
    pub(crate) fn push(&mut self, start: &[u8], end: &[u8], seq: SeqNo) {
        debug_assert!(start < end, "empty fragment");
        debug_assert!(self.iter().last().is_none_or(|last| last.end <= start), "out of order");
        if let Some(last) = self.bounds.last_mut()
            && self.seqs.last() == Some(&seq)
            && self.keys[self.keys.len() - last.end_len as usize..] == *start
        {
            self.keys.truncate(self.keys.len() - last.end_len as usize);
            self.keys.extend_from_slice(end);
            last.end_len = len32(end);
            let last = *last;
            let joined_start = &self.keys[last.offset..last.offset + last.start_len as usize];
            self.prefixes.add(joined_start, end);
            if self.bounds.len().is_multiple_of(FENCE_STRIDE) {
                self.fence_ends.pop();
                self.fence_heads.pop();
                self.fence_keys.truncate(self.fence_ends.last().map_or(0, |&e| e as usize));
                self.push_fence(end);
            }
            return;
        }
        let offset = self.keys.len();
        self.keys.extend_from_slice(start);
        self.keys.extend_from_slice(end);
        self.bounds.push(Bounds { offset, start_len: len32(start), end_len: len32(end) });
        self.seqs.push(seq);
        self.prefixes.add(start, end);
        if self.bounds.len().is_multiple_of(FENCE_STRIDE) {
            self.push_fence(end);
        }
    }

    fn push_fence(&mut self, end: &[u8]) {
        let end_len = end.len();
        self.fence_keys.extend_from_slice(end);
        let end = u32::try_from(self.fence_keys.len()).expect("fence over 4 GiB");
        self.fence_ends.push(end);
        self.fence_heads.push(head_of(&self.fence_keys[self.fence_keys.len() - end_len..]));
    }

    fn fence_key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.fence_ends[i - 1] as usize };
        &self.fence_keys[start..self.fence_ends[i] as usize]
    }

    /// Every fragment of both.
    pub fn merged_with(&self, other: &FragmentedTombstones) -> FragmentedTombstones {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        Self::new(self.iter().chain(other.iter()).map(Fragment::to_tombstone))
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn get(&self, i: usize) -> Fragment<'_> {
        let b = self.bounds[i];
        let end_at = b.offset + b.start_len as usize;
        Fragment {
            start: &self.keys[b.offset..end_at],
            end: &self.keys[end_at..end_at + b.end_len as usize],
            seq: self.seqs[i],
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Fragment<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Heap bytes held (fragments, fence and prefix filter), charged to the memory budget while
    /// the version holds them.
    pub fn memory_size(&self) -> usize {
        self.keys.capacity()
            + self.bounds.capacity() * size_of::<Bounds>()
            + self.seqs.capacity() * size_of::<SeqNo>()
            + self.fence_keys.capacity()
            + self.fence_ends.capacity() * size_of::<u32>()
            + self.fence_heads.capacity() * size_of::<u128>()
            + self.prefixes.memory_size()
    }

    pub fn max_seq(&self) -> SeqNo {
        self.seqs.iter().copied().max().unwrap_or(0)
    }

    fn end(&self, b: &Bounds) -> &[u8] {
        let at = b.offset + b.start_len as usize;
        &self.keys[at..at + b.end_len as usize]
    }

    /// Index of the first fragment at or after `from` whose end is above `key`.
    fn first_ending_after(&self, key: &[u8], from: usize) -> usize {
        if from > 0 {
            return from + self.bounds[from..].partition_point(|b| self.end(b) <= key);
        }
        // Fence key g ends fragment (g + 1) * STRIDE - 1: the fragments before stride g all end
        // at or below `key`, the last of stride g above it.
        let head = head_of(key);
        let below = self.fence_heads.partition_point(|&h| h < head);
        let ties = self.fence_heads[below..].partition_point(|&h| h == head);
        let g = below + partition_point(ties, |i| self.fence_key(below + i) <= key);
        let from = g * FENCE_STRIDE;
        let to = self.bounds.len().min(from + FENCE_STRIDE);
        self.prefetch_stride(from..to);
        from + self.bounds[from..to].partition_point(|b| self.end(b) <= key)
    }

    /// Asks for the cache lines of fragments `stride` (their bounds, then their keys, which sit
    /// together), so that the search's steps through them wait for memory about twice, not once
    /// per step.
    fn prefetch_stride(&self, stride: Range<usize>) {
        let bounds = &self.bounds[stride];
        let (Some(first), Some(last)) = (bounds.first(), bounds.last()) else {
            return;
        };
        let bound_bytes = std::mem::size_of_val(bounds);
        let at = bounds.as_ptr().cast::<u8>();
        (0..bound_bytes).step_by(CACHE_LINE).for_each(|i| prefetch_line(at.wrapping_add(i)));
        let end = last.offset + (last.start_len + last.end_len) as usize;
        let keys = &self.keys[first.offset..end.min(first.offset + MAX_PREFETCH_KEY_BYTES)];
        keys.iter().step_by(CACHE_LINE).for_each(|b| prefetch_line(b));
    }

    /// Number of fragment `i` if it covers `key`, else 0.
    fn seq_if_covers(&self, i: usize, key: &[u8]) -> SeqNo {
        match self.bounds.get(i) {
            Some(b) if &self.keys[b.offset..b.offset + b.start_len as usize] <= key => self.seqs[i],
            _ => 0,
        }
    }

    /// Highest sequence number of a tombstone covering `key` (0 if none).
    pub fn covering_seq(&self, key: &[u8]) -> SeqNo {
        if !self.prefixes.may_cover(key) {
            return 0;
        }
        self.seq_if_covers(self.first_ending_after(key, 0), key)
    }

    /// Indices of the fragments overlapping the inclusive key range [smallest, largest].
    pub fn overlapping_range(&self, smallest: &[u8], largest: &[u8]) -> Range<usize> {
        let from = self.first_ending_after(smallest, 0);
        let start = |b: &Bounds| &self.keys[b.offset..b.offset + b.start_len as usize];
        let to = from + self.bounds[from..].partition_point(|b| start(b) <= largest);
        from..to
    }

    /// True if tombstones newer than `seq` cover every key of [smallest, largest].
    pub fn covers_all_newer_than(&self, smallest: &[u8], largest: &[u8], seq: SeqNo) -> bool {
        let over = self.overlapping_range(smallest, largest);
        if over.is_empty() {
            return false;
        }
        let (first, last) = (self.get(over.start), self.get(over.end - 1));
        first.start <= smallest
            && largest < last.end
            && over.clone().skip(1).all(|i| self.get(i - 1).end == self.get(i).start)
            && over.into_iter().all(|i| self.seqs[i] > seq)
    }

    /// The fragments for which `keep(index)` holds.
    pub fn retained(&self, keep: impl Fn(usize) -> bool) -> FragmentedTombstones {
        let mut out = FragmentedTombstones::default();
        for i in (0..self.len()).filter(|&i| keep(i)) {
            let f = self.get(i);
            out.push(f.start, f.end, f.seq);
        }
        out
    }

    /// Copies of every fragment.
    pub fn to_tombstones(&self) -> Vec<RangeTombstone> {
        self.iter().map(Fragment::to_tombstone).collect()
    }
}

/// The first of `0..len` for which `below` is false (`below` true for a prefix of them).
fn partition_point(len: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) { lo = mid + 1 } else { hi = mid }
    }
    lo
}

fn len32(key: &[u8]) -> u32 {
    // Keys are bounded far below 4 GiB (`sst::MAX_ENTRY_BYTES`).
    u32::try_from(key.len()).expect("key longer than 4 GiB")
}

/// Walks a fragment list alongside ascending keys: after a `seek`, each lookup moves forward
/// from the last one, so a scan pays for the fragments it passes, not for all of them.
pub struct TombstoneCursor {
    tombstones: Arc<FragmentedTombstones>,
    position: usize,
}

impl TombstoneCursor {
    pub fn new(tombstones: Arc<FragmentedTombstones>) -> Self {
        TombstoneCursor { tombstones, position: 0 }
    }

    /// Positions at the first fragment that can cover `key` or a later key.
    pub fn seek(&mut self, key: &[u8]) {
        self.position = self.tombstones.first_ending_after(key, 0);
    }

    /// As `FragmentedTombstones::covering_seq`, for a key not below the previous one (or the
    /// last `seek`).
    pub fn covering_seq(&mut self, key: &[u8]) -> SeqNo {
        let t = &self.tombstones;
        let ended = |i: usize| t.bounds.get(i).is_some_and(|b| t.end(b) <= key);
        if ended(self.position) {
            // Mostly the next fragment; far jumps (a seek-less skip over many) search.
            self.position += 1;
            if ended(self.position) {
                self.position = t.first_ending_after(key, self.position);
            }
        }
        t.seq_if_covers(self.position, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>, seq: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: Bytes::copy_from_slice(start.as_ref()),
            end: Bytes::copy_from_slice(end.as_ref()),
            seq,
        }
    }

    fn fragment(tombstones: &[RangeTombstone]) -> Vec<(String, String, SeqNo)> {
        FragmentedTombstones::new(tombstones.iter().cloned())
            .iter()
            .map(|f| {
                let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                (s(f.start), s(f.end), f.seq)
            })
            .collect()
    }

    fn frags(expected: &[(&str, &str, SeqNo)]) -> Vec<(String, String, SeqNo)> {
        expected.iter().map(|&(a, b, s)| (a.into(), b.into(), s)).collect()
    }

    /// Prefix deletes as Flink writes them (nested, repeated, neighbours that join into one
    /// fragment) over a tiny alphabet: the prefix filter in front of the search never turns
    /// away a covered key.
    #[test]
    fn the_prefix_filter_never_turns_away_a_covered_key() {
        use crate::lsm::column_family::prefix_successor;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let alphabet = [0u8, 1, 0xfe, 0xff];
        let key = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<u8> {
            let mut k: Vec<u8> =
                (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect();
            k[0] = 1; // never all 0xff, and one first byte: prefixes meet and nest
            k
        };
        let mut tombstones = Vec::new();
        let mut probes: Vec<Vec<u8>> = (0..300).map(|i| key(&mut rng, 1 + i % 6)).collect();
        for seq in 1..=60 {
            let start = key(&mut rng, 2 + seq as usize % 3);
            let end = prefix_successor(&start).expect("not all 0xff");
            probes.push([&start[..], &[0]].concat());
            probes.push(start.clone());
            tombstones.push(t(&start, end, seq));
        }
        // Two neighbours of one number join into one fragment wider than either prefix.
        tombstones.push(t("k1", "k2", 61));
        tombstones.push(t("k2", "k3", 61));
        probes.extend([b"k1".to_vec(), b"k25".to_vec(), b"k3".to_vec()]);
        let list = FragmentedTombstones::new(tombstones.iter().cloned());
        assert!(list.iter().any(|f| f.start == b"k1" && f.end == b"k3"), "joined");
        assert!(!list.prefixes.passes_all(), "the filter is in use");
        for probe in &probes {
            assert_eq!(list.covering_seq(probe), brute_covering(&tombstones, probe), "{probe:?}");
        }
    }

    /// Reference answer: scan every tombstone.
    fn brute_covering(tombstones: &[RangeTombstone], key: &[u8]) -> SeqNo {
        tombstones.iter().filter(|t| t.contains(key)).map(|t| t.seq).max().unwrap_or(0)
    }

    #[test]
    fn overlapping_tombstones_split_at_every_bound() {
        let got = fragment(&[t("a", "e", 5), t("c", "g", 7)]);
        assert_eq!(got, frags(&[("a", "c", 5), ("c", "g", 7)]));
        let got = fragment(&[t("a", "e", 7), t("c", "g", 5)]);
        assert_eq!(got, frags(&[("a", "e", 7), ("e", "g", 5)]));
    }

    #[test]
    fn nested_tombstone_shows_only_where_newer() {
        let got = fragment(&[t("a", "z", 3), t("f", "h", 9)]);
        assert_eq!(got, frags(&[("a", "f", 3), ("f", "h", 9), ("h", "z", 3)]));
        let got = fragment(&[t("a", "z", 9), t("f", "h", 3)]);
        assert_eq!(got, frags(&[("a", "z", 9)]));
    }

    #[test]
    fn equal_bounds_keep_the_highest_sequence_number() {
        let got = fragment(&[t("b", "d", 4), t("b", "d", 8), t("b", "d", 6)]);
        assert_eq!(got, frags(&[("b", "d", 8)]));
        // Same start, different ends; same end, different starts.
        let got = fragment(&[t("b", "d", 4), t("b", "f", 2), t("a", "f", 3)]);
        assert_eq!(got, frags(&[("a", "b", 3), ("b", "d", 4), ("d", "f", 3)]));
    }

    #[test]
    fn touching_and_disjoint_tombstones_keep_gaps_and_merge_equal_neighbours() {
        let got = fragment(&[t("a", "b", 1), t("b", "c", 1), t("d", "e", 2), t("c", "c", 9)]);
        assert_eq!(got, frags(&[("a", "c", 1), ("d", "e", 2)]));
        assert!(fragment(&[t("x", "a", 3)]).is_empty(), "an empty range deletes nothing");
    }

    #[test]
    fn covering_seq_and_cursor_agree_with_a_scan_of_every_tombstone() {
        // A deterministic mix of wide, narrow, nested and repeated ranges over keys "00".."99".
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let key = |i: u64| format!("{i:02}");
        let mut tombstones = Vec::new();
        for seq in 1..=300 {
            let a = next(100);
            let b = (a + 1 + next(if seq % 10 == 0 { 60 } else { 5 })).min(100);
            tombstones.push(t(key(a), key(b), seq));
        }
        let list = Arc::new(FragmentedTombstones::new(tombstones.iter().cloned()));
        let fragments = list.to_tombstones();
        assert!(fragments.windows(2).all(|w| w[0].end < w[1].start || w[0].seq != w[1].seq));
        assert!(fragments.windows(2).all(|w| w[0].end <= w[1].start), "sorted, disjoint");
        let mut cursor = TombstoneCursor::new(list.clone());
        cursor.seek(b"");
        for i in 0..100 {
            let k = key(i);
            let expected = brute_covering(&tombstones, k.as_bytes());
            assert_eq!(list.covering_seq(k.as_bytes()), expected, "key {k}");
            assert_eq!(cursor.covering_seq(k.as_bytes()), expected, "cursor at key {k}");
            // Keys between the two-digit ones ("05a") fall inside fragments too.
            let between = format!("{k}a");
            assert_eq!(
                list.covering_seq(between.as_bytes()),
                brute_covering(&tombstones, between.as_bytes()),
                "key {between}"
            );
        }
        // A cursor that skips ahead far still finds the right fragment.
        cursor.seek(b"");
        assert_eq!(cursor.covering_seq(b"97"), brute_covering(&tombstones, b"97"));
    }

    #[test]
    fn searches_through_the_fence_find_every_fragment() {
        // Hundreds of fragments (many strides of the fence), with runs of touching fragments of
        // one number that `push` joins, also where the joined fragment ends a stride. Behind a
        // prefix, the fence keys' 16-byte heads differ, tie in runs (14 bytes shared), or all
        // tie (20 bytes shared).
        for prefix in ["", "user-00001234|", "user-00001234|map|x|"] {
            let key = |i: usize| format!("{prefix}{i:04}");
            let mut tombstones = Vec::new();
            for i in 0..600 {
                let seq = if i % 7 < 3 { 1 } else { i as SeqNo + 2 };
                tombstones.push(t(key(2 * i), key(2 * i + 1 + (i % 5 == 0) as usize), seq));
            }
            let list = FragmentedTombstones::new(tombstones.iter().cloned());
            assert!(list.len() > 20 * FENCE_STRIDE, "{} fragments", list.len());
            let beyond = [prefix.to_string(), format!("{prefix}\0"), format!("{prefix}~")];
            let keys = (0..1250).flat_map(|i| [key(i), format!("{}a", key(i))]).chain(beyond);
            for k in keys {
                let expected = brute_covering(&tombstones, k.as_bytes());
                assert_eq!(list.covering_seq(k.as_bytes()), expected, "key {k}");
            }
            let mut by_push = FragmentedTombstones::default();
            list.iter().for_each(|f| by_push.push(f.start, f.end, f.seq));
            assert_eq!(by_push, list, "the fence follows the fragments, however they were pushed");
        }
    }

    #[test]
    fn whole_range_coverage_needs_contiguous_newer_fragments() {
        let list = FragmentedTombstones::new([t("a", "c", 5), t("c", "f", 7), t("g", "k", 9)]);
        assert!(list.covers_all_newer_than(b"a", b"e", 4));
        assert!(!list.covers_all_newer_than(b"a", b"e", 5), "fragment a..c is not newer than 5");
        assert!(!list.covers_all_newer_than(b"b", b"g", 1), "gap f..g");
        assert!(!list.covers_all_newer_than(b"g", b"k", 1), "end k is exclusive");
        assert!(list.covers_all_newer_than(b"h", b"j", 8));
        assert!(!list.covers_all_newer_than(b"l", b"m", 0));
        assert_eq!(list.overlapping_range(b"b", b"g"), 0..3);
        assert_eq!(list.overlapping_range(b"f", b"f").len(), 0);
        assert_eq!(list.overlapping_range(b"", b"a"), 0..1);
        assert_eq!(list.overlapping_range(b"k", b"z").len(), 0);
    }
}
