//! Flush and compaction both rewrite a sorted stream keeping one entry per key: the newest value
//! with merge operands folded in, deletes settled where nothing older can exist.

use std::sync::Arc;

use bytes::Bytes;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::ValueKind;
use crate::lsm::range_tombstone::{FragmentedTombstones, TombstoneCursor};
use crate::lsm::resolve::VersionResolver;
use crate::lsm::table_sink::TableSink;
use crate::lsm::ttl::TtlPass;

/// Drains `input` (positioned anywhere before its first entry is fine: it is sought to the start)
/// into `sink`. `bottommost`: nothing older than the input exists for any of its keys. `ttl`: the
/// TTL filters to apply to each key's entry (compaction only).
pub fn collapse_into(
    input: &mut dyn InternalIterator,
    tombstones: &Arc<FragmentedTombstones>,
    bottommost: bool,
    mut ttl: Option<&mut TtlPass<'_>>,
    sink: &mut TableSink<'_>,
) -> Result<()> {
    input.seek(&[])?;
    let mut tombstones = TombstoneCursor::new(tombstones.clone());
    // Reused for every key: a rewrite allocates nothing per entry in the common case.
    let mut key = Vec::new();
    while input.valid() {
        key.clear();
        key.extend_from_slice(input.key());
        let newest_seq = input.seq();
        let covering_seq = tombstones.covering_seq(&key);
        // Bottommost and under no range delete, nothing can be older than the entry: its sequence
        // number becomes 0 (as in RocksDB), so the trailers of a bottom level compress to nothing.
        // Tombstones written later have higher numbers, and a restore brings in only tombstones
        // clipped to their own key ranges, so none of them can newly cover it.
        let output_seq = |kind| match kind {
            ValueKind::Put if bottommost && covering_seq == 0 => 0,
            _ => newest_seq,
        };
        let filtered = ttl.as_deref().is_some_and(|ttl| ttl.filters(&key));
        if input.kind() == ValueKind::Put && newest_seq >= covering_seq && !filtered {
            // The newest version is a whole value that no range delete covers: it is what
            // compaction keeps, written straight from the input.
            sink.add(&key, output_seq(ValueKind::Put), ValueKind::Put, input.value())?;
            while input.valid() && input.key() == key.as_slice() {
                input.next()?;
            }
            continue;
        }
        let mut resolver = VersionResolver::new(covering_seq);
        while input.valid() && input.key() == key.as_slice() {
            if !resolver.is_done() {
                resolver.push(input.seq(), input.kind(), Bytes::copy_from_slice(input.value()));
            }
            input.next()?;
        }
        let entry = resolver.into_compacted(bottommost);
        let entry = match (entry, ttl.as_deref_mut()) {
            (Some((kind, value)), Some(ttl)) => ttl.apply(&key, kind, value, bottommost),
            (entry, _) => entry,
        };
        if let Some((kind, value)) = entry {
            sink.add(&key, output_seq(kind), kind, &value)?;
        }
    }
    Ok(())
}
