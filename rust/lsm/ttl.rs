//! Flink's state TTL in compaction: what `FlinkCompactionFilter` does in Flink's RocksDB and ForSt
//! backends (cleanup strategy `inRocksdbCompactFilter`, on by default in Flink 2).
//!
//! Flink's `TtlStateFactory` stores each value of a TTL state as a `TtlValue`: the last-access
//! timestamp (8 bytes, big-endian), then the user value. A column family given a [`TtlFilter`]
//! has every entry a compaction writes checked against the filter's clock:
//! - value, reducing and aggregating state hold one `TtlValue` (timestamp at offset 0), map state
//!   a null flag and then the `TtlValue` (offset 1): an expired entry is removed;
//! - list state holds `TtlValue`s joined by `,`: the expired elements at the head are cut off, up
//!   to the first unexpired one (Flink's rule), and a list with every element expired is removed.
//!   Element boundaries need the element length: fixed-length elements are parsed here, other
//!   lists ask a [`ListElementFilter`] (Flink's deserializer, through JNI).
//!
//! Compaction writes one entry per key (`collapse`), so the filter sees each key's resolved value
//! there, except for merge operands whose base lies below the compaction's inputs. Those are the
//! tail of a list: cutting their expired head, or dropping them when all are expired, removes
//! only expired elements and leaves the older part below untouched. A removed value becomes a
//! delete unless the compaction is bottommost, so an older version below cannot come back.
//! Flush does not filter (as in RocksDB): fresh data is rarely expired, and the Java element
//! filter then only ever runs on the one compaction at a time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::lsm::column_family::{ColumnFamilyId, family_of};
use crate::lsm::key::ValueKind;
use crate::lsm::locks::Recover;
use crate::lsm::merge::LIST_DELIMITER;
use crate::{Error, Result};

const TIMESTAMP_BYTES: usize = 8;

/// The "now" TTL is measured against, in milliseconds (Flink's `TtlTimeProvider`).
pub trait TtlClock: Send + Sync {
    fn now_millis(&self) -> Result<i64>;
}

/// Wall-clock time, as Flink's `TtlTimeProvider.DEFAULT` (`System.currentTimeMillis`).
#[derive(Debug, Default)]
pub struct SystemClock;

impl TtlClock for SystemClock {
    fn now_millis(&self) -> Result<i64> {
        let since_epoch =
            SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| Error::io("clock", e))?;
        Ok(i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX))
    }
}

/// Finds where the unexpired part of a list begins when only the element serializer knows where
/// elements end (Flink's `FlinkCompactionFilter.ListElementFilter`).
pub trait ListElementFilter: Send + Sync {
    /// Offset of the first element not expired at `now_millis`, just after the `,` before it;
    /// 0 if the first is not expired, the list's length if every element is.
    fn next_unexpired_offset(&self, list: &[u8], ttl_millis: i64, now_millis: i64)
    -> Result<usize>;
}

/// Where a family's values keep their timestamps.
#[derive(Clone)]
pub enum TtlLayout {
    /// One `TtlValue` at this offset (0: value, reducing, aggregating state; 1: map state).
    Value { timestamp_offset: usize },
    /// `TtlValue`s of this many bytes each (the delimiter not counted) joined by `,`.
    FixedList { element_bytes: usize },
    /// `TtlValue`s of varying length joined by `,`.
    List(Arc<dyn ListElementFilter>),
}

/// The TTL of one column family.
#[derive(Clone)]
pub struct TtlFilter {
    pub layout: TtlLayout,
    pub ttl_millis: i64,
    /// A compaction reads the clock again after filtering this many entries of the family
    /// (Flink's `queryTimeAfterNumEntries`; 0 reads it for every entry).
    pub query_time_after_entries: u64,
    pub clock: Arc<dyn TtlClock>,
}

/// Flink's `TtlUtils.expired`: expired once `timestamp + ttl <= now`, the sum saturating at
/// `i64::MAX` for positive timestamps.
pub fn expired(timestamp: i64, ttl_millis: i64, now_millis: i64) -> bool {
    let ttl = if timestamp > 0 { ttl_millis.min(i64::MAX - timestamp) } else { ttl_millis };
    timestamp.wrapping_add(ttl) <= now_millis
}

/// What the filter does with one value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Keep,
    Remove,
    /// Keep the list from this offset on (the start of its first unexpired element).
    KeepFrom(usize),
}

impl TtlFilter {
    pub(crate) fn decide(&self, value: &[u8], now: i64) -> Result<Decision> {
        match &self.layout {
            TtlLayout::Value { timestamp_offset } => {
                // Too short to hold a timestamp: not written by a TTL state, leave it.
                Ok(match timestamp_at(value, *timestamp_offset) {
                    Some(ts) if expired(ts, self.ttl_millis, now) => Decision::Remove,
                    _ => Decision::Keep,
                })
            }
            TtlLayout::FixedList { element_bytes } => {
                Ok(self.decide_fixed_list(value, *element_bytes, now))
            }
            TtlLayout::List(elements) => {
                let offset = elements.next_unexpired_offset(value, self.ttl_millis, now)?;
                list_decision(value, offset)
            }
        }
    }

    fn decide_fixed_list(&self, value: &[u8], element_bytes: usize, now: i64) -> Decision {
        let stride = element_bytes + 1;
        let whole_elements = element_bytes >= TIMESTAMP_BYTES
            && (value.len() + 1).is_multiple_of(stride)
            && (1..(value.len() + 1) / stride).all(|i| value[i * stride - 1] == LIST_DELIMITER);
        if !whole_elements {
            // Not this layout (the element length changed?): never cut at a wrong boundary.
            return Decision::Keep;
        }
        let mut offset = 0;
        while offset < value.len() {
            match timestamp_at(value, offset) {
                Some(ts) if expired(ts, self.ttl_millis, now) => offset += stride,
                _ => break,
            }
        }
        match offset {
            0 => Decision::Keep,
            o if o >= value.len() => Decision::Remove,
            o => Decision::KeepFrom(o),
        }
    }
}

fn timestamp_at(value: &[u8], offset: usize) -> Option<i64> {
    let bytes = value.get(offset..offset.checked_add(TIMESTAMP_BYTES)?)?;
    Some(i64::from_be_bytes(bytes.try_into().ok()?))
}

/// The decision for a list whose first unexpired element starts at `offset`.
fn list_decision(list: &[u8], offset: usize) -> Result<Decision> {
    match offset {
        0 => Ok(Decision::Keep),
        o if o == list.len() => Ok(Decision::Remove),
        o if o < list.len() && list[o - 1] == LIST_DELIMITER => Ok(Decision::KeepFrom(o)),
        o => Err(Error::invalid(format!(
            "list element filter answered offset {o}, not an element start in a list of {} bytes",
            list.len()
        ))),
    }
}

/// The filters of a database's column families and what they have removed.
#[derive(Default)]
pub(crate) struct TtlFilters {
    by_family: RwLock<HashMap<ColumnFamilyId, Arc<TtlFilter>>>,
    removed: AtomicU64,
    trimmed: AtomicU64,
}

impl TtlFilters {
    pub fn set(&self, family: ColumnFamilyId, filter: Option<TtlFilter>) {
        let mut by_family = self.by_family.write().recover();
        match filter {
            Some(filter) => by_family.insert(family, Arc::new(filter)),
            None => by_family.remove(&family),
        };
    }

    /// Entries removed because their value (or every list element) had expired.
    pub fn removed(&self) -> u64 {
        self.removed.load(Ordering::Relaxed)
    }

    /// Lists whose expired head was cut off.
    pub fn trimmed(&self) -> u64 {
        self.trimmed.load(Ordering::Relaxed)
    }

    /// The filters for one compaction, as they are now.
    pub fn pass(&self) -> TtlPass<'_> {
        let by_family = self.by_family.read().recover();
        let families = by_family
            .iter()
            .map(|(&id, filter)| {
                (
                    id,
                    FamilyPass {
                        filter: filter.clone(),
                        now: Err(String::new()),
                        entries_until_query: 0,
                    },
                )
            })
            .collect();
        TtlPass { filters: self, families, errors: 0, first_error: None }
    }
}

/// The filters applied by one compaction, each with the time it last read from its clock.
pub(crate) struct TtlPass<'a> {
    filters: &'a TtlFilters,
    families: HashMap<ColumnFamilyId, FamilyPass>,
    errors: u64,
    first_error: Option<String>,
}

struct FamilyPass {
    filter: Arc<TtlFilter>,
    /// The clock's last answer (its error text if the read failed: then nothing is removed
    /// until the next read).
    now: std::result::Result<i64, String>,
    entries_until_query: u64,
}

impl FamilyPass {
    fn now(&mut self) -> Result<i64> {
        if self.entries_until_query == 0 {
            self.entries_until_query = self.filter.query_time_after_entries.max(1);
            self.now = self.filter.clock.now_millis().map_err(|e| e.to_string());
        }
        self.entries_until_query -= 1;
        self.now.clone().map_err(|e| Error::io("TTL clock", e))
    }
}

impl TtlPass<'_> {
    /// Whether a TTL filter looks at `key`'s entries (its family has one).
    pub fn filters(&self, key: &[u8]) -> bool {
        !self.families.is_empty()
            && family_of(key).is_some_and(|id| self.families.contains_key(&id))
    }

    /// The entry compaction writes for `key` instead of `(kind, value)`, if any. `bottommost`:
    /// nothing older of the key exists below the compaction's output.
    pub fn apply(
        &mut self,
        key: &[u8],
        kind: ValueKind,
        value: Bytes,
        bottommost: bool,
    ) -> Option<(ValueKind, Bytes)> {
        let entry = Some((kind, value));
        if self.families.is_empty() {
            return entry;
        }
        let Some(family) = family_of(key).and_then(|id| self.families.get_mut(&id)) else {
            return entry;
        };
        let list = !matches!(family.filter.layout, TtlLayout::Value { .. });
        let (kind, value) = entry?;
        if kind == ValueKind::Delete || (kind == ValueKind::Merge && !list) {
            return Some((kind, value));
        }
        let decision = family.now().and_then(|now| family.filter.decide(&value, now));
        match decision {
            Ok(Decision::Keep) => Some((kind, value)),
            Ok(Decision::KeepFrom(offset)) => {
                self.filters.trimmed.fetch_add(1, Ordering::Relaxed);
                Some((kind, value.slice(offset..)))
            }
            Ok(Decision::Remove) => {
                self.filters.removed.fetch_add(1, Ordering::Relaxed);
                match kind {
                    // The tail of a list whose base lies below: only these elements go.
                    ValueKind::Merge => None,
                    _ if bottommost => None,
                    _ => Some((ValueKind::Delete, Bytes::new())),
                }
            }
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert_with(|| e.to_string());
                Some((kind, value))
            }
        }
    }
}

impl Drop for TtlPass<'_> {
    fn drop(&mut self) {
        if let Some(first) = &self.first_error {
            let errors = self.errors;
            tracing::warn!(
                "TTL compaction filter kept {errors} entries it could not check: {first}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicI64;

    use super::*;
    use crate::lsm::column_family::prefixed_key;

    struct FixedClock(AtomicI64);

    impl TtlClock for FixedClock {
        fn now_millis(&self) -> Result<i64> {
            Ok(self.0.load(Ordering::Relaxed))
        }
    }

    fn filter(layout: TtlLayout, ttl_millis: i64) -> TtlFilter {
        TtlFilter {
            layout,
            ttl_millis,
            query_time_after_entries: 1000,
            clock: Arc::new(FixedClock(AtomicI64::new(0))),
        }
    }

    /// A `TtlValue`: timestamp, then the user value.
    fn ttl_value(ts: i64, user: &[u8]) -> Vec<u8> {
        let mut out = ts.to_be_bytes().to_vec();
        out.extend_from_slice(user);
        out
    }

    fn list(elements: &[Vec<u8>]) -> Vec<u8> {
        elements.join(&LIST_DELIMITER)
    }

    #[test]
    fn expired_matches_flinks_ttl_utils() {
        assert!(!expired(100, 10, 109));
        assert!(expired(100, 10, 110), "expiration time itself is expired");
        assert!(expired(100, 10, 111));
        // Saturates instead of overflowing into the past.
        assert!(!expired(i64::MAX - 5, 10, i64::MAX - 1));
        assert!(expired(i64::MAX - 5, 10, i64::MAX));
        assert!(!expired(-5, 10, 4));
        assert!(expired(-5, 10, 5));
    }

    #[test]
    fn value_and_map_layouts_read_the_timestamp_at_their_offset() {
        let value = filter(TtlLayout::Value { timestamp_offset: 0 }, 10);
        assert_eq!(value.decide(&ttl_value(100, b"x"), 109).unwrap(), Decision::Keep);
        assert_eq!(value.decide(&ttl_value(100, b"x"), 110).unwrap(), Decision::Remove);
        assert_eq!(value.decide(&ttl_value(100, b""), 110).unwrap(), Decision::Remove);
        assert_eq!(value.decide(b"short", 1 << 40).unwrap(), Decision::Keep);

        let map = filter(TtlLayout::Value { timestamp_offset: 1 }, 10);
        let mut entry = vec![0u8];
        entry.extend(ttl_value(100, b"v"));
        assert_eq!(map.decide(&entry, 109).unwrap(), Decision::Keep);
        assert_eq!(map.decide(&entry, 110).unwrap(), Decision::Remove);
        // At offset 0 the same bytes read as another timestamp (0): the offset matters.
        assert_eq!(value.decide(&entry, 109).unwrap(), Decision::Remove);
    }

    #[test]
    fn fixed_length_list_cuts_the_expired_head_only() {
        let f = filter(TtlLayout::FixedList { element_bytes: 12 }, 10);
        let elements = [ttl_value(100, b"aaaa"), ttl_value(105, b"bbbb"), ttl_value(101, b"cccc")];
        let value = list(&elements);
        assert_eq!(f.decide(&value, 109).unwrap(), Decision::Keep);
        // The first is expired, the second not: the third (expired) stays behind it.
        assert_eq!(f.decide(&value, 112).unwrap(), Decision::KeepFrom(13));
        assert_eq!(&value[13..], &list(&elements[1..])[..]);
        assert_eq!(f.decide(&value, 115).unwrap(), Decision::Remove);
        assert_eq!(f.decide(&elements[0], 110).unwrap(), Decision::Remove);
    }

    #[test]
    fn fixed_length_list_leaves_values_of_another_layout() {
        let f = filter(TtlLayout::FixedList { element_bytes: 12 }, 10);
        let wrong_length = list(&[ttl_value(1, b"aaaaa")]);
        assert_eq!(f.decide(&wrong_length, 1000).unwrap(), Decision::Keep);
        let mut wrong_delimiter = list(&[ttl_value(1, b"aaaa"), ttl_value(1, b"bbbb")]);
        wrong_delimiter[12] = b';';
        assert_eq!(f.decide(&wrong_delimiter, 1000).unwrap(), Decision::Keep);
        assert_eq!(f.decide(b"", 1000).unwrap(), Decision::Keep);
    }

    struct Answer(usize);

    impl ListElementFilter for Answer {
        fn next_unexpired_offset(&self, _: &[u8], _: i64, _: i64) -> Result<usize> {
            Ok(self.0)
        }
    }

    #[test]
    fn element_filter_answers_are_checked() {
        let value = list(&[ttl_value(1, b"a"), ttl_value(2, b"bb")]);
        let decide =
            |offset| filter(TtlLayout::List(Arc::new(Answer(offset))), 10).decide(&value, 0);
        assert_eq!(decide(0).unwrap(), Decision::Keep);
        assert_eq!(decide(10).unwrap(), Decision::KeepFrom(10));
        assert_eq!(decide(value.len()).unwrap(), Decision::Remove);
        assert!(decide(5).is_err(), "not after a delimiter");
        assert!(decide(value.len() + 1).is_err());
    }

    #[test]
    fn pass_turns_removals_into_deletes_unless_bottommost() {
        let filters = TtlFilters::default();
        filters.set(7, Some(filter(TtlLayout::Value { timestamp_offset: 0 }, 10)));
        let key = prefixed_key(7, b"k");
        let other = prefixed_key(8, b"k");
        let old = Bytes::from(ttl_value(-100, b"x"));
        let mut pass = filters.pass();
        assert_eq!(
            pass.apply(&key, ValueKind::Put, old.clone(), false),
            Some((ValueKind::Delete, Bytes::new()))
        );
        assert_eq!(pass.apply(&key, ValueKind::Put, old.clone(), true), None);
        assert_eq!(
            pass.apply(&other, ValueKind::Put, old.clone(), true),
            Some((ValueKind::Put, old.clone())),
            "a family without a filter"
        );
        assert_eq!(
            pass.apply(&key, ValueKind::Merge, old.clone(), false),
            Some((ValueKind::Merge, old)),
            "merges in a value family are not values"
        );
        assert_eq!(filters.removed(), 2);
    }

    #[test]
    fn pass_trims_or_drops_partial_list_merges() {
        let filters = TtlFilters::default();
        filters.set(7, Some(filter(TtlLayout::FixedList { element_bytes: 9 }, 10)));
        let key = prefixed_key(7, b"k");
        let tail = Bytes::from(list(&[ttl_value(-50, b"a"), ttl_value(50, b"b")]));
        let mut pass = filters.pass();
        assert_eq!(
            pass.apply(&key, ValueKind::Merge, tail.clone(), false),
            Some((ValueKind::Merge, tail.slice(10..)))
        );
        let expired_tail = Bytes::from(ttl_value(-50, b"a"));
        assert_eq!(pass.apply(&key, ValueKind::Merge, expired_tail, false), None);
        assert_eq!((filters.trimmed(), filters.removed()), (1, 1));
    }

    struct CountingClock {
        now: AtomicI64,
        reads: AtomicU64,
    }

    impl TtlClock for CountingClock {
        fn now_millis(&self) -> Result<i64> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Ok(self.now.load(Ordering::Relaxed))
        }
    }

    #[test]
    fn pass_reads_the_clock_every_query_time_after_entries() {
        let clock = Arc::new(CountingClock { now: AtomicI64::new(0), reads: AtomicU64::new(0) });
        let filters = TtlFilters::default();
        filters.set(
            7,
            Some(TtlFilter {
                layout: TtlLayout::Value { timestamp_offset: 0 },
                ttl_millis: 10,
                query_time_after_entries: 3,
                clock: clock.clone(),
            }),
        );
        let key = prefixed_key(7, b"k");
        let value = Bytes::from(ttl_value(0, b"x"));
        let mut pass = filters.pass();
        let mut kept = Vec::new();
        for i in 0..7 {
            // The clock jumps past the expiration at once; the pass sees it at its next read.
            clock.now.store(if i == 0 { 0 } else { 100 }, Ordering::Relaxed);
            kept.push(pass.apply(&key, ValueKind::Put, value.clone(), true).is_some());
        }
        assert_eq!(kept, [true, true, true, false, false, false, false]);
        assert_eq!(clock.reads.load(Ordering::Relaxed), 3);
    }
}
