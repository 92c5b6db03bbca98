//! The natives of `ForStNative` that read a checkpoint in place, read-only
//! ([`CheckpointReader`]): for `ForStTool`'s `inspect`, `verify`, `diff` and `dump`. Readers are
//! reached by handle like databases; nothing they do writes anywhere.

use std::collections::HashMap;

use ::jni::JNIEnv;
use ::jni::objects::{JByteArray, JClass, JObject, JObjectArray, JString};
use ::jni::sys::{jint, jlong, jobjectArray};

use super::checkpoints::{files_by_name, key_groups};
use super::guard::{JniResult, guard, illegal_argument};
use super::handles::Registry;
use super::natives::{string, strings};
use super::options::{self, string_array};
use crate::lsm::RestoreSource;
use crate::lsm::checkpoint_reader::CheckpointReader;
use crate::storage::open_storage;

static READERS: Registry<CheckpointReader> = Registry::new("checkpoint reader");

/// Columns of each row of `checkpointReaderFiles`.
pub const FILE_COLUMNS: usize = 6;

/// `static native long openCheckpointReader(String[] options, byte[] manifest, String[]
/// fileNames, String[] fileUris, int keyGroupStart, int keyGroupEnd, int keyGroupPrefixBytes)`:
/// the tree of one checkpointed database, its files where they are. Only storage options
/// (`s3.*`, `fs.*`) matter; no disk cache is used.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // mirrors the Java signature
pub extern "system" fn Java_org_forstrs_jni_ForStNative_openCheckpointReader<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    options: JObjectArray<'l>,
    manifest: JByteArray<'l>,
    file_names: JObjectArray<'l>,
    file_uris: JObjectArray<'l>,
    key_group_start: jint,
    key_group_end: jint,
    key_group_prefix_bytes: jint,
) -> jlong {
    guard(&mut env, |env| {
        let (_, mut storage_options) = options::parse_open(&strings(env, &options, "options")?)?;
        // Reads go to the files themselves (a disk cache would write), and opening a directory
        // creates nothing.
        storage_options.cache_dir = None;
        storage_options.read_only = true;
        if manifest.is_null() {
            return illegal_argument("manifest is null");
        }
        let manifest = bytes::Bytes::from(env.convert_byte_array(&manifest)?);
        let names = strings(env, &file_names, "fileNames")?;
        let uris = strings(env, &file_uris, "fileUris")?;
        // Opened on this Java thread, so that a Flink file-system proxy resolves its Java
        // classes through the jar's class loader.
        let files = files_by_name(
            &names,
            &uris,
            &mut HashMap::new(),
            |dir| open_storage(dir, &storage_options),
            "",
        )?;
        let key_groups = key_groups(key_group_start, key_group_end)?;
        let prefix_bytes = usize::try_from(key_group_prefix_bytes).unwrap_or(0);
        let source = RestoreSource { manifest, files, key_groups };
        Ok(READERS.insert(CheckpointReader::open(source, prefix_bytes)?))
    })
}

/// `static native String[] checkpointReaderFamilies(long reader)`: the states' names.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReaderFamilies<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
) -> jobjectArray {
    guard(&mut env, |env| {
        let reader = READERS.get(reader)?;
        let names: Vec<String> = reader.families().iter().map(|(n, _)| n.clone()).collect();
        string_array(env, &names)
    })
    .into_raw()
}

/// `static native String[] checkpointReaderFiles(long reader)`: [`FILE_COLUMNS`] strings per
/// file: level, name, location, size, entries, state (empty if its keys are in no family).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReaderFiles<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
) -> jobjectArray {
    guard(&mut env, |env| {
        let reader = READERS.get(reader)?;
        let mut rows = Vec::new();
        for f in reader.files() {
            rows.extend([
                f.level.to_string(),
                f.name,
                f.location,
                f.size.to_string(),
                f.entries.to_string(),
                f.family.unwrap_or_default(),
            ]);
        }
        string_array(env, &rows)
    })
    .into_raw()
}

/// `static native byte[][] checkpointReaderScan(long reader, String state, byte[] from, byte[]
/// to, int max)`: up to `max` entries of the state from `from` (inclusive; null: the first)
/// to `to` (exclusive; null: the last), as key, value, key, value...; fewer than `max` entries
/// means the range is done.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReaderScan<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
    state: JString<'l>,
    from: JByteArray<'l>,
    to: JByteArray<'l>,
    max: jint,
) -> jobjectArray {
    guard(&mut env, |env| {
        let reader = READERS.get(reader)?;
        let state = string(env, &state, "state")?;
        let Ok(max) = usize::try_from(max) else {
            return illegal_argument(format!("max must not be negative, got {max}"));
        };
        let from = optional_bytes(env, &from)?;
        let to = optional_bytes(env, &to)?;
        let mut it = reader.iter(&state, from.as_deref(), to.as_deref())?;
        let mut entries = Vec::new();
        while it.valid() && entries.len() < 2 * max {
            entries.push(it.key().to_vec());
            entries.push(it.value().to_vec());
            it.advance()?;
        }
        let array = env.new_object_array(entries.len() as jint, "[B", JObject::null())?;
        for (i, bytes) in entries.iter().enumerate() {
            let element = env.auto_local(env.byte_array_from_slice(bytes)?);
            env.set_object_array_element(&array, i as jint, &*element)?;
        }
        Ok(array)
    })
    .into_raw()
}

/// `static native long checkpointReaderCount(long reader, String state)`: the entries of the
/// state a reader of the job saw (one per key; a map state's per user key).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReaderCount<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
    state: JString<'l>,
) -> jlong {
    guard(&mut env, |env| {
        let reader = READERS.get(reader)?;
        let state = string(env, &state, "state")?;
        let mut it = reader.iter(&state, None, None)?;
        let mut count = 0;
        while it.valid() {
            count += 1;
            it.advance()?;
        }
        Ok(count)
    })
}

/// `static native String[] checkpointReaderVerify(long reader)`: one message per bad file (each
/// naming it), none if every file and block is sound.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkpointReaderVerify<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
) -> jobjectArray {
    guard(&mut env, |env| {
        let reader = READERS.get(reader)?;
        let problems = reader.verify();
        string_array(env, &problems)
    })
    .into_raw()
}

/// `static native void closeCheckpointReader(long reader)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_closeCheckpointReader<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    reader: jlong,
) {
    guard(&mut env, |_| {
        READERS.remove(reader)?;
        Ok(())
    })
}

fn optional_bytes(env: &mut JNIEnv<'_>, array: &JByteArray<'_>) -> JniResult<Option<Vec<u8>>> {
    if array.is_null() {
        return Ok(None);
    }
    Ok(Some(env.convert_byte_array(array)?))
}
