//! [`Storage`] over any `object_store` backend (local disk, memory, S3). The root prefix is kept
//! here rather than in a `PrefixStore` so that error messages can name the full URL of a file.

use std::error::Error as StdError;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::part_uploads::PartUploads;
use super::{FileInfo, FileWriter, Storage, WriteMode};
use crate::{Error, ErrorKind, Result};

/// Files smaller than this go up in one `put`; larger ones as a multipart upload in parts of this
/// size. 8 MiB is above S3's 5 MiB minimum part and keeps at most a few parts buffered per file.
pub const MULTIPART_PART_SIZE: usize = 8 * 1024 * 1024;

/// Part uploads in flight per file: a large file holds at most this many parts and the one
/// filling (24 MiB), all charged to the memory budget while it uploads.
pub const MAX_PARTS_IN_FLIGHT: usize = 2;

#[derive(Debug, Clone)]
pub struct ObjectStoreStorage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    url: String,
    physical: Physical,
    multipart: Multipart,
}

/// How files past one part go up (see [`ObjectStoreStorage::with_multipart`]).
#[derive(Debug, Clone, Copy)]
struct Multipart {
    part_size: usize,
    parts_in_flight: usize,
}

/// What `locate` can say about this store's files.
#[derive(Debug, Clone)]
enum Physical {
    Unknown,
    /// Storages with equal ids reach the same objects (same bucket on the same endpoint).
    Shared(String),
    /// object_store's local file system rooted at this directory.
    LocalDir(std::path::PathBuf),
}

impl ObjectStoreStorage {
    /// `root` is the prefix inside `store` that relative paths hang off ("" for the store root);
    /// `url` names that root in messages.
    pub fn new(store: Arc<dyn ObjectStore>, root: &str, url: impl Into<String>) -> Result<Self> {
        let url = url.into();
        let root = Path::parse(root)
            .map_err(|e| Error::invalid(format!("bad root prefix {root:?} for {url}: {e}")))?;
        let url = url.trim_end_matches('/').to_string();
        let multipart =
            Multipart { part_size: MULTIPART_PART_SIZE, parts_in_flight: MAX_PARTS_IN_FLIGHT };
        Ok(Self { store, root, url, physical: Physical::Unknown, multipart })
    }

    /// Files from `part_size` bytes on go up as multipart uploads in parts of that size, at most
    /// `parts_in_flight` parts of a file uploading at once (both at least 1; S3 wants parts of
    /// at least 5 MiB).
    pub fn with_multipart(mut self, part_size: usize, parts_in_flight: usize) -> Self {
        self.multipart =
            Multipart { part_size: part_size.max(1), parts_in_flight: parts_in_flight.max(1) };
        self
    }

    /// Declares that every storage built with the same `store_id` reaches the same objects, so
    /// copies between them can be server-side.
    pub fn with_store_id(mut self, store_id: impl Into<String>) -> Self {
        self.physical = Physical::Shared(store_id.into());
        self
    }

    /// Declares that the store is object_store's local file system rooted at `dir` (the root
    /// prefix must be empty), so copies to other local storages can be hard links.
    pub fn with_local_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.physical = Physical::LocalDir(dir.into());
        self
    }

    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The prefix inside the object store that paths are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn full_url(&self, path: &str) -> String {
        if path.is_empty() {
            self.url.clone()
        } else {
            format!("{}/{}", self.url, path.trim_start_matches('/'))
        }
    }

    fn location(&self, path: &str) -> Result<Path> {
        let rel = Path::parse(path)
            .map_err(|e| Error::invalid(format!("bad path {}: {e}", self.full_url(path))))?;
        Ok(self.root.parts().chain(rel.parts()).collect())
    }

    fn map_err(&self, path: &str, what: &str, err: object_store::Error) -> Error {
        map_store_error(self.full_url(path), what, err)
    }
}

/// The error of a store call `what` on `url`, with its kind (see [`store_error_kind`]); the store's
/// error stays the source, so its whole chain reaches the message.
pub(super) fn map_store_error(url: String, what: &str, err: object_store::Error) -> Error {
    let kind = store_error_kind(&err);
    Error::storage(kind, url, what, Some(Arc::new(err)))
}

fn store_error_kind(err: &object_store::Error) -> ErrorKind {
    use object_store::Error as E;
    match err {
        E::NotFound { .. } => ErrorKind::NotFound,
        E::AlreadyExists { .. } | E::Precondition { .. } => ErrorKind::AlreadyExists,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => ErrorKind::PermissionDenied,
        E::InvalidPath { .. }
        | E::NotSupported { .. }
        | E::NotImplemented { .. }
        | E::UnknownConfigurationKey { .. } => ErrorKind::InvalidArgument,
        _ if transient_in_chain(err) || server_busy(&err.to_string()) => ErrorKind::Transient,
        _ => ErrorKind::Other,
    }
}

/// A connection, request or timeout failure of the HTTP client, or an OS error that retrying can
/// fix, anywhere in the chain (object_store wraps them several levels deep).
fn transient_in_chain(err: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut next: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(error) = next {
        if let Some(http) = error.downcast_ref::<HttpError>() {
            return matches!(
                http.kind(),
                HttpErrorKind::Connect
                    | HttpErrorKind::Request
                    | HttpErrorKind::Timeout
                    | HttpErrorKind::Interrupted
            );
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return ErrorKind::of_io(io.kind()) == ErrorKind::Transient;
        }
        next = error.source();
    }
    false
}

/// A 5xx or 429 answer. object_store keeps the status only in the text of its (private) retry
/// error: "Server returned non-2xx status code: 503 Service Unavailable: ...".
fn server_busy(text: &str) -> bool {
    const MARK: &str = "status code: ";
    let Some(at) = text.find(MARK) else { return false };
    let status = &text[at + MARK.len()..];
    status.starts_with('5') || status.starts_with("429")
}

#[async_trait]
impl Storage for ObjectStoreStorage {
    fn url(&self) -> &str {
        &self.url
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        Ok(Box::new(ObjectStoreWriter {
            store: self.store.clone(),
            location: self.location(path)?,
            url: self.full_url(path),
            state: WriterState::Buffering(Vec::new()),
            len: 0,
            multipart: self.multipart,
        }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let location = self.location(path)?;
        let opts = PutOptions::from(match mode {
            WriteMode::Overwrite => PutMode::Overwrite,
            WriteMode::CreateNew => PutMode::Create,
        });
        match self.store.put_opts(&location, data.into(), opts).await {
            Ok(_) => Ok(()),
            Err(e) => Err(self.map_err(path, "put", e)),
        }
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        if range.start > range.end {
            return Err(Error::invalid(format!(
                "reversed range {range:?} for {}",
                self.full_url(path)
            )));
        }
        let location = self.location(path)?;
        if range.start == range.end {
            // Stores reject empty HTTP ranges; still report a missing file or an offset past EOF.
            let size = self.size(path).await?;
            if range.start > size {
                return Err(Error::io(
                    self.full_url(path),
                    format!("read at {} past end of file of {size} bytes", range.start),
                ));
            }
            return Ok(Bytes::new());
        }
        let want = range.end - range.start;
        let data = self
            .store
            .get_range(&location, range.clone())
            .await
            .map_err(|e| self.map_err(path, "read range", e))?;
        // Stores clamp a range that runs past EOF instead of failing.
        if data.len() as u64 != want {
            return Err(Error::io(
                self.full_url(path),
                format!(
                    "short read: asked for {want} bytes at {range:?}, got {} (file shorter than range)",
                    data.len()
                ),
            ));
        }
        Ok(data)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let location = self.location(path)?;
        let result = self.store.get(&location).await.map_err(|e| self.map_err(path, "get", e))?;
        result.bytes().await.map_err(|e| self.map_err(path, "get", e))
    }

    async fn size(&self, path: &str) -> Result<u64> {
        let location = self.location(path)?;
        let meta = self.store.head(&location).await.map_err(|e| self.map_err(path, "head", e))?;
        Ok(meta.size)
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        let prefix = self.location(dir)?;
        let prefix = (!prefix.is_root()).then_some(prefix);
        let metas: Vec<_> = self
            .store
            .list(prefix.as_ref())
            .try_collect()
            .await
            .map_err(|e| self.map_err(dir, "list", e))?;
        let mut files = Vec::with_capacity(metas.len());
        for meta in metas {
            // Anything outside our root would be a store bug; skip rather than return junk paths.
            let Some(rel) = meta.location.prefix_match(&self.root) else {
                continue;
            };
            let rel: Vec<_> = rel.map(|p| p.as_ref().to_string()).collect();
            files.push(FileInfo { path: rel.join("/"), size: meta.size });
        }
        Ok(files)
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let location = self.location(path)?;
        match self.store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.map_err(path, "delete", e)),
        }
    }

    /// Lists the raw prefix (also objects `list` would not name) and deletes in bulk: one
    /// request per 1000 objects on S3.
    async fn delete_all(&self) -> Result<u64> {
        let prefix = (!self.root.is_root()).then_some(&self.root);
        let locations = self.store.list(prefix).map_ok(|meta| meta.location).boxed();
        self.store
            .delete_stream(locations)
            .try_fold(0u64, |deleted, _| async move { Ok(deleted + 1) })
            .await
            .map_err(|e| self.map_err("", "delete everything under", e))
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let src = self.location(from)?;
        let dst = self.location(to)?;
        self.store.rename(&src, &dst).await.map_err(|e| self.rename_err("rename", from, to, e))
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let src = self.location(from)?;
        let dst = self.location(to)?;
        self.store.copy(&src, &dst).await.map_err(|e| self.rename_err("copy", from, to, e))
    }

    fn locate(&self, path: &str) -> Option<super::Location> {
        match &self.physical {
            Physical::Unknown => None,
            Physical::Shared(id) => Some(super::Location::Object {
                store: self.store.clone(),
                store_id: id.clone(),
                path: self.location(path).ok()?,
            }),
            Physical::LocalDir(dir) => {
                let rel = self.location(path).ok()?;
                Some(super::Location::LocalFile(dir.join(rel.as_ref())))
            }
        }
    }
}

impl ObjectStoreStorage {
    /// Names both ends; a missing source is NotFound naming `from`.
    fn rename_err(&self, op: &str, from: &str, to: &str, err: object_store::Error) -> Error {
        map_store_error(self.full_url(from), &format!("{op} to {}", self.full_url(to)), err)
    }
}

enum WriterState {
    /// Small so far: chunks held until finish, then one `put`.
    Buffering(Vec<Bytes>),
    /// Past one part: parts are uploading; nothing is visible until `complete`.
    Multipart(PartUploads),
    Done,
}

struct ObjectStoreWriter {
    store: Arc<dyn ObjectStore>,
    location: Path,
    url: String,
    state: WriterState,
    len: u64,
    multipart: Multipart,
}

impl ObjectStoreWriter {
    fn err(&self, what: &str, e: object_store::Error) -> Error {
        map_store_error(self.url.clone(), what, e)
    }
}

#[async_trait]
impl FileWriter for ObjectStoreWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.len += data.len() as u64;
        match &mut self.state {
            WriterState::Buffering(chunks) => {
                chunks.push(data);
                if self.len < self.multipart.part_size as u64 {
                    return Ok(());
                }
                let chunks = std::mem::take(chunks);
                let upload = self
                    .store
                    .put_multipart(&self.location)
                    .await
                    .map_err(|e| self.err("start upload", e))?;
                let mut multipart = PartUploads::new(upload, self.multipart.part_size);
                for chunk in chunks {
                    multipart.put(chunk);
                }
                self.state = WriterState::Multipart(multipart);
            }
            WriterState::Multipart(multipart) => multipart.put(data),
            WriterState::Done => return Err(Error::io(&self.url, "write after finish or abort")),
        }
        if let WriterState::Multipart(multipart) = &mut self.state {
            let waited = multipart.wait_for_room(self.multipart.parts_in_flight).await;
            if let Err(e) = waited {
                // A failed part poisons the upload; abort it so the store frees the parts.
                if let WriterState::Multipart(m) =
                    std::mem::replace(&mut self.state, WriterState::Done)
                {
                    let _ = m.abort().await;
                }
                return Err(self.err("upload part", e));
            }
        }
        Ok(())
    }

    fn held_bytes(&mut self) -> u64 {
        match &mut self.state {
            WriterState::Buffering(_) => self.len,
            WriterState::Multipart(multipart) => multipart.held_bytes(),
            WriterState::Done => 0,
        }
    }

    async fn finish(mut self: Box<Self>) -> Result<u64> {
        match std::mem::replace(&mut self.state, WriterState::Done) {
            WriterState::Buffering(chunks) => {
                let payload: PutPayload = chunks.into_iter().collect();
                self.store.put(&self.location, payload).await.map_err(|e| self.err("put", e))?;
            }
            WriterState::Multipart(multipart) => {
                // PartUploads::finish aborts the upload itself when a part or complete fails.
                multipart.finish().await.map_err(|e| self.err("complete upload", e))?;
            }
            WriterState::Done => return Err(Error::io(&self.url, "finish after finish or abort")),
        }
        Ok(self.len)
    }

    async fn abort(mut self: Box<Self>) -> Result<()> {
        match std::mem::replace(&mut self.state, WriterState::Done) {
            WriterState::Multipart(multipart) => {
                multipart.abort().await.map_err(|e| self.err("abort upload", e))
            }
            WriterState::Buffering(_) | WriterState::Done => Ok(()),
        }
    }
}

impl Drop for ObjectStoreWriter {
    fn drop(&mut self) {
        // Dropped mid-upload (error path, panic): nothing is visible either way, but an
        // unaborted S3 upload keeps its parts billed until a lifecycle rule removes them.
        if let WriterState::Multipart(multipart) =
            std::mem::replace(&mut self.state, WriterState::Done)
        {
            // Engine threads drop writers outside any runtime; the shared I/O runtime takes over.
            let handle = tokio::runtime::Handle::try_current()
                .unwrap_or_else(|_| super::io_runtime().handle().clone());
            handle.spawn(async move {
                let _ = multipart.abort().await;
            });
        }
    }
}
