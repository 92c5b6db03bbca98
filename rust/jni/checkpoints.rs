//! The checkpoint and restore natives of `org.forstrs.jni.ForStNative` (see that class for the
//! Java contract; the engine side is `lsm::checkpoint` and `lsm::restore`).

use std::collections::HashMap;
use std::sync::Mutex;

use ::jni::JNIEnv;
use ::jni::objects::{
    JByteArray, JByteBuffer, JClass, JIntArray, JLongArray, JObject, JObjectArray, JString,
};
use ::jni::sys::{jint, jlong};
use bytes::Bytes;

use super::buffers::DirectBuffer;
use super::guard::{JniResult, guard, illegal_argument};
use super::handles::{self, CheckpointHandle, DbHandle};
use super::natives::{string, strings};
use super::options;
use crate::lsm::locks::Recover;
use crate::lsm::{KeyGroupLayout, KeyGroups, RestoreSource, restore};
use crate::storage::{StorageRef, open_db_storage, open_storage};

/// `static native long checkpointPrepare(long db)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointPrepare<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
) -> jlong {
    guard(&mut env, |_| {
        let handle = handles::database(db)?;
        let checkpoint = handle.db.checkpoint()?;
        Ok(handles::CHECKPOINTS.insert(CheckpointHandle {
            checkpoint: Mutex::new(checkpoint),
            db: handle.shared(),
            storage_options: handle.storage_options.clone(),
            log_span: handle.db.inner.options.log_span.clone(),
        }))
    })
}

/// `static native byte[] checkpointManifest(long checkpoint)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointManifest<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
) -> ::jni::sys::jbyteArray {
    guard(&mut env, |env| {
        let handle = handles::checkpoint(checkpoint)?;
        let _in_db = handle.log_span.0.enter();
        let mut checkpoint = handle.checkpoint.lock().recover();
        checkpoint.wait_durable()?;
        let manifest = checkpoint.manifest()?;
        Ok(env.byte_array_from_slice(&manifest)?)
    })
    .into_raw()
}

/// `static native String[] checkpointFileNames(long checkpoint)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointFileNames<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
) -> ::jni::sys::jobjectArray {
    guard(&mut env, |env| {
        let files = handles::checkpoint(checkpoint)?.checkpoint.lock().recover().files()?;
        let array =
            env.new_object_array(files.len() as jint, "java/lang/String", JObject::null())?;
        for (i, (name, _)) in files.iter().enumerate() {
            let name = env.new_string(name)?;
            let name = env.auto_local(name);
            env.set_object_array_element(&array, i as jint, &*name)?;
        }
        Ok(array)
    })
    .into_raw()
}

/// `static native String[] checkpointFileLocations(long checkpoint)`: per file of
/// `checkpointFileNames`, its URI when it lives outside the database's directory, else null.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointFileLocations<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
) -> ::jni::sys::jobjectArray {
    guard(&mut env, |env| {
        let handle = handles::checkpoint(checkpoint)?;
        let _in_db = handle.log_span.0.enter();
        let locations = handle.checkpoint.lock().recover().file_locations()?;
        let array =
            env.new_object_array(locations.len() as jint, "java/lang/String", JObject::null())?;
        for (i, location) in locations.iter().enumerate() {
            if let Some(location) = location {
                let location = env.new_string(location)?;
                let location = env.auto_local(location);
                env.set_object_array_element(&array, i as jint, &*location)?;
            }
        }
        Ok(array)
    })
    .into_raw()
}

/// `static native long[] checkpointFileSizes(long checkpoint)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointFileSizes<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
) -> ::jni::sys::jlongArray {
    guard(&mut env, |env| {
        let files = handles::checkpoint(checkpoint)?.checkpoint.lock().recover().files()?;
        let sizes: Vec<jlong> = files.iter().map(|(_, size)| *size as jlong).collect();
        let array: JLongArray = env.new_long_array(sizes.len() as jint)?;
        env.set_long_array_region(&array, 0, &sizes)?;
        Ok(array)
    })
    .into_raw()
}

/// `static native long checkpointCopyFiles(long checkpoint, String[] names, String destDir,
/// String[] destNames)`: bytes that passed through this process.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointCopyFiles<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
    names: JObjectArray<'l>,
    dest_dir: JString<'l>,
    dest_names: JObjectArray<'l>,
) -> jlong {
    guard(&mut env, |env| {
        let names = strings(env, &names, "names")?;
        let dest_names = strings(env, &dest_names, "destNames")?;
        if names.len() != dest_names.len() {
            return illegal_argument(format!(
                "{} names but {} destination names",
                names.len(),
                dest_names.len()
            ));
        }
        let handle = handles::checkpoint(checkpoint)?;
        let _in_db = handle.log_span.0.enter();
        let dest = open_storage(&string(env, &dest_dir, "destDir")?, &handle.storage_options)?;
        let copies: Vec<(String, String)> = names.into_iter().zip(dest_names).collect();
        let streamed = handle.checkpoint.lock().recover().copy_files(&copies, dest.as_ref())?;
        Ok(streamed as jlong)
    })
}

/// `static native void checkpointHandOver(long checkpoint, String[] names, long checkpointId)`:
/// the files become Flink checkpoint `checkpointId`'s where they are (see `Checkpoint::hand_over`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointHandOver<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
    names: JObjectArray<'l>,
    checkpoint_id: jlong,
) {
    guard(&mut env, |env| {
        let names = strings(env, &names, "names")?;
        let Ok(checkpoint_id) = u64::try_from(checkpoint_id) else {
            return illegal_argument(format!("negative checkpointId {checkpoint_id}"));
        };
        let handle = handles::checkpoint(checkpoint)?;
        let _in_db = handle.log_span.0.enter();
        let checkpoint = handle.checkpoint.lock().recover();
        checkpoint.hand_over(&names, checkpoint_id)?;
        Ok(())
    })
}

/// `static native int checkpointReadFile(long checkpoint, String name, long position,
/// ByteBuffer out, int outOffset, int length)`: reads up to `length` bytes of the checkpoint's
/// file `name` from `position` into the direct buffer `out` at `outOffset`. Returns the bytes
/// read: `length`, fewer only at the end of the file, 0 at or past it. For checkpoint storages
/// that take streams instead of files (the JobManager's), which Java streams the file into.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // mirrors the Java signature
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReadFile<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
    name: JString<'l>,
    position: jlong,
    out: JByteBuffer<'l>,
    out_offset: jint,
    length: jint,
) -> jint {
    guard(&mut env, |env| {
        let name = string(env, &name, "name")?;
        let Ok(position) = u64::try_from(position) else {
            return illegal_argument(format!("negative position {position}"));
        };
        let out_buf = DirectBuffer::of(env, &out, "output")?;
        let (_, length) = out_buf.range(out_offset, length, "output")?;
        let handle = handles::checkpoint(checkpoint)?;
        let _in_db = handle.log_span.0.enter();
        let data = handle.checkpoint.lock().recover().read_file(&name, position, length as u64)?;
        // At most `length` bytes, so the length fits in a jint.
        let read = data.len() as jint;
        // SAFETY: `out` (the local reference) lives until this method returns and the slice does
        // not escape it; the range was checked against the capacity (read <= length), and no
        // other slice of the buffer exists.
        let dst = unsafe { out_buf.slice_mut(out_offset, read, "output")? };
        dst.copy_from_slice(&data);
        Ok(read)
    })
}

/// `static native void checkpointRelease(long checkpoint)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointRelease<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    checkpoint: jlong,
) {
    guard(&mut env, |_| {
        let _ = handles::CHECKPOINTS.remove(checkpoint);
        Ok(())
    })
}

/// `static native long openRestored(String url, String[] options, byte[][] manifests,
/// String[][] fileNames, String[][] fileUris, int[] sourceKeyGroups, int keyGroupStart,
/// int keyGroupEnd, int keyGroupPrefixBytes)`
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // mirrors the Java signature
pub extern "system" fn Java_org_forstrs_jni_ForStNative_openRestored<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    url: JString<'l>,
    options: JObjectArray<'l>,
    manifests: JObjectArray<'l>,
    file_names: JObjectArray<'l>,
    file_uris: JObjectArray<'l>,
    source_key_groups: JIntArray<'l>,
    key_group_start: jint,
    key_group_end: jint,
    key_group_prefix_bytes: jint,
) -> jlong {
    guard(&mut env, |env| {
        let url = string(env, &url, "url")?;
        let (options, storage_options) = options::parse_open(&strings(env, &options, "options")?)?;
        let _in_db = options.log_span.entered();
        let manifests = byte_arrays(env, &manifests)?;
        let names = string_arrays(env, &file_names, "fileNames")?;
        let uris = string_arrays(env, &file_uris, "fileUris")?;
        let groups = int_array(env, &source_key_groups)?;
        let count = manifests.len();
        if names.len() != count || uris.len() != count || groups.len() != 2 * count {
            return illegal_argument(format!(
                "{count} manifests need {count} fileNames, {count} fileUris and {} \
                 sourceKeyGroups; got {}, {} and {}",
                2 * count,
                names.len(),
                uris.len(),
                groups.len()
            ));
        }
        let mut storages: HashMap<String, StorageRef> = HashMap::new();
        let mut sources = Vec::with_capacity(count);
        for (i, manifest) in manifests.into_iter().enumerate() {
            // Under the disk cache too: the restored DB reads these files in place (restore by
            // reference), and after a failover they are the files the previous attempt of this
            // subtask wrote and cached.
            let files = files_by_name(
                &names[i],
                &uris[i],
                &mut storages,
                |dir| open_db_storage(dir, &storage_options),
                &format!("source {i}: "),
            )?;
            sources.push(RestoreSource {
                manifest,
                files,
                key_groups: key_groups(groups[2 * i], groups[2 * i + 1])?,
            });
        }
        let layout = KeyGroupLayout {
            range: key_groups(key_group_start, key_group_end)?,
            prefix_bytes: usize::try_from(key_group_prefix_bytes).unwrap_or(0),
        };
        let db = restore(open_db_storage(&url, &storage_options)?, sources, layout, options)?;
        Ok(handles::DATABASES.insert(DbHandle::new(db, storage_options)))
    })
}

/// `static native int relocateFiles(long db, String[] names, String[] uris)`: the database reads
/// its files `names`, restored by reference, from the copies at `uris` from now on (see
/// `Db::relocate`). Returns how many files moved.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_relocateFiles<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    names: JObjectArray<'l>,
    uris: JObjectArray<'l>,
) -> jint {
    guard(&mut env, |env| {
        let names = strings(env, &names, "names")?;
        let uris = strings(env, &uris, "uris")?;
        let handle = handles::database(db)?;
        let options = &handle.storage_options;
        let copies = files_by_name(
            &names,
            &uris,
            &mut HashMap::new(),
            |dir| open_db_storage(dir, options),
            "",
        )?;
        // At most `names.len()`, which came from a Java array.
        Ok(handle.db.relocate(&copies)? as jint)
    })
}

/// The files of one checkpointed database by name, each at its URI: every directory opened
/// once (`open`), shared through `storages`; `what` prefixes error messages.
pub(super) fn files_by_name(
    names: &[String],
    uris: &[String],
    storages: &mut HashMap<String, StorageRef>,
    open: impl Fn(&str) -> crate::Result<StorageRef>,
    what: &str,
) -> JniResult<HashMap<String, (StorageRef, String)>> {
    if names.len() != uris.len() {
        return illegal_argument(format!("{what}fileNames and fileUris differ in length"));
    }
    let mut files = HashMap::new();
    for (name, uri) in names.iter().zip(uris) {
        let Some((dir, file)) = uri.rsplit_once('/').filter(|(_, f)| !f.is_empty()) else {
            return illegal_argument(format!("{what}{uri:?} is not a file URI"));
        };
        let storage = match storages.get(dir) {
            Some(storage) => storage.clone(),
            None => {
                let storage = open(dir)?;
                storages.insert(dir.to_string(), storage.clone());
                storage
            }
        };
        files.insert(name.clone(), (storage, file.to_string()));
    }
    Ok(files)
}

pub(super) fn key_groups(first: jint, last: jint) -> JniResult<KeyGroups> {
    match (u32::try_from(first), u32::try_from(last)) {
        (Ok(first), Ok(last)) if first <= last => Ok(KeyGroups::new(first, last)),
        _ => illegal_argument(format!("bad key-group range {first}..={last}")),
    }
}

fn byte_arrays(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> JniResult<Vec<Bytes>> {
    if array.is_null() {
        return illegal_argument("manifests is null");
    }
    let mut out = Vec::new();
    for i in 0..env.get_array_length(array)? {
        let element = JByteArray::from(env.get_object_array_element(array, i)?);
        let element = env.auto_local(element);
        if element.is_null() {
            return illegal_argument(format!("manifests[{i}] is null"));
        }
        out.push(Bytes::from(env.convert_byte_array(&*element)?));
    }
    Ok(out)
}

fn string_arrays(
    env: &mut JNIEnv<'_>,
    array: &JObjectArray<'_>,
    what: &str,
) -> JniResult<Vec<Vec<String>>> {
    if array.is_null() {
        return illegal_argument(format!("{what} is null"));
    }
    let mut out = Vec::new();
    for i in 0..env.get_array_length(array)? {
        let element = JObjectArray::from(env.get_object_array_element(array, i)?);
        let element = env.auto_local(element);
        out.push(strings(env, &element, &format!("{what}[{i}]"))?);
    }
    Ok(out)
}

fn int_array(env: &mut JNIEnv<'_>, array: &JIntArray<'_>) -> JniResult<Vec<jint>> {
    if array.is_null() {
        return illegal_argument("sourceKeyGroups is null");
    }
    let mut out = vec![0; env.get_array_length(array)? as usize];
    env.get_int_array_region(array, 0, &mut out)?;
    Ok(out)
}
