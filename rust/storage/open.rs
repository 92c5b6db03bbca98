//! Turns a URL from the Flink configuration into a [`StorageRef`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use once_cell::sync::Lazy;

use super::{
    DiskCache, DiskCacheOptions, DiskCachedStorage, FlinkProxyStorage, LocalStorage,
    ObjectStoreStorage, RetryPolicy, RetryingStorage, S3Options, StorageRef, block_on,
};
use crate::{Error, Result};

/// Connection settings for stores that need them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageOptions {
    /// For `s3://` urls; unset fields fall back to the `AWS_*` environment.
    pub s3: S3Options,
    /// fsync files and directories on `file://` writes; off only for throwaway benchmarks.
    pub local_fsync: bool,
    /// What serves `file://` urls and plain paths.
    pub local_backend: LocalBackend,
    /// Serve every url through Flink's FileSystem (the JNI proxy), even schemes served natively;
    /// compares both on the same files, or reaches a Flink plugin's own s3:// configuration.
    pub force_proxy: bool,
    /// The local disk cache of a database's files: its directory (none: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Most bytes the disk cache may take; 0: no limit.
    pub cache_size_limit: u64,
    /// Bytes the disk cache leaves free on its disk; 0: none.
    pub cache_reserve: u64,
    /// Open without creating anything (a local directory that is missing stays missing and its
    /// reads fail): for reading checkpoints in place.
    pub read_only: bool,
}

/// Implementation behind `file://`; both kept so they can be compared on the same workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LocalBackend {
    /// [`LocalStorage`]: std::fs inline, positional reads on cached handles.
    #[default]
    Std,
    /// object_store's `LocalFileSystem` (opens per read, runs on tokio's blocking pool).
    ObjectStore,
}

impl Default for StorageOptions {
    fn default() -> Self {
        Self {
            s3: S3Options::default(),
            local_fsync: true,
            local_backend: LocalBackend::Std,
            force_proxy: false,
            cache_dir: None,
            cache_size_limit: 0,
            cache_reserve: 0,
            read_only: false,
        }
    }
}

impl StorageOptions {
    /// Sets one option from a configuration key, so the JNI layer can pass a flat string map.
    /// Keys: those of [`S3Options::set`], `local.fsync`, `local.backend` (`std` or
    /// `object_store`), `fs.force-proxy`, `cache.dir` (an absolute local path), `cache.size-limit`
    /// and `cache.reserve-size` (bytes).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let value = value.trim();
        if self.s3.set(key, value)? {
            return Ok(());
        }
        match key {
            "local.fsync" => self.local_fsync = parse_bool(key, value)?,
            "fs.force-proxy" => self.force_proxy = parse_bool(key, value)?,
            "cache.dir" => {
                let dir = PathBuf::from(value);
                if !dir.is_absolute() {
                    return Err(Error::invalid(format!(
                        "option {key} wants an absolute path, got {value:?}"
                    )));
                }
                self.cache_dir = Some(dir);
            }
            "cache.size-limit" => self.cache_size_limit = parse_bytes(key, value)?,
            "cache.reserve-size" => self.cache_reserve = parse_bytes(key, value)?,
            "local.backend" => {
                self.local_backend = match value.to_ascii_lowercase().as_str() {
                    "std" => LocalBackend::Std,
                    "object_store" | "object-store" => LocalBackend::ObjectStore,
                    _ => {
                        return Err(Error::invalid(format!(
                            "option {key} wants std or object_store, got {value:?}"
                        )));
                    }
                }
            }
            _ => return Err(Error::invalid(format!("unknown storage option {key:?}"))),
        }
        Ok(())
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut options = Self::default();
        for (key, value) in pairs {
            options.set(key, value)?;
        }
        Ok(options)
    }

    /// The disk cache to put under a database's storage: set when a directory is and at least
    /// one of the size limit and the reserve is (as Flink's ForSt needs one of them).
    pub fn disk_cache(&self) -> Option<DiskCacheOptions> {
        let dir = self.cache_dir.clone()?;
        (self.cache_size_limit > 0 || self.cache_reserve > 0).then_some(DiskCacheOptions {
            dir,
            size_limit: self.cache_size_limit,
            reserve: self.cache_reserve,
        })
    }
}

fn parse_bytes(key: &str, value: &str) -> Result<u64> {
    value
        .parse()
        .map_err(|_| Error::invalid(format!("option {key} wants a number of bytes, got {value:?}")))
}

pub(super) fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(Error::invalid(format!("option {key} wants true or false, got {value:?}"))),
    }
}

/// Opens a storage url. Served natively: `file:///abs/dir` (or a plain absolute path),
/// `memory://name[/prefix]`, `s3://bucket[/prefix]`. Every other scheme (hdfs, viewfs, oss,
/// anything Flink has a file system for) goes through Flink's FileSystem over JNI
/// ([`FlinkProxyStorage`]), and so does every url when `force_proxy` is set.
pub fn open_storage(url: &str, options: &StorageOptions) -> Result<StorageRef> {
    match route(url, options)? {
        Route::Native(url) => open_native(&url, options),
        Route::Proxy(uri) => Ok(Arc::new(RetryingStorage::new(
            Arc::new(FlinkProxyStorage::open(&uri)?),
            RetryPolicy::default(),
        ))),
    }
}

/// Opens the storage of a database's files: [`open_storage`] under the disk cache the options
/// configure, if any. For a database's own directory and for the directories of the files it is
/// restored from (it reads them in place); checkpoint targets are opened without it.
pub fn open_db_storage(url: &str, options: &StorageOptions) -> Result<StorageRef> {
    let storage = open_storage(url, options)?;
    match options.disk_cache() {
        Some(cache) => Ok(Arc::new(DiskCachedStorage::new(storage, DiskCache::open(&cache)?))),
        None => Ok(storage),
    }
}

/// Deletes the directory `url` with everything under it through the native store, if
/// [`open_storage`] serves `url` natively; `None` if Flink's FileSystem serves it, which then
/// deletes it better itself (recursively, directories included). Returns the files deleted.
pub fn delete_tree(url: &str, options: &StorageOptions) -> Result<Option<u64>> {
    match route(url, options)? {
        Route::Native(url) => Ok(Some(block_on(open_native(&url, options)?.delete_all())?)),
        Route::Proxy(_) => Ok(None),
    }
}

/// The names directly under the directory `url` (files, and directories that hold files) through
/// the native store, if [`open_storage`] serves `url` natively; `None` if Flink's FileSystem
/// serves it, which lists directories (empty ones too) itself.
pub fn list_children(url: &str, options: &StorageOptions) -> Result<Option<Vec<String>>> {
    match route(url, options)? {
        Route::Native(url) => {
            let files = block_on(open_native(&url, options)?.list(""))?;
            let mut names: Vec<String> = files
                .into_iter()
                .map(|f| f.path.split('/').next().unwrap_or_default().to_string())
                .collect();
            names.sort();
            names.dedup();
            Ok(Some(names))
        }
        Route::Proxy(_) => Ok(None),
    }
}

/// Who serves a url, with the url in the form that one takes.
enum Route {
    Native(String),
    Proxy(String),
}

fn route(url: &str, options: &StorageOptions) -> Result<Route> {
    // Flink's Path prints local files as file:/abs (no authority).
    let flink_local = url.strip_prefix("file:/").filter(|p| !p.starts_with('/'));
    let url = flink_local.map_or_else(|| url.to_string(), |path| format!("file:///{path}"));
    let bad = |why: &str| Error::invalid(format!("storage url {url:?}: {why}"));
    let scheme = if url.starts_with('/') {
        None
    } else {
        let Some((scheme, _)) = url.split_once("://") else {
            return Err(bad("expected scheme://... or an absolute path"));
        };
        if scheme.is_empty()
            || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(bad("bad scheme"));
        }
        Some(scheme.to_ascii_lowercase())
    };
    if options.force_proxy || !scheme.as_deref().is_none_or(is_native_scheme) {
        let uri = if scheme.is_none() { format!("file://{url}") } else { url };
        return Ok(Route::Proxy(uri));
    }
    Ok(Route::Native(url))
}

/// Schemes that `open_native` serves without the JVM.
fn is_native_scheme(scheme: &str) -> bool {
    matches!(scheme, "file" | "memory" | "s3" | "s3a")
}

fn open_native(url: &str, options: &StorageOptions) -> Result<StorageRef> {
    let bad = |why: &str| Error::invalid(format!("storage url {url:?}: {why}"));
    if url.starts_with('/') {
        return open_local(url, options);
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("expected scheme://... or an absolute path"));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "file" => {
            // Only local files: "file:///dir" or "file://localhost/dir".
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(bad("file urls need an absolute path (file:///dir)"));
            }
            let decoded = percent_decode(path).ok_or_else(|| bad("bad percent escape"))?;
            open_local(&decoded, options)
        }
        "memory" => {
            let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if name.is_empty() {
                return Err(bad("memory urls need a store name (memory://name)"));
            }
            let store = memory_store(name);
            let storage =
                ObjectStoreStorage::new(store, prefix, url).map_err(|e| bad(&e.to_string()))?;
            Ok(Arc::new(storage.with_store_id(format!("memory://{name}"))))
        }
        "s3" | "s3a" => {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("s3 urls need a bucket (s3://bucket/prefix)"));
            }
            let s3 = &options.s3;
            let store = Arc::new(s3.build(bucket)?);
            let storage =
                ObjectStoreStorage::new(store, prefix, url).map_err(|e| bad(&e.to_string()))?;
            Ok(Arc::new(storage.with_store_id(s3.store_id(bucket)).with_multipart(
                s3.part_size.unwrap_or(super::MULTIPART_PART_SIZE),
                s3.parts_in_flight.unwrap_or(super::MAX_PARTS_IN_FLIGHT),
            )))
        }
        _ => Err(bad(&format!("unknown scheme {scheme:?}"))),
    }
}

fn open_local(dir: &str, options: &StorageOptions) -> Result<StorageRef> {
    let dir = std::path::Path::new(dir);
    if options.read_only {
        return Ok(Arc::new(LocalStorage::existing(dir, options.local_fsync)?));
    }
    if options.local_backend == LocalBackend::Std {
        return Ok(Arc::new(LocalStorage::new(dir, options.local_fsync)?));
    }
    let url = format!("file://{}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| Error::from_io(&url, "cannot create directory", e))?;
    let store = LocalFileSystem::new_with_prefix(dir)
        .map_err(|e| super::object_store::map_store_error(url.clone(), "open", e))?
        // Deleting the last file of a directory removes the directory, as on object stores.
        .with_automatic_cleanup(true)
        .with_fsync(options.local_fsync);
    Ok(Arc::new(ObjectStoreStorage::new(Arc::new(store), "", url)?.with_local_dir(dir)))
}

/// Named in-memory stores live for the whole process so that a database reopened under the same
/// name finds its files, as it would on a real file system.
static MEMORY_STORES: Lazy<Mutex<HashMap<String, Arc<InMemory>>>> = Lazy::new(Default::default);

fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    let mut stores = MEMORY_STORES.lock().unwrap_or_else(|e| e.into_inner());
    stores.entry(name.to_string()).or_insert_with(|| Arc::new(InMemory::new())).clone()
}

/// Forgets a `memory://name` store so its memory is freed once no storage uses it.
pub fn drop_memory_store(name: &str) {
    MEMORY_STORES.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
}

/// Decodes %XX escapes in a file url path; None on a malformed escape or non-UTF-8 result.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%20b/c").as_deref(), Some("/a b/c"));
        assert_eq!(percent_decode("/a%2"), None);
        assert_eq!(percent_decode("/a%zz"), None);
    }

    #[test]
    fn rejects_bad_urls_naming_them() {
        for url in ["nonsense", "file://host/dir", "memory://", "s3:///p", "", "://x", "a b://x"] {
            match open_storage(url, &StorageOptions::default()) {
                Err(Error::InvalidArgument(msg)) => assert!(msg.contains(url), "{msg}"),
                other => panic!("{url}: expected InvalidArgument, got {other:?}"),
            }
        }
    }

    #[test]
    fn other_schemes_and_forced_urls_go_through_the_flink_proxy() {
        // No JVM with the bridge classes is there (another test of this binary may start a bare
        // one), so the proxy explains what it needs, naming the url; a native url would open.
        let forced = StorageOptions::from_pairs([("fs.force-proxy", "true")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local = format!("file://{}", dir.path().display());
        assert!(open_storage(&local, &StorageOptions::default()).is_ok());
        let cases = [
            ("hdfs://127.0.0.1:9000/db", StorageOptions::default()),
            ("oss://bucket/db", StorageOptions::default()),
            ("viewfs://cluster/db", StorageOptions::default()),
            (local.as_str(), forced.clone()),
            ("memory://forced", forced),
        ];
        for (url, options) in cases {
            match open_storage(url, &options) {
                Err(Error::InvalidArgument(msg)) => {
                    assert!(msg.contains(url) && msg.contains("Flink"), "{msg}")
                }
                other => panic!("{url}: expected the proxy's InvalidArgument, got {other:?}"),
            }
        }
        assert!(["file", "memory", "s3", "s3a"].into_iter().all(is_native_scheme));
        assert!(!["hdfs", "oss", "viewfs", "gs", "ftp"].into_iter().any(is_native_scheme));
    }

    #[test]
    fn flink_local_paths_open_natively() {
        let dir = tempfile::tempdir().unwrap();
        let flink_form = format!("file:{}/db", dir.path().display());
        let storage = open_storage(&flink_form, &StorageOptions::default()).unwrap();
        assert_eq!(storage.url(), format!("file://{}/db", dir.path().display()));
    }

    #[test]
    fn options_from_pairs_and_redacted_debug() {
        let options = StorageOptions::from_pairs([
            ("s3.endpoint", "http://127.0.0.1:9000"),
            ("s3.secret-key", "hunter2"),
            ("s3.path-style", "true"),
            ("local.fsync", "false"),
        ])
        .unwrap();
        assert_eq!(options.s3.path_style, Some(true));
        assert!(!options.local_fsync);
        assert!(!format!("{options:?}").contains("hunter2"));
        assert!(StorageOptions::from_pairs([("s3.nope", "1")]).is_err());
    }

    #[test]
    fn disk_cache_options_need_a_dir_and_a_bound() {
        assert_eq!(StorageOptions::default().disk_cache(), None);
        let dir_only = StorageOptions::from_pairs([("cache.dir", "/tmp/c")]).unwrap();
        assert_eq!(dir_only.disk_cache(), None);
        let options = StorageOptions::from_pairs([
            ("cache.dir", "/tmp/c"),
            ("cache.size-limit", "1000"),
            ("cache.reserve-size", "0"),
        ])
        .unwrap();
        let cache = options.disk_cache().unwrap();
        assert_eq!(
            (cache.dir.to_str(), cache.size_limit, cache.reserve),
            (Some("/tmp/c"), 1000, 0)
        );
        for (key, value) in [("cache.dir", "relative"), ("cache.size-limit", "-1")] {
            let e = StorageOptions::from_pairs([(key, value)]).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
