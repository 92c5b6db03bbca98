//! [`FlinkProxyStorage`]: the [`Storage`] seam over one Flink `FileSystem`, reached through the
//! Java class `org.forstrs.fs.FlinkFsBridge`.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use ::jni::objects::{JLongArray, JObjectArray, JString};
use ::jni::signature::{Primitive, ReturnType};
use ::jni::sys::jvalue;
use async_trait::async_trait;
use bytes::Bytes;

use super::java::{self, JavaRef, VOID};
use super::readers::{Reader, Readers};
use super::writer::ProxyWriter;
// `storage::TEMP_PREFIX` (checked by `check_relative_path`) is also `FlinkFsBridge.TEMP_PREFIX`.
use crate::storage::{
    FileInfo, FileWriter, Location, Storage, Transfer, WriteMode, check_relative_path,
    copy_between, io_runtime,
};
use crate::{Error, Result};

/// Reads longer than this check the file size first, so a corrupt block handle asking for
/// gigabytes fails with an error instead of aborting on the allocation.
const CHECKED_READ_BYTES: u64 = 64 << 20;

/// How [`FlinkProxyStorage::copy_uri`] copied a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMethod {
    /// The file system copied it itself (`PathsCopyingFileSystem`).
    FileSystem,
    /// The bytes were streamed through the JVM.
    Streamed,
}

/// Storage on any Flink file system (HDFS, OSS, viewfs, the local one...), through JNI.
///
/// Every call runs on tokio's blocking pool, whose threads attach to the JVM as daemons: JNI
/// calls block for the whole remote request, and many of them (a multi_get's block reads) must be
/// able to run at once. Ranged reads go to a per-file Java reader with a bounded pool of open
/// streams, filling a direct `ByteBuffer` over the result's memory.
#[derive(Clone)]
pub struct FlinkProxyStorage {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    /// Root URI without a trailing '/'.
    url: String,
    bridge: JavaRef,
    readers: Readers,
}

impl fmt::Debug for FlinkProxyStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlinkProxyStorage").field("url", &self.inner.url).finish_non_exhaustive()
    }
}

impl FlinkProxyStorage {
    /// Opens the Flink file system of `url` (a URI Flink understands: hdfs://nn:8020/dir,
    /// file:///dir, oss://bucket/dir...). Blocks on the JVM; call it from a non-async thread.
    ///
    /// The first proxy storage of the process must be opened on a thread that Java called into
    /// (e.g. inside `ForStNative.open`), so that the bridge classes resolve through the jar's
    /// class loader (see `java::classes`).
    pub fn open(url: &str) -> Result<Self> {
        if !java::jvm_present() {
            return Err(Error::invalid(format!(
                "storage url {url:?}: this scheme is served through Flink's FileSystem, which \
                 needs the library to be loaded by a JVM (the forstjni jar)"
            )));
        }
        java::classes().map_err(|e| Error::invalid(format!("storage url {url:?}: {e}")))?;
        let url = url.trim_end_matches('/').to_string();
        let bridge = java::call(&url, "open the Flink file system", |env, c| {
            let uri = env.new_string(&url)?;
            let class = <&::jni::objects::JClass>::from(c.bridge.as_obj());
            // SAFETY: for_uri is the static FlinkFsBridge.forUri(String)FlinkFsBridge.
            let bridge = unsafe {
                env.call_static_method_unchecked(
                    class,
                    c.for_uri,
                    ReturnType::Object,
                    &[jvalue { l: uri.as_raw() }],
                )?
            };
            JavaRef::new(env, &bridge.l()?)
        })?;
        Ok(Self { inner: Arc::new(Inner { url, bridge, readers: Readers::default() }) })
    }

    /// The full URI of a path relative to the root.
    pub fn full_uri(&self, path: &str) -> String {
        self.inner.full_url(path.trim_matches('/'))
    }

    /// Copies `from_uri` to `to_uri` (full URIs, normally on this storage's file system, e.g.
    /// from the working directory to a checkpoint directory): through Flink's
    /// `PathsCopyingFileSystem` when the file system offers it for the two paths, else by
    /// streaming the bytes.
    pub async fn copy_uri(&self, from_uri: &str, to_uri: &str) -> Result<CopyMethod> {
        let (inner, from, to) = (self.inner.clone(), from_uri.to_string(), to_uri.to_string());
        blocking(from_uri, move || inner.copy_full(&from, &to)).await
    }

    /// The Flink file system class behind this storage (for messages and tests).
    pub async fn file_system_class(&self) -> Result<String> {
        let inner = self.inner.clone();
        blocking(&self.inner.url.clone(), move || {
            inner.call_bridge_string(&inner.url, "describe", |c| c.file_system_class, &[])
        })
        .await
    }

    /// How reads of `path` reach the file system ("hadoop-bytebuffer", "flink-bytebuffer",
    /// "scratch-array"), opening a stream to find out.
    pub async fn read_kind(&self, path: &str) -> Result<String> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        blocking(&inner.full_url(&rel), move || inner.read_kind(&rel)).await
    }
}

/// Runs a JNI job on tokio's blocking pool and waits for it.
async fn blocking<T: Send + 'static>(
    url: &str,
    job: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match io_runtime().spawn_blocking(job).await {
        Ok(result) => result,
        Err(e) => Err(Error::io(url, format!("storage call failed: {e}"))),
    }
}

/// A JNI `String` argument.
fn jstring<'a>(env: &mut ::jni::JNIEnv<'a>, s: &str) -> ::jni::errors::Result<JString<'a>> {
    env.new_string(s)
}

impl Inner {
    fn full_url(&self, rel: &str) -> String {
        if rel.is_empty() { self.url.clone() } else { format!("{}/{rel}", self.url) }
    }

    /// Checks a relative path and returns it without leading or trailing '/'.
    fn relative(&self, path: &str, allow_root: bool) -> Result<String> {
        let forbidden = [':', '?', '#'];
        Ok(check_relative_path(path, allow_root, &forbidden, || self.full_url(path))?.to_string())
    }

    fn call_bridge_string(
        &self,
        url: &str,
        what: &str,
        method: impl FnOnce(&java::Classes) -> ::jni::objects::JMethodID,
        args: &[jvalue],
    ) -> Result<String> {
        let bridge = self.bridge.as_obj();
        java::call(url, what, |env, c| {
            // SAFETY: callers pass a bridge method returning a String, with matching arguments.
            let value =
                unsafe { env.call_method_unchecked(bridge, method(c), ReturnType::Object, args)? };
            let s = JString::from(value.l()?);
            Ok(env.get_string(&s)?.into())
        })
    }

    /// Calls a `void` bridge method taking one or two path strings.
    fn call_paths(
        &self,
        what: &str,
        method: fn(&java::Classes) -> ::jni::objects::JMethodID,
        paths: &[&str],
    ) -> Result<()> {
        let bridge = self.bridge.as_obj();
        java::call(paths[0], what, |env, c| {
            let mut args = Vec::with_capacity(paths.len());
            for path in paths {
                args.push(jvalue { l: jstring(env, path)?.into_raw() });
            }
            // SAFETY: callers pass a void bridge method taking `paths.len()` Strings.
            unsafe { env.call_method_unchecked(bridge, method(c), VOID, &args)? };
            Ok(())
        })
    }

    fn size(&self, rel: &str) -> Result<u64> {
        let url = self.full_url(rel);
        let bridge = self.bridge.as_obj();
        let size = java::call(&url, "stat", |env, c| {
            let path = jstring(env, &url)?;
            // SAFETY: size is FlinkFsBridge.size(String)J.
            let v = unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.size,
                    ReturnType::Primitive(Primitive::Long),
                    &[jvalue { l: path.as_raw() }],
                )?
            };
            v.j()
        })?;
        u64::try_from(size).map_err(|_| Error::NotFound(url))
    }

    fn list(&self, rel: &str) -> Result<Vec<FileInfo>> {
        let url = self.full_url(rel);
        let bridge = self.bridge.as_obj();
        java::call(&url, "list", |env, c| {
            let path = jstring(env, &url)?;
            // SAFETY: list is FlinkFsBridge.list(String)FileListing.
            let listing = unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.list,
                    ReturnType::Object,
                    &[jvalue { l: path.as_raw() }],
                )?
            }
            .l()?;
            // SAFETY: FileListing.paths()[String and sizes()[J, no arguments.
            let paths = unsafe {
                env.call_method_unchecked(&listing, c.listing_paths, ReturnType::Array, &[])?
            }
            .l()?;
            let sizes = unsafe {
                env.call_method_unchecked(&listing, c.listing_sizes, ReturnType::Array, &[])?
            }
            .l()?;
            let paths = JObjectArray::from(paths);
            let sizes = JLongArray::from(sizes);
            let n = env.get_array_length(&paths)?;
            let mut size_values = vec![0i64; n.max(0) as usize];
            env.get_long_array_region(&sizes, 0, &mut size_values)?;
            let mut files = Vec::with_capacity(size_values.len());
            for (i, size) in size_values.into_iter().enumerate() {
                let element = JString::from(env.get_object_array_element(&paths, i as i32)?);
                let name: String = env.get_string(&element)?.into();
                // A listing can be long: free each name's local reference as we go.
                env.delete_local_ref(element)?;
                let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
                files.push(FileInfo { path, size: size.max(0) as u64 });
            }
            Ok(files)
        })
    }

    fn reader(&self, rel: &str) -> Result<Arc<Reader>> {
        let (cached, generation) = self.readers.get(rel);
        if let Some(reader) = cached {
            return Ok(reader);
        }
        let url = self.full_url(rel);
        let bridge = self.bridge.as_obj();
        let object = java::call(&url, "open", |env, c| {
            let path = jstring(env, &url)?;
            // SAFETY: open_reader is FlinkFsBridge.openReader(String)FlinkFsReader.
            let reader = unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.open_reader,
                    ReturnType::Object,
                    &[jvalue { l: path.as_raw() }],
                )?
            }
            .l()?;
            JavaRef::new(env, &reader)
        })?;
        let reader = Arc::new(Reader::new(object, url));
        // An evicted reader is closed when its last user drops it; we are on a blocking thread.
        drop(self.readers.insert(rel, &reader, generation));
        Ok(reader)
    }

    fn read_range(&self, rel: &str, start: u64, len: usize) -> Result<Bytes> {
        let url = self.full_url(rel);
        let length = i32::try_from(len)
            .map_err(|_| Error::invalid(format!("read of {len} bytes from {url}: too large")))?;
        let position = i64::try_from(start)
            .map_err(|_| Error::invalid(format!("read at offset {start} of {url}: too large")))?;
        let reader = self.reader(rel)?;
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        java::call(&url, "read", |env, c| {
            // SAFETY: the buffer covers `len` bytes of `buf`'s allocation, which outlives the
            // call; Java only writes into it (FlinkFsReader.readFully) and keeps no reference
            // after returning (the ByteBuffer is a local reference freed with the call's frame).
            let buffer = unsafe { env.new_direct_byte_buffer(buf.as_mut_ptr(), len)? };
            // SAFETY: reader_read_fully is FlinkFsReader.readFully(JLjava/nio/ByteBuffer;I)V.
            unsafe {
                env.call_method_unchecked(
                    reader.as_obj(),
                    c.reader_read_fully,
                    VOID,
                    &[jvalue { j: position }, jvalue { l: buffer.as_raw() }, jvalue { i: length }],
                )?
            };
            Ok(())
        })?;
        // SAFETY: readFully returned normally, so it filled all `len` bytes (it throws when the
        // file ends first).
        unsafe { buf.set_len(len) };
        Ok(Bytes::from(buf))
    }

    fn read_kind(&self, rel: &str) -> Result<String> {
        let reader = self.reader(rel)?;
        let url = self.full_url(rel);
        java::call(&url, "open", |env, c| {
            // SAFETY: reader_read_kind is FlinkFsReader.readKind()String.
            let kind = unsafe {
                env.call_method_unchecked(
                    reader.as_obj(),
                    c.reader_read_kind,
                    ReturnType::Object,
                    &[],
                )?
            }
            .l()?;
            Ok(env.get_string(&JString::from(kind))?.into())
        })
    }

    fn put(&self, rel: &str, data: &Bytes, mode: WriteMode) -> Result<()> {
        let url = self.full_url(rel);
        let length = i32::try_from(data.len()).map_err(|_| {
            Error::invalid(format!("put of {} bytes to {url}: too large", data.len()))
        })?;
        let bridge = self.bridge.as_obj();
        let result = java::call(&url, "put", |env, c| {
            let path = jstring(env, &url)?;
            // SAFETY: the buffer covers `data`, which outlives the call; Java only reads it
            // (FlinkFsBridge.put copies it into the output stream) and keeps no reference.
            let buffer =
                unsafe { env.new_direct_byte_buffer(data.as_ptr() as *mut u8, data.len())? };
            // SAFETY: put is FlinkFsBridge.put(String, ByteBuffer, int, boolean)V.
            unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.put,
                    VOID,
                    &[
                        jvalue { l: path.as_raw() },
                        jvalue { l: buffer.as_raw() },
                        jvalue { i: length },
                        jvalue { z: (mode == WriteMode::Overwrite) as u8 },
                    ],
                )?
            };
            Ok(())
        });
        drop(self.readers.invalidate(rel));
        result
    }

    fn create(self: &Arc<Self>, rel: &str) -> Result<ProxyWriter> {
        let url = self.full_url(rel);
        let bridge = self.bridge.as_obj();
        let writer = java::call(&url, "create", |env, c| {
            let path = jstring(env, &url)?;
            // SAFETY: create is FlinkFsBridge.create(String)FlinkFsWriter.
            let writer = unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.create,
                    ReturnType::Object,
                    &[jvalue { l: path.as_raw() }],
                )?
            }
            .l()?;
            JavaRef::new(env, &writer)
        })?;
        Ok(ProxyWriter::new(self.clone(), rel.to_string(), url, writer))
    }

    /// The file at `rel` was replaced: forget its reader.
    pub(super) fn replaced(&self, rel: &str) {
        drop(self.readers.invalidate(rel));
    }

    fn copy_full(&self, from: &str, to: &str) -> Result<CopyMethod> {
        let bridge = self.bridge.as_obj();
        let by_fs = java::call(from, &format!("copy to {to}"), |env, c| {
            let (src, dst) = (jstring(env, from)?, jstring(env, to)?);
            // SAFETY: copy is FlinkFsBridge.copy(String, String)Z.
            let v = unsafe {
                env.call_method_unchecked(
                    bridge,
                    c.copy,
                    ReturnType::Primitive(Primitive::Boolean),
                    &[jvalue { l: src.as_raw() }, jvalue { l: dst.as_raw() }],
                )?
            };
            v.z()
        })?;
        Ok(if by_fs { CopyMethod::FileSystem } else { CopyMethod::Streamed })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Readers close through JNI when dropped, which must not happen on an async worker.
        let readers = self.readers.drain();
        if !readers.is_empty() {
            drop(io_runtime().spawn_blocking(move || drop(readers)));
        }
    }
}

#[async_trait]
impl Storage for FlinkProxyStorage {
    fn url(&self) -> &str {
        &self.inner.url
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        let writer = blocking(&inner.full_url(&rel), move || inner.create(&rel)).await?;
        Ok(Box::new(writer))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        blocking(&inner.full_url(&rel), move || inner.put(&rel, &data, mode)).await
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        let url = inner.full_url(&rel);
        if range.start > range.end {
            return Err(Error::invalid(format!("reversed range {range:?} for {url}")));
        }
        let want = range.end - range.start;
        // Empty reads never touch the file, and huge ones must not allocate blindly.
        if want == 0 || want > CHECKED_READ_BYTES {
            let size = self.size(path).await?;
            if range.end > size {
                return Err(Error::io(
                    &url,
                    format!("read of {range:?} past end of file of {size} bytes"),
                ));
            }
            if want == 0 {
                return Ok(Bytes::new());
            }
        }
        let len = usize::try_from(want)
            .map_err(|_| Error::invalid(format!("range {range:?} too large")))?;
        blocking(&url, move || inner.read_range(&rel, range.start, len)).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let size = self.size(path).await?;
        self.read_range(path, 0..size).await
    }

    async fn size(&self, path: &str) -> Result<u64> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        blocking(&inner.full_url(&rel), move || inner.size(&rel)).await
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        let inner = self.inner.clone();
        let rel = inner.relative(dir, true)?;
        blocking(&inner.full_url(&rel), move || inner.list(&rel)).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let inner = self.inner.clone();
        let rel = inner.relative(path, false)?;
        blocking(&inner.full_url(&rel), move || {
            let result = inner.call_paths("delete", |c| c.delete, &[&inner.full_url(&rel)]);
            inner.replaced(&rel);
            result
        })
        .await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let inner = self.inner.clone();
        let (from, to) = (inner.relative(from, false)?, inner.relative(to, false)?);
        blocking(&inner.full_url(&from), move || {
            let (src, dst) = (inner.full_url(&from), inner.full_url(&to));
            let result = if from == to {
                inner.size(&from).map(|_| ())
            } else {
                inner.call_paths("rename", |c| c.rename, &[&src, &dst])
            };
            inner.replaced(&from);
            inner.replaced(&to);
            result
        })
        .await
    }

    fn locate(&self, path: &str) -> Option<Location> {
        Some(Location::FlinkFile(self.full_uri(path)))
    }

    /// Between two places on one Flink file system (a working directory and a checkpoint
    /// directory on HDFS), Flink copies: `PathsCopyingFileSystem` where it can, else the JVM
    /// streams the bytes (counted as passing through this process).
    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<Transfer> {
        if let Some(Location::FlinkFile(from_uri)) = src.locate(from) {
            let to_uri = self.full_uri(to);
            if file_system_of(&from_uri) == file_system_of(&to_uri) {
                return Ok(match self.copy_uri(&from_uri, &to_uri).await? {
                    CopyMethod::FileSystem => Transfer::InStorage,
                    CopyMethod::Streamed => Transfer::Streamed(self.size(to).await?),
                });
            }
        }
        copy_between(src, from, self, to).await
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let inner = self.inner.clone();
        let (from, to) = (inner.relative(from, false)?, inner.relative(to, false)?);
        blocking(&inner.full_url(&from), move || {
            if from == to {
                return inner.size(&from).map(|_| ());
            }
            let result = inner.copy_full(&inner.full_url(&from), &inner.full_url(&to));
            inner.replaced(&to);
            result.map(|_| ())
        })
        .await
    }
}

/// `scheme://authority` of a URI: two URIs with the same one are on the same file system.
fn file_system_of(uri: &str) -> &str {
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split('/').next().unwrap_or("");
            &uri[..scheme.len() + 3 + authority.len()]
        }
        None => "",
    }
}
