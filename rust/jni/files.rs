//! Writing a file into a storage from Java, chunk by chunk. Restore uses it for checkpointed files
//! that are not files the engine can reference (bytes the JobManager keeps, segments of merged
//! checkpoint files): Java streams them next to the new database, and the native restore then
//! takes them like any other file. A file is published only by `fileFinish` (atomically, as
//! every storage writer does); an aborted or abandoned one leaves nothing behind.

use std::collections::HashSet;
use std::sync::Mutex;

use ::jni::JNIEnv;
use ::jni::objects::{JByteBuffer, JClass, JObject, JObjectArray, JString};
use ::jni::sys::{jboolean, jint, jlong, jobjectArray};
use bytes::Bytes;

use super::buffers::DirectBuffer;
use super::guard::{Failure, JniResult, guard};
use super::handles::Registry;
use super::natives::{string, strings};
use super::options;
use crate::lsm::locks::Recover;
use crate::lsm::{AfterFailover, Leave, delete_database};
use crate::storage::{
    FileWriter, StorageOptions, block_on, delete_tree, list_children, open_storage,
};

/// The `(String dirUri, String[] options)` arguments of these natives: the directory and the
/// storage keys it is opened with (as for `open`).
fn directory(
    env: &mut JNIEnv<'_>,
    dir_uri: &JString<'_>,
    options: &JObjectArray<'_>,
) -> JniResult<(String, StorageOptions)> {
    let dir_uri = string(env, dir_uri, "dirUri")?;
    let (_, storage_options) = options::parse_open(&strings(env, options, "options")?)?;
    Ok((dir_uri, storage_options))
}

/// A file being written; `None` once finished or aborted.
pub struct FileWriterHandle {
    writer: Mutex<Option<Box<dyn FileWriter>>>,
    /// For messages: where the file goes.
    url: String,
}

pub static FILE_WRITERS: Registry<FileWriterHandle> = Registry::new("file writer");

impl FileWriterHandle {
    fn take(&self) -> Result<Box<dyn FileWriter>, Failure> {
        self.writer
            .lock()
            .recover()
            .take()
            .ok_or_else(|| Failure::IllegalState(format!("{} is already closed", self.url)))
    }
}

/// `static native long fileCreate(String dirUri, String[] options, String name)`: starts writing
/// the file `name` (a path relative to `dirUri`, which is opened with the storage keys of
/// `options`, as for `open`). Returns a handle for `fileWrite` / `fileFinish` / `fileAbort`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_fileCreate<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    dir_uri: JString<'l>,
    options: JObjectArray<'l>,
    name: JString<'l>,
) -> jlong {
    guard(&mut env, |env| {
        let (dir_uri, storage_options) = directory(env, &dir_uri, &options)?;
        let name = string(env, &name, "name")?;
        // On this Java thread, so that a Flink file-system proxy resolves its Java classes.
        let storage = open_storage(&dir_uri, &storage_options)?;
        let writer = block_on(storage.create(&name))?;
        Ok(FILE_WRITERS.insert(FileWriterHandle {
            writer: Mutex::new(Some(writer)),
            url: format!("{}/{name}", dir_uri.trim_end_matches('/')),
        }))
    })
}

/// `static native void fileWrite(long file, ByteBuffer data, int offset, int length)`: appends
/// `data[offset..offset + length]` (a direct buffer).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_fileWrite<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    file: jlong,
    data: JByteBuffer<'l>,
    offset: jint,
    length: jint,
) {
    guard(&mut env, |env| {
        let handle = FILE_WRITERS.get(file)?;
        let buffer = DirectBuffer::of(env, &data, "data")?;
        // SAFETY: `data` (the local reference) lives until this method returns; the bytes are
        // copied out before it does, and nothing writes the buffer meanwhile.
        let chunk = Bytes::copy_from_slice(unsafe { buffer.slice(offset, length, "data")? });
        let mut writer = handle.writer.lock().recover();
        let Some(writer) = writer.as_mut() else {
            return Err(Failure::IllegalState(format!("{} is already closed", handle.url)));
        };
        block_on(writer.write(chunk))?;
        Ok(())
    })
}

/// `static native long fileFinish(long file)`: publishes the file; returns its size. The handle
/// is closed afterwards, whether or not publishing succeeded.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_fileFinish<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    file: jlong,
) -> jlong {
    guard(&mut env, |_| {
        let writer = FILE_WRITERS.remove(file)?.take()?;
        Ok(block_on(writer.finish())? as jlong)
    })
}

/// `static native void fileAbort(long file)`: drops what was written; the handle is closed. An
/// unknown or already closed handle is a no-op, so that cleanup paths may always call it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_fileAbort<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    file: jlong,
) {
    guard(&mut env, |_| {
        let Ok(handle) = FILE_WRITERS.remove(file) else {
            return Ok(());
        };
        if let Ok(writer) = handle.take() {
            block_on(writer.abort())?;
        }
        Ok(())
    })
}

/// `static native void fileDelete(String dirUri, String[] options, String name)`: deletes the
/// file `name` under `dirUri`; a missing file is not an error.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_fileDelete<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    dir_uri: JString<'l>,
    options: JObjectArray<'l>,
    name: JString<'l>,
) {
    guard(&mut env, |env| {
        let (dir_uri, storage_options) = directory(env, &dir_uri, &options)?;
        let name = string(env, &name, "name")?;
        let storage = open_storage(&dir_uri, &storage_options)?;
        match block_on(storage.delete(&name)) {
            Ok(()) | Err(crate::Error::NotFound(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    })
}

/// `static native int deleteDatabase(String dirUri, String[] options, boolean reopened, long
/// restoredFrom, String[] referenced)`: deletes the files of the closed or dead database at
/// `dirUri` that it owns, keeping those it handed over to checkpoints; `reopened`: a database
/// opens there next, so an empty one that protects the kept files is left, otherwise nothing of
/// the database. `restoredFrom` >= 0: the database died in this run, which restored checkpoint
/// `restoredFrom` (0: none) referencing the files `referenced`; files only aborted checkpoints
/// handed over go too (see `lsm::delete_database`). Returns how many files it kept.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_deleteDatabase<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    dir_uri: JString<'l>,
    options: JObjectArray<'l>,
    reopened: jboolean,
    restored_from: jlong,
    referenced: JObjectArray<'l>,
) -> jint {
    guard(&mut env, |env| {
        let (dir_uri, storage_options) = directory(env, &dir_uri, &options)?;
        let referenced: HashSet<String> = if referenced.is_null() {
            HashSet::new()
        } else {
            strings(env, &referenced, "referenced")?.into_iter().collect()
        };
        let storage = open_storage(&dir_uri, &storage_options)?;
        let leave = if reopened != 0 { Leave::EmptyDatabase } else { Leave::Nothing };
        let after_failover = u64::try_from(restored_from)
            .ok()
            .map(|restored_from| AfterFailover { restored_from, referenced: &referenced });
        let kept = block_on(delete_database(storage.as_ref(), leave, after_failover.as_ref()))?;
        Ok(jint::try_from(kept).unwrap_or(jint::MAX))
    })
}

/// `static native String[] listChildren(String dirUri, String[] options)`: the names directly
/// under `dirUri` when the native side serves its scheme (see `storage::list_children`); null,
/// touching nothing, when Flink's FileSystem serves it (then the caller lists through that).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_listChildren<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    dir_uri: JString<'l>,
    options: JObjectArray<'l>,
) -> jobjectArray {
    guard(&mut env, |env| {
        let (dir_uri, storage_options) = directory(env, &dir_uri, &options)?;
        match list_children(&dir_uri, &storage_options)? {
            Some(names) => Ok(options::string_array(env, &names)?),
            None => Ok(JObjectArray::from(JObject::null())),
        }
    })
    .into_raw()
}

/// `static native boolean deleteDirectory(String dirUri, String[] options)`: deletes `dirUri` and
/// everything under it through the native store when the native side serves its scheme (s3,
/// memory, file) and returns true; returns false, touching nothing, when Flink's FileSystem
/// serves it (then the caller deletes through that file system).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_deleteDirectory<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    dir_uri: JString<'l>,
    options: JObjectArray<'l>,
) -> jboolean {
    guard(&mut env, |env| {
        let (dir_uri, storage_options) = directory(env, &dir_uri, &options)?;
        Ok(delete_tree(&dir_uri, &storage_options)?.is_some() as jboolean)
    })
}
