//! One writer per database directory. Open claims the directory by creating `LOCK` with
//! put-if-absent (an atomic create on every storage: `O_EXCL` locally, a conditional put on S3,
//! create-without-overwrite on HDFS), before it reads the manifest or collects orphans, so a
//! second opener fails at open, naming the holder, instead of colliding with the first on a later
//! manifest or deleting its files in flight. Close releases it. A writer that died keeps its claim
//! until its directory is deleted (`delete_database`, which Flink's backend runs before it reuses
//! a directory) or `LOCK` is removed by hand.

use bytes::Bytes;

use crate::storage::{Storage, WriteMode};
use crate::{Error, ErrorKind, Result};

const LOCK: &str = "LOCK";

/// Claims the directory for the writer `session`.
pub async fn acquire(storage: &dyn Storage, session: u64) -> Result<()> {
    let claim = Bytes::from(format!("{session:016x}"));
    match storage.put(LOCK, claim, WriteMode::CreateNew).await {
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let holder = match storage.read(LOCK).await {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(_) => "unknown".to_string(),
            };
            Err(Error::storage(
                ErrorKind::AlreadyExists,
                format!("{}/{LOCK}", storage.url()),
                format!(
                    "the database is already open for writing (by session {holder}); a second \
                     writer is refused. If that writer died, delete the directory or its {LOCK}"
                ),
                None,
            ))
        }
        other => other,
    }
}

/// Gives the directory up (on close).
pub async fn release(storage: &dyn Storage) {
    if let Err(e) = storage.delete(LOCK).await {
        tracing::warn!("cannot release {}/{LOCK}: {e}", storage.url());
    }
}
