//! Point reads. Memtables answer first, in memory; keys they cannot settle walk the files newest
//! to oldest. A batch of keys walks the files concurrently: each key is one future, and all of
//! them are in flight at once, so N block reads from the DFS cost about one round trip, not N.

use bytes::Bytes;
use futures::future::try_join_all;

use crate::Result;
use crate::lsm::db::{DbInner, SuperVersion, read_view};
use crate::lsm::key::SeqNo;
use crate::lsm::resolve::VersionResolver;
use crate::lsm::version::Version;
use crate::storage::block_on;

/// Values of prefixed `keys`, in order.
pub(crate) fn multi_get(db: &DbInner, keys: &[Bytes]) -> Result<Vec<Option<Bytes>>> {
    db.check_open()?;
    let (snapshot, sv) = read_view(db);
    let mut results = vec![None; keys.len()];
    let mut pending = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let mut resolver = VersionResolver::new(covering_seq(&sv, key, snapshot));
        if resolve_in_memtables(&sv, key, snapshot, &mut resolver) {
            results[i] = resolver.into_value();
        } else {
            pending.push((i, key, resolver));
        }
    }
    if !pending.is_empty() {
        let version = &sv.version;
        let lookups = pending.into_iter().map(|(i, key, mut resolver)| async move {
            resolve_in_files(version, key, snapshot, &mut resolver).await?;
            Ok::<_, crate::Error>((i, resolver.into_value()))
        });
        for (i, value) in block_on(try_join_all(lookups))? {
            results[i] = value;
        }
    }
    Ok(results)
}

/// Highest sequence number of a range delete covering `key` at `snapshot`: a binary search in the
/// active memtable, in each frozen one and in the version.
fn covering_seq(sv: &SuperVersion, key: &[u8], snapshot: SeqNo) -> SeqNo {
    let frozen = sv.frozen.iter().map(|m| m.frozen_tombstones().covering_seq(key));
    let flushed = sv.version.tombstones.covering_seq(key);
    let older = frozen.fold(flushed, SeqNo::max);
    // `read_view`: the snapshot includes every write of the frozen memtables and the version.
    debug_assert!(older <= snapshot, "tombstone {older} newer than snapshot {snapshot}");
    sv.mem.covering_seq(key, snapshot).max(older)
}

/// True once no older version can matter.
fn resolve_in_memtables(
    sv: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
    resolver: &mut VersionResolver,
) -> bool {
    for mem in std::iter::once(&sv.mem).chain(sv.frozen.iter()) {
        for (seq, kind, value) in mem.get(key, snapshot) {
            if resolver.push(seq, kind, value) {
                return true;
            }
        }
    }
    false
}

async fn resolve_in_files(
    version: &Version,
    key: &[u8],
    snapshot: SeqNo,
    resolver: &mut VersionResolver,
) -> Result<()> {
    let level0 = version.levels[0].iter().filter(|f| f.contains(key));
    let deeper = (1..version.levels.len()).filter_map(|level| version.file_for_key(level, key));
    for file in level0.chain(deeper) {
        // `get` consults the file's bloom filter first.
        let table = file.table().await?;
        for (seq, kind, value) in table.get(key, snapshot).await? {
            if resolver.push(seq, kind, value) {
                return Ok(());
            }
        }
    }
    Ok(())
}
