//! [`Storage`] on a local directory through `std::fs`, without object_store's `LocalFileSystem`.
//!
//! That backend opens the file on every ranged read and runs each call on tokio's blocking pool;
//! for the engine's small page-cache reads the task switches and the pool's lock cost far more
//! than the read. Here every call runs inline in its async fn, and ranged reads are positional
//! reads on a cached open file.
//!
//! Inline is right because engine threads (JNI callers, flush and compaction threads) are not
//! runtime workers: they drive storage futures with `block_on`, so blocking in a future blocks
//! only the thread that asked for the data, and a page-cache hit takes microseconds. A multi_get
//! therefore reads its keys one after another rather than overlapped, which costs little on
//! local disk and nothing on the page cache.
//!
//! Files are written to a temp file in the destination's directory and published by rename (or
//! hard link for put-if-absent), so readers never see a partial file. Published files are never
//! written in place, which is what makes cached handles and hard-linked copies safe.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, ErrorKind, Write};
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileInfo, FileWriter, Storage, TEMP_PREFIX, WriteMode, check_relative_path};
use crate::{Error, Result};

/// Open handles kept for ranged reads. Enough for every file of a large database's hot levels,
/// well under the usual 1024 descriptor soft limit.
const HANDLE_CACHE_CAPACITY: usize = 512;

/// Reads longer than this check the file size first, so a corrupt block handle asking for
/// gigabytes fails with an error instead of aborting on the allocation.
const CHECKED_READ_BYTES: u64 = 64 << 20;

/// Retries when a directory we just created vanishes under us: deleting a directory's last file
/// removes the directory, and that can race with a write into it.
const DIR_RACE_RETRIES: usize = 16;

/// Write buffer of a [`FileWriter`]; the engine hands over blocks of a few KiB.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

#[derive(Clone)]
pub struct LocalStorage {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    url: String,
    fsync: bool,
    handles: Mutex<Handles>,
}

/// Open files by relative path. `generation` changes on every invalidation, so a handle opened
/// while its path was being replaced is used once but never cached.
#[derive(Default)]
struct Handles {
    files: HashMap<String, Arc<File>>,
    generation: u64,
}

impl fmt::Debug for LocalStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalStorage")
            .field("url", &self.inner.url)
            .field("fsync", &self.inner.fsync)
            .finish_non_exhaustive()
    }
}

impl LocalStorage {
    /// Storage rooted at the absolute directory `root`, created if missing. `fsync` makes every
    /// publish durable (file data, then the directory entry); off only for throwaway benchmarks.
    pub fn new(root: impl AsRef<Path>, fsync: bool) -> Result<Self> {
        let storage = Self::existing(root, fsync)?;
        let (root, url) = (&storage.inner.root, &storage.inner.url);
        std::fs::create_dir_all(root)
            .map_err(|e| Error::from_io(url, "cannot create directory", e))?;
        Ok(storage)
    }

    /// Storage rooted at the absolute directory `root`, which is not created: reads of a missing
    /// directory fail as reads of missing files do.
    pub fn existing(root: impl AsRef<Path>, fsync: bool) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        let url = format!("file://{}", root.display()).trim_end_matches('/').to_string();
        if !root.is_absolute() {
            return Err(Error::invalid(format!(
                "local storage root {} is not an absolute path",
                root.display()
            )));
        }
        Ok(Self { inner: Arc::new(Inner { root, url, fsync, handles: Mutex::default() }) })
    }

    /// The directory relative paths hang off.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }
}

impl Inner {
    fn full_url(&self, rel: &str) -> String {
        if rel.is_empty() { self.url.clone() } else { format!("{}/{rel}", self.url) }
    }

    /// Checks a relative path and returns it normalized (no leading or trailing '/') with its
    /// place on disk. Rejects anything that could leave the root or hit a temp file.
    fn location(&self, path: &str, allow_root: bool) -> Result<(String, PathBuf)> {
        let rel = check_relative_path(path, allow_root, &[], || self.full_url(path))?;
        Ok((rel.to_string(), self.root.join(rel)))
    }

    fn map_err(&self, rel: &str, what: &str, err: io::Error) -> Error {
        Error::from_io(self.full_url(rel), what, err)
    }

    /// The open file at `rel` (checked relative path), opened on a miss.
    fn cached_handle(&self, rel: &str) -> Result<Arc<File>> {
        let generation = {
            let handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(file) = handles.files.get(rel) {
                return Ok(file.clone());
            }
            handles.generation
        };
        // Opened outside the lock: an open is a syscall, the lock guards every read.
        let file = Arc::new(
            File::open(self.root.join(rel)).map_err(|e| self.map_err(rel, "cannot open", e))?,
        );
        let evicted = {
            let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
            if handles.generation != generation {
                // The path was deleted or replaced meanwhile; this handle may be the old file.
                return Ok(file);
            }
            let mut evicted = None;
            if handles.files.len() >= HANDLE_CACHE_CAPACITY && !handles.files.contains_key(rel) {
                // Any victim will do: files are opened again on demand, and an LRU would need
                // a write on every hit.
                if let Some(victim) = handles.files.keys().next().cloned() {
                    evicted = handles.files.remove(&victim);
                }
            }
            handles.files.insert(rel.to_string(), file.clone());
            evicted
        };
        // Closed outside the lock (readers still holding it keep it open).
        drop(evicted);
        Ok(file)
    }

    /// Forgets the open handle of a path whose file was deleted or replaced.
    fn invalidate(&self, rel: &str) {
        let removed = {
            let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
            handles.generation += 1;
            handles.files.remove(rel)
        };
        drop(removed);
    }

    /// Creates `dir` and its missing ancestors; with fsync, also makes each new directory's
    /// entry durable in its parent.
    fn create_dirs(&self, dir: &Path) -> io::Result<()> {
        if !self.fsync {
            return std::fs::create_dir_all(dir);
        }
        let mut missing = Vec::new();
        let mut d = dir;
        while !d.exists() {
            missing.push(d);
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
        std::fs::create_dir_all(dir)?;
        for d in missing.iter().rev() {
            if let Some(parent) = d.parent() {
                sync_dir(parent)?;
            }
        }
        Ok(())
    }

    /// Runs `op`; if it fails with NotFound while `source` (if any) exists, creates the parent
    /// directory of `dest` and tries again. Returns NotFound only for a missing source.
    fn with_parent_dir<T>(
        &self,
        source: Option<&Path>,
        dest: &Path,
        mut op: impl FnMut() -> io::Result<T>,
    ) -> io::Result<T> {
        let mut attempt = 0;
        loop {
            match op() {
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < DIR_RACE_RETRIES => {
                    if source.is_some_and(|s| std::fs::symlink_metadata(s).is_err()) {
                        return Err(e);
                    }
                    let parent = dest.parent().unwrap_or(&self.root);
                    self.create_dirs(parent)?;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// A new, empty temp file beside `dest` (same directory, so publishing is a rename).
    fn create_temp(&self, dest: &Path) -> io::Result<(File, PathBuf)> {
        self.with_parent_dir(None, dest, || {
            loop {
                let tmp = temp_path(dest);
                match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                    Ok(file) => return Ok((file, tmp)),
                    // Left by a crashed process with a recycled pid: take the next name.
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e),
                }
            }
        })
    }

    /// Makes a complete temp file visible at `dest`; removes the temp file on failure.
    fn publish(
        &self,
        file: File,
        tmp: &Path,
        rel: &str,
        dest: &Path,
        mode: WriteMode,
    ) -> Result<()> {
        let result = self.publish_inner(file, tmp, dest, mode);
        if result.is_err() {
            let _ = std::fs::remove_file(tmp);
        }
        // Overwrite replaced the inode; CreateNew may have succeeded before a failing dir sync.
        self.invalidate(rel);
        result.map_err(|e| match e {
            PublishError::Exists => Error::storage(
                crate::ErrorKind::AlreadyExists,
                self.full_url(rel),
                "file already exists",
                None,
            ),
            PublishError::Io(what, e) => Error::from_io(self.full_url(rel), what, e),
        })
    }

    fn publish_inner(
        &self,
        file: File,
        tmp: &Path,
        dest: &Path,
        mode: WriteMode,
    ) -> std::result::Result<(), PublishError> {
        if self.fsync {
            file.sync_all().map_err(|e| PublishError::Io("cannot sync", e))?;
        }
        drop(file);
        match mode {
            WriteMode::Overwrite => {
                std::fs::rename(tmp, dest).map_err(|e| PublishError::Io("cannot rename", e))?
            }
            WriteMode::CreateNew => {
                // link(2) fails with EEXIST if `dest` exists: an atomic put-if-absent.
                match std::fs::hard_link(tmp, dest) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                        return Err(PublishError::Exists);
                    }
                    Err(e) => return Err(PublishError::Io("cannot link", e)),
                }
                // The file is published; a leftover temp file would only be skipped junk.
                let _ = std::fs::remove_file(tmp);
            }
        }
        if self.fsync {
            sync_dir(dest.parent().unwrap_or(&self.root))
                .map_err(|e| PublishError::Io("cannot sync directory", e))?;
        }
        Ok(())
    }

    /// After a delete or rename: removes the file's directories that are now empty, up to the
    /// root, so deleting a directory's last file removes it as on an object store.
    fn remove_empty_dirs(&self, abs: &Path) {
        let mut dir = abs.parent();
        while let Some(d) = dir {
            if d == self.root || !d.starts_with(&self.root) || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    fn list_into(&self, dir: &Path, rel: &str, out: &mut Vec<FileInfo>) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            // Missing (or deleted while we listed): nothing under it.
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(());
            }
            Err(e) => return Err(self.map_err(rel, "cannot list", e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| self.map_err(rel, "cannot list", e))?;
            let name = entry.file_name();
            // Not ours: the engine only writes UTF-8 names.
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(TEMP_PREFIX) {
                continue;
            }
            let child = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
            // Follows symlinks, like LocalFileSystem; entries that vanish mid-listing are skipped.
            let meta = match std::fs::metadata(entry.path()) {
                Ok(meta) => meta,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(self.map_err(&child, "cannot stat", e)),
            };
            if meta.is_dir() {
                self.list_into(&entry.path(), &child, out)?;
            } else if meta.is_file() {
                out.push(FileInfo { path: child, size: meta.len() });
            }
        }
        Ok(())
    }

    /// Hard-links `from` beside `to` under a temp name, falling back to copying the bytes.
    /// Linking shares the inode, which is safe because published files are never modified.
    fn link_or_copy_to_temp(&self, from: &Path, to: &Path) -> io::Result<(PathBuf, bool)> {
        self.with_parent_dir(Some(from), to, || {
            loop {
                let tmp = temp_path(to);
                match std::fs::hard_link(from, &tmp) {
                    Ok(()) => return Ok((tmp, false)),
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                    Err(e) if e.kind() == ErrorKind::NotFound => return Err(e),
                    // Another device, or a file system without hard links.
                    Err(_) => {
                        let (_, tmp) = self.create_temp(to)?;
                        if let Err(e) = std::fs::copy(from, &tmp) {
                            let _ = std::fs::remove_file(&tmp);
                            return Err(e);
                        }
                        return Ok((tmp, true));
                    }
                }
            }
        })
    }
}

enum PublishError {
    Exists,
    Io(&'static str, io::Error),
}

/// `.tmp-<pid>-<n>-<name>` beside `dest`: unique within the process by the counter and across
/// processes by the pid; `create_new` catches whatever a crashed process left behind.
fn temp_path(dest: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = dest.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    dest.with_file_name(format!("{TEMP_PREFIX}{}-{n}-{name}", std::process::id()))
}

/// Whether two paths are links to one inode (both must exist).
fn same_inode(a: &Path, b: &Path) -> bool {
    match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Makes a directory's entries (new, renamed or removed files) durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[async_trait]
impl Storage for LocalStorage {
    fn url(&self) -> &str {
        &self.inner.url
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let s = &self.inner;
        let (rel, dest) = s.location(path, false)?;
        let (file, tmp) = s
            .create_temp(&dest)
            .map_err(|e| Error::from_io(s.full_url(&rel), "cannot create temp file", e))?;
        Ok(Box::new(LocalWriter {
            storage: self.inner.clone(),
            file: Some(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file)),
            tmp,
            rel,
            dest,
            len: 0,
        }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let s = &self.inner;
        let (rel, dest) = s.location(path, false)?;
        let (mut file, tmp) = s
            .create_temp(&dest)
            .map_err(|e| Error::from_io(s.full_url(&rel), "cannot create temp file", e))?;
        if let Err(e) = file.write_all(&data) {
            drop(file);
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::from_io(s.full_url(&rel), "cannot write", e));
        }
        s.publish(file, &tmp, &rel, &dest, mode)
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let s = &self.inner;
        // The path is checked as `location` does, without its two allocations: a cached handle
        // needs neither (this runs once per block read).
        let rel = check_relative_path(path, false, &[], || s.full_url(path))?;
        if range.start > range.end {
            return Err(Error::invalid(format!(
                "reversed range {range:?} for {}",
                s.full_url(rel)
            )));
        }
        // Runs inline, no spawn_blocking: see the module comment.
        let file = s.cached_handle(rel)?;
        let want = range.end - range.start;
        let past_end = |size: u64| {
            Error::io(
                s.full_url(rel),
                format!("read of {range:?} past end of file of {size} bytes"),
            )
        };
        let file_size =
            || file.metadata().map(|m| m.len()).map_err(|e| s.map_err(rel, "cannot stat", e));
        // Empty reads never touch the file, and huge ones must not allocate blindly.
        if want == 0 || want > CHECKED_READ_BYTES {
            let size = file_size()?;
            if range.end > size {
                return Err(past_end(size));
            }
        }
        let len = usize::try_from(want)
            .map_err(|_| Error::invalid(format!("range {range:?} too large")))?;
        let mut buf = vec![0u8; len];
        match file.read_exact_at(&mut buf, range.start) {
            Ok(()) => Ok(Bytes::from(buf)),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Err(past_end(file_size()?)),
            Err(e) => Err(s.map_err(rel, "cannot read", e)),
        }
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let s = &self.inner;
        let (rel, abs) = s.location(path, false)?;
        std::fs::read(&abs).map(Bytes::from).map_err(|e| s.map_err(&rel, "cannot read", e))
    }

    async fn size(&self, path: &str) -> Result<u64> {
        let s = &self.inner;
        let (rel, abs) = s.location(path, false)?;
        let meta = std::fs::metadata(&abs).map_err(|e| s.map_err(&rel, "cannot stat", e))?;
        if !meta.is_file() {
            // A directory is not a file here, as on an object store.
            return Err(Error::NotFound(s.full_url(&rel)));
        }
        Ok(meta.len())
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        let s = &self.inner;
        let (rel, abs) = s.location(dir, true)?;
        let mut files = Vec::new();
        s.list_into(&abs, &rel, &mut files)?;
        Ok(files)
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let s = &self.inner;
        let (rel, abs) = s.location(path, false)?;
        let result = std::fs::remove_file(&abs);
        s.invalidate(&rel);
        match result {
            Ok(()) => {
                s.remove_empty_dirs(&abs);
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(s.map_err(&rel, "cannot delete", e)),
        }
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let s = &self.inner;
        let (from_rel, from_abs) = s.location(from, false)?;
        let (to_rel, to_abs) = s.location(to, false)?;
        if from_rel == to_rel {
            return std::fs::metadata(&from_abs)
                .map(|_| ())
                .map_err(|e| s.map_err(&from_rel, "cannot stat", e));
        }
        let result = if same_inode(&from_abs, &to_abs) {
            // rename(2) between two links of one inode (say a file and its copy) does nothing
            // and leaves `from`; the outcome wanted is `to` alone, which it already is.
            std::fs::remove_file(&from_abs)
        } else {
            s.with_parent_dir(Some(&from_abs), &to_abs, || std::fs::rename(&from_abs, &to_abs))
        };
        s.invalidate(&from_rel);
        s.invalidate(&to_rel);
        result.map_err(|e| s.rename_err("rename", &from_rel, &to_rel, e))?;
        if s.fsync {
            let to_dir = to_abs.parent().unwrap_or(&s.root);
            let from_dir = from_abs.parent().unwrap_or(&s.root);
            sync_dir(to_dir)
                .and_then(|()| if from_dir != to_dir { sync_dir(from_dir) } else { Ok(()) })
                .map_err(|e| s.rename_err("rename", &from_rel, &to_rel, e))?;
        }
        s.remove_empty_dirs(&from_abs);
        Ok(())
    }

    fn locate(&self, path: &str) -> Option<super::Location> {
        let (_, abs) = self.inner.location(path, false).ok()?;
        Some(super::Location::LocalFile(abs))
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let s = &self.inner;
        let (from_rel, from_abs) = s.location(from, false)?;
        let (to_rel, to_abs) = s.location(to, false)?;
        let (tmp, copied) = s
            .link_or_copy_to_temp(&from_abs, &to_abs)
            .map_err(|e| s.rename_err("copy", &from_rel, &to_rel, e))?;
        let mut result = Ok(());
        if copied && s.fsync {
            // A link shares data that is already durable; a copy has fresh data to sync.
            result = File::open(&tmp).and_then(|f| f.sync_all());
        }
        result = result.and_then(|()| std::fs::rename(&tmp, &to_abs));
        s.invalidate(&to_rel);
        // Also after success: renaming onto another link of the same inode (copying a file onto
        // itself or onto an earlier copy) is a no-op that leaves the temp name behind.
        let _ = std::fs::remove_file(&tmp);
        result.map_err(|e| s.rename_err("copy", &from_rel, &to_rel, e))?;
        if s.fsync {
            sync_dir(to_abs.parent().unwrap_or(&s.root))
                .map_err(|e| s.rename_err("copy", &from_rel, &to_rel, e))?;
        }
        Ok(())
    }
}

impl Inner {
    /// Names both ends; a missing source is NotFound naming `from`.
    fn rename_err(&self, op: &str, from: &str, to: &str, err: io::Error) -> Error {
        Error::from_io(self.full_url(from), format!("{op} to {}", self.full_url(to)), err)
    }
}

struct LocalWriter {
    storage: Arc<Inner>,
    /// None once finished or aborted.
    file: Option<BufWriter<File>>,
    tmp: PathBuf,
    rel: String,
    dest: PathBuf,
    len: u64,
}

impl LocalWriter {
    fn err(&self, what: &str, e: io::Error) -> Error {
        Error::from_io(self.storage.full_url(&self.rel), what, e)
    }

    fn misuse(&self, what: &str) -> Error {
        Error::io(self.storage.full_url(&self.rel), format!("{what} after finish or abort"))
    }
}

#[async_trait]
impl FileWriter for LocalWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(self.misuse("write"));
        };
        let written = file.write_all(&data);
        written.map_err(|e| self.err("cannot write", e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn held_bytes(&mut self) -> u64 {
        self.file.as_ref().map_or(0, |file| file.capacity() as u64)
    }

    async fn finish(mut self: Box<Self>) -> Result<u64> {
        let Some(file) = self.file.take() else {
            return Err(self.misuse("finish"));
        };
        let file = match file.into_inner() {
            Ok(file) => file,
            Err(e) => {
                let (error, writer) = e.into_parts();
                // into_parts: dropping the BufWriter would retry the failed write.
                drop(writer.into_parts());
                let _ = std::fs::remove_file(&self.tmp);
                return Err(self.err("cannot write", error));
            }
        };
        // Like the object-store writer, finish replaces any file already at the path.
        self.storage.publish(file, &self.tmp, &self.rel, &self.dest, WriteMode::Overwrite)?;
        Ok(self.len)
    }

    async fn abort(mut self: Box<Self>) -> Result<()> {
        if self.file.take().is_some() {
            match std::fs::remove_file(&self.tmp) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(self.err("cannot remove temp file", e)),
            }
        }
        Ok(())
    }
}

impl Drop for LocalWriter {
    fn drop(&mut self) {
        // Dropped unfinished (error path, panic): nothing was published; remove the temp file.
        // Its buffered tail is discarded without a write, since the file is going anyway.
        if let Some(file) = self.file.take() {
            let (file, _unwritten) = file.into_parts();
            drop(file);
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::block_on;

    fn storage() -> (tempfile::TempDir, LocalStorage) {
        let dir = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(dir.path().join("db"), false).unwrap();
        (dir, storage)
    }

    fn cached(s: &LocalStorage) -> usize {
        s.inner.handles.lock().unwrap().files.len()
    }

    #[test]
    fn handle_cache_is_bounded() {
        let (_dir, s) = storage();
        block_on(async {
            for i in 0..HANDLE_CACHE_CAPACITY + 20 {
                let path = format!("f{i}");
                s.put(&path, Bytes::from(vec![i as u8; 4]), WriteMode::CreateNew).await.unwrap();
                assert_eq!(s.read_range(&path, 1..3).await.unwrap(), vec![i as u8; 2]);
            }
        });
        assert_eq!(cached(&s), HANDLE_CACHE_CAPACITY);
    }

    #[test]
    fn cached_handles_follow_overwrite_rename_and_delete() {
        let (_dir, s) = storage();
        block_on(async {
            s.put("a", Bytes::from_static(b"one"), WriteMode::Overwrite).await.unwrap();
            assert_eq!(s.read_range("a", 0..3).await.unwrap(), "one");
            s.put("a", Bytes::from_static(b"two"), WriteMode::Overwrite).await.unwrap();
            assert_eq!(s.read_range("a", 0..3).await.unwrap(), "two");

            let mut w = s.create("a").await.unwrap();
            w.write(Bytes::from_static(b"six")).await.unwrap();
            w.finish().await.unwrap();
            assert_eq!(s.read_range("a", 0..3).await.unwrap(), "six");

            s.put("b", Bytes::from_static(b"bbb"), WriteMode::Overwrite).await.unwrap();
            assert_eq!(s.read_range("b", 0..3).await.unwrap(), "bbb");
            s.rename("a", "b").await.unwrap();
            assert_eq!(s.read_range("b", 0..3).await.unwrap(), "six");
            assert!(matches!(s.read_range("a", 0..3).await, Err(Error::NotFound(_))));

            s.put("c", Bytes::from_static(b"ccc"), WriteMode::Overwrite).await.unwrap();
            assert_eq!(s.read_range("c", 0..3).await.unwrap(), "ccc");
            s.copy("b", "c").await.unwrap();
            assert_eq!(s.read_range("c", 0..3).await.unwrap(), "six");

            s.delete("c").await.unwrap();
            assert!(matches!(s.read_range("c", 0..3).await, Err(Error::NotFound(_))));
        });
    }
}
