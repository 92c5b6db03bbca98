//! Deleting a closed database: only what it owns. Files it handed over to checkpoints (external
//! in its manifest, or released) belong to those checkpoints and stay where they are; their owner
//! (Flink's SharedStateRegistry) deletes them when no checkpoint needs them any more.

use std::collections::HashSet;

use crate::lsm::version::manifest::{
    ManifestData, delete_manifests_before, is_manifest, read_latest_manifest, write_manifest,
};
use crate::storage::Storage;
use crate::{ErrorKind, Result};

/// Deletes every file of the (closed) database in `storage` except the ones it gave away.
/// If it kept some, the directory is left holding an empty database whose manifest lists them
/// as released, so that a database opened or restored there later does not collect them as
/// orphans; the old manifests go last, so a deletion cut short and run again still knows what
/// to keep. Returns how many files were kept (0: the directory is empty now).
pub async fn delete_database(storage: &dyn Storage) -> Result<usize> {
    let (number, data) = match read_latest_manifest(storage).await {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        found => found?.unwrap_or_default(),
    };
    let kept: Vec<String> = data
        .files
        .iter()
        .filter(|f| !f.owned && f.location.is_none())
        .map(|f| f.path.clone())
        .chain(data.released.iter().cloned())
        .collect();
    let keep: HashSet<&str> = kept.iter().map(String::as_str).collect();
    for file in storage.list("").await? {
        if !is_manifest(&file.path) && !keep.contains(file.path.as_str()) {
            storage.delete(&file.path).await?;
        }
    }
    if !kept.is_empty() {
        let empty = ManifestData {
            last_seq: data.last_seq,
            next_file_number: data.next_file_number,
            released: kept.clone(),
            ..Default::default()
        };
        write_manifest(storage, number + 1, &empty).await?;
    }
    let keep_from = if kept.is_empty() { u64::MAX } else { number + 1 };
    delete_manifests_before(storage, keep_from).await?;
    Ok(kept.len())
}
