//! Foreground retries of transient storage errors (a timeout, a refused connection, a 5xx), with
//! a doubling backoff, for the requests that may safely run twice: reads, sizes, lists, deletes,
//! server-side copies and overwriting puts. Creating, renaming, put-if-absent and streamed writes
//! are not retried here (a repeat could see its own first effect); their callers' background
//! retries (`lsm::retry`) start them over from the beginning. Permanent errors pass at once.
//!
//! `open_storage` puts it over the Flink file-system proxy. The S3 store is not wrapped: its
//! client (object_store) retries these failures itself, with the server's own hints.

use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileInfo, FileWriter, Location, Storage, StorageRef, Transfer, WriteMode};
use crate::{ErrorKind, Result};

/// Retries after the first failure, and the first wait (doubled after each retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub retries: u32,
    pub first_backoff: Duration,
}

impl Default for RetryPolicy {
    /// About 1.5 s of waiting in all: longer than a connection hiccup, shorter than a failover.
    fn default() -> Self {
        Self { retries: 4, first_backoff: Duration::from_millis(100) }
    }
}

#[derive(Debug)]
pub struct RetryingStorage {
    inner: StorageRef,
    policy: RetryPolicy,
}

impl RetryingStorage {
    pub fn new(inner: StorageRef, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    /// Runs `call` (a request of kind `op`, for the log) until it succeeds, fails for good or
    /// outlasts the retries. Each retry is a WARN line (the engine names the database around it).
    async fn retry<T, F, Fut>(&self, op: &str, mut call: F) -> Result<T>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut backoff = self.policy.first_backoff;
        let mut attempt = 0;
        loop {
            match call(attempt).await {
                Err(e) if e.is_transient() && attempt < self.policy.retries => {
                    // The error names the file.
                    let (retry, retries) = (attempt + 1, self.policy.retries);
                    tracing::warn!("retrying {op} ({retry}/{retries}) in {backoff:?} after: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = backoff.saturating_mul(2);
                    attempt += 1;
                }
                result => return result,
            }
        }
    }
}

#[async_trait]
impl Storage for RetryingStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        self.inner.create(path).await
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        match mode {
            WriteMode::Overwrite => {
                self.retry("PUT", |_| self.inner.put(path, data.clone(), mode)).await
            }
            WriteMode::CreateNew => self.inner.put(path, data, mode).await,
        }
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.retry("GET", |_| self.inner.read_range(path, range.clone())).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.retry("GET", |_| self.inner.read(path)).await
    }

    async fn size(&self, path: &str) -> Result<u64> {
        self.retry("HEAD", |_| self.inner.size(path)).await
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        self.retry("LIST", |_| self.inner.list(dir)).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.retry("DELETE", |attempt| async move {
            match self.inner.delete(path).await {
                // The failed attempt before may have deleted it after all.
                Err(e) if attempt > 0 && e.kind() == ErrorKind::NotFound => Ok(()),
                result => result,
            }
        })
        .await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.retry("COPY", |_| self.inner.copy(from, to)).await
    }

    fn locate(&self, path: &str) -> Option<Location> {
        self.inner.locate(path)
    }

    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<Transfer> {
        self.inner.copy_in(src, from, to).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::storage::{FaultStorage, OpKind, StorageOptions, block_on, open_storage};

    fn storages(name: &str) -> (Arc<FaultStorage>, RetryingStorage) {
        let memory =
            open_storage(&format!("memory://retrying-{name}"), &StorageOptions::default()).unwrap();
        let faults = Arc::new(FaultStorage::new(memory));
        let policy = RetryPolicy { retries: 3, first_backoff: Duration::from_millis(1) };
        (faults.clone(), RetryingStorage::new(faults, policy))
    }

    #[test]
    fn transient_failures_of_safe_requests_are_retried() {
        let (faults, storage) = storages("transient");
        block_on(async {
            storage.put("f", Bytes::from_static(b"data"), WriteMode::Overwrite).await.unwrap();
            faults.fail_nth(OpKind::Read, 1);
            assert_eq!(storage.read_range("f", 1..3).await.unwrap(), Bytes::from_static(b"at"));
            faults.clear();
            faults.fail_nth(OpKind::Delete, 1);
            storage.delete("f").await.unwrap();
            assert!(storage.size("f").await.is_err());
        });
        assert_eq!(faults.calls(OpKind::Read), 2, "the failure, then the read");
        assert_eq!(faults.calls(OpKind::Delete), 2);
        assert_eq!(faults.injected(), 2);
    }

    #[test]
    fn permanent_failures_and_unsafe_requests_are_not_retried() {
        let (faults, storage) = storages("permanent");
        block_on(async {
            storage.put("f", Bytes::from_static(b"data"), WriteMode::Overwrite).await.unwrap();
            faults.fail_as(ErrorKind::Corruption);
            faults.fail_nth(OpKind::Read, 1);
            let error = storage.read("f").await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Corruption);
            faults.clear();
            faults.fail_as(ErrorKind::Transient);
            faults.fail_nth(OpKind::Rename, 1);
            assert!(storage.rename("f", "g").await.unwrap_err().is_transient());
        });
        assert_eq!(faults.calls(OpKind::Read), 1);
        assert_eq!(faults.calls(OpKind::Rename), 1);
    }

    #[test]
    fn retries_are_bounded() {
        let (faults, storage) = storages("bounded");
        faults.fail_always(OpKind::List);
        let error = block_on(storage.list("")).unwrap_err();
        assert!(error.is_transient());
        assert_eq!(faults.calls(OpKind::List), 4, "the first call and three retries");
    }
}
