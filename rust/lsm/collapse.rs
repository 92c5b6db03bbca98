//! Flush and compaction both rewrite a sorted stream keeping one entry per key: the newest value
//! with merge operands folded in, deletes settled where nothing older can exist.

use std::sync::Arc;

use bytes::Bytes;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
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
    while input.valid() {
        let key = Bytes::copy_from_slice(input.key());
        let newest_seq = input.seq();
        let mut resolver = VersionResolver::new(tombstones.covering_seq(&key));
        while input.valid() && input.key() == key.as_ref() {
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
            sink.add(&key, newest_seq, kind, &value)?;
        }
    }
    Ok(())
}
