//! Deleting a closed (or dead) database: only what it owns. Files it handed over to checkpoints
//! (external in its manifest, or released) belong to those checkpoints and stay where they are;
//! their owner (Flink's SharedStateRegistry) deletes them when no checkpoint needs them any more.

use std::collections::HashSet;

use crate::lsm::version::manifest::{
    ManifestData, delete_manifests_before, is_manifest, read_latest_manifest, write_manifest,
};
use crate::storage::Storage;
use crate::{ErrorKind, Result};

/// What a deletion leaves in the directory besides the files it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    /// Nothing of the database (no manifest, no `LOCK`): the directory is never opened again, so
    /// once the checkpoints' owner deleted the kept files it is empty.
    Nothing,
    /// An empty database whose manifest lists the kept files as released, so that a database
    /// opened or restored there next does not collect them as orphans.
    EmptyDatabase,
}

/// What the job knows when it collects the database of an attempt that died in the same run
/// (same execution graph): at the failover Flink aborted every pending checkpoint and restored
/// the latest completed one, `restored_from`, so no checkpoint after it that this database took
/// part in can ever complete.
pub struct AfterFailover<'a> {
    /// The checkpoint the job restored from; 0 if it restored none.
    pub restored_from: u64,
    /// The database's files (names in its directory) that the restored checkpoint references.
    pub referenced: &'a HashSet<String>,
}

/// Deletes every file of the database in `storage` except the ones it gave away and that are
/// still there, and whatever `leave` says. With `after_failover`, a given-away file first handed
/// over by a checkpoint after `restored_from` (and not referenced by it) goes too: every
/// checkpoint that handed it over or could reference it came after the restored one, so none
/// completed. A directory without a manifest (a database deleted
/// with `Leave::Nothing`) keeps its SSTs: nothing says they are the database's own. Ignores the
/// writer's `LOCK` (the caller knows the writer is gone: closed, or its task manager dead) and
/// deletes it. Manifests go last, the newest after the older ones, so a deletion cut short and
/// run again still knows what to keep. Returns how many files were kept (0: no file is left).
pub async fn delete_database(
    storage: &dyn Storage,
    leave: Leave,
    after_failover: Option<&AfterFailover<'_>>,
) -> Result<usize> {
    let files = match storage.list("").await {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        listed => listed?,
    };
    let present: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let latest = match read_latest_manifest(storage).await {
        // listed but gone since, or a name that only looks like a manifest's
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        found => found?,
    };
    let given_away: Vec<String> = match &latest {
        Some((_, data)) => data
            .files
            .iter()
            .filter(|f| !f.owned && f.location.is_none())
            .map(|f| f.path.clone())
            .chain(data.released.iter().cloned())
            .collect(),
        None => present
            .iter()
            .filter(|p| p.ends_with(".sst") && !p.contains('/'))
            .map(|p| p.to_string())
            .collect(),
    };
    let aborted = |name: &str| {
        let (Some(after), Some((_, data))) = (after_failover, &latest) else {
            return false;
        };
        let first = data.hand_overs.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
        first.is_some_and(|c| c > after.restored_from) && !after.referenced.contains(name)
    };
    let kept: Vec<String> = given_away
        .into_iter()
        .filter(|name| present.contains(name.as_str()) && !aborted(name))
        .collect();
    let keep: HashSet<&str> = kept.iter().map(String::as_str).collect();
    for file in &files {
        if !is_manifest(&file.path) && !keep.contains(file.path.as_str()) {
            storage.delete(&file.path).await?;
        }
    }
    let (number, last_seq, next_file_number) = match &latest {
        Some((number, data)) => (*number, data.last_seq, data.next_file_number),
        None => (0, 0, 1),
    };
    if leave == Leave::EmptyDatabase && !kept.is_empty() {
        let hand_overs = match &latest {
            Some((_, data)) => {
                data.hand_overs.iter().filter(|(n, _)| keep.contains(n.as_str())).cloned().collect()
            }
            None => Vec::new(),
        };
        let empty = ManifestData {
            last_seq,
            next_file_number,
            released: kept.clone(),
            hand_overs,
            ..Default::default()
        };
        write_manifest(storage, number + 1, &empty).await?;
        delete_manifests_before(storage, number + 1).await?;
    } else if latest.is_some() {
        delete_manifests_before(storage, number).await?;
        delete_manifests_before(storage, number + 1).await?;
    }
    Ok(kept.len())
}
