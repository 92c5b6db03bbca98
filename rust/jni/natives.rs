//! The native methods of `org.forstrs.jni.ForStNative` (see that class for the Java contract).
//! Each one is a thin shell: check the arguments, look the handle up, call the engine or the
//! batch executor, all under [`guard`].

use ::jni::JNIEnv;
use ::jni::objects::{JByteBuffer, JClass, JObjectArray, JString};
use ::jni::sys::{jboolean, jint, jlong};

use super::buffers::DirectBuffer;
use super::guard::{JniResult, guard, illegal_argument};
use super::handles::{self, DbHandle, InDb};
use super::options;
use crate::executor::execute_batch;
use crate::lsm::Db;
use crate::storage::open_db_storage;

/// `get` result for a key that has no value.
pub const NOT_FOUND: jint = -1;

pub(super) fn string(env: &mut JNIEnv<'_>, s: &JString<'_>, what: &str) -> JniResult<String> {
    if s.is_null() {
        return illegal_argument(format!("{what} is null"));
    }
    // `get_string` leaves two local references behind (String's class, the object's class): in
    // a frame of its own they go at once, so natives taking many strings do not pile them up in
    // their caller's frame (-Xcheck:jni warns past 32).
    env.with_local_frame(4, |env| -> JniResult<String> { Ok(env.get_string(s)?.into()) })
}

pub(super) fn strings(
    env: &mut JNIEnv<'_>,
    array: &JObjectArray<'_>,
    what: &str,
) -> JniResult<Vec<String>> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    let len = env.get_array_length(array)?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let element = env.get_object_array_element(array, i)?;
        let element = env.auto_local(JString::from(element));
        out.push(string(env, &element, &format!("{what}[{i}]"))?);
    }
    Ok(out)
}

/// `static native long open(String url, String[] options)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    url: JString<'l>,
    options: JObjectArray<'l>,
) -> jlong {
    guard(&mut env, |env| {
        let url = string(env, &url, "url")?;
        let (options, storage_options) = options::parse_open(&strings(env, &options, "options")?)?;
        let _in_db = options.log_span.entered();
        // On this Java thread, so that a Flink file-system proxy resolves its Java classes through
        // the jar's class loader.
        let storage = open_db_storage(&url, &storage_options)?;
        let db = Db::open_with_storage(storage, options)?;
        Ok(handles::DATABASES.insert(DbHandle::new(db, storage_options)))
    })
}

/// `static native void close(long db)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
) {
    guard(&mut env, |_| {
        let handle = InDb::enter(handles::DATABASES.remove(db)?);
        handle.db.close()?;
        Ok(())
    })
}

/// `static native int createColumnFamily(long db, String name)`: the family's id (the `cf` of
/// every other call and of the batch wire format).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_createColumnFamily<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    name: JString<'l>,
) -> jint {
    guard(&mut env, |env| {
        let handle = handles::database(db)?;
        let name = string(env, &name, "column family name")?;
        // Ids are u32 on the wire; Java carries the same 32 bits in an int.
        Ok(handle.create_family(&name)? as jint)
    })
}

/// `static native int get(long db, int cf, ByteBuffer key, int keyOffset, int keyLength,
/// ByteBuffer out, int outOffset, int outLength)`: the value's length (written at `outOffset`),
/// [`NOT_FOUND`], or `-(value length)` if it does not fit in `outLength` bytes (nothing written).
/// `outLength` must be at least 1, so a too-small answer (<= -2) is never `NOT_FOUND`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_get<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    cf: jint,
    key: JByteBuffer<'l>,
    key_offset: jint,
    key_length: jint,
    out: JByteBuffer<'l>,
    out_offset: jint,
    out_length: jint,
) -> jint {
    guard(&mut env, |env| {
        let handle = handles::database(db)?;
        let family = handle.family(cf as u32)?;
        let key_buf = DirectBuffer::of(env, &key, "key")?;
        let out_buf = DirectBuffer::of(env, &out, "output")?;
        out_buf.range(out_offset, out_length, "output")?;
        if out_length < 1 {
            return illegal_argument(format!("output length {out_length} must be at least 1"));
        }
        let value = {
            // SAFETY: `key` (the local reference) lives until this method returns and the slice
            // does not outlive this block; no writable slice exists while it is used.
            let key = unsafe { key_buf.slice(key_offset, key_length, "key")? };
            handle.db.get(&family, key)?
        };
        let Some(value) = value else {
            return Ok(NOT_FOUND);
        };
        let length = jint::try_from(value.len()).map_err(|_| {
            crate::Error::invalid(format!("value of {} bytes is too large for Java", value.len()))
        })?;
        if length > out_length {
            return Ok(-length);
        }
        // SAFETY: `out` lives until this method returns; the key slice above is gone, so this is
        // the only slice into either buffer, and the range was checked against the capacity.
        let dst = unsafe { out_buf.slice_mut(out_offset, length, "output")? };
        dst.copy_from_slice(&value);
        Ok(length)
    })
}

/// Shared body of put and merge: `apply(handle, cf, key, value)`.
#[allow(clippy::too_many_arguments)]
fn write_kv<'l>(
    env: &mut JNIEnv<'l>,
    db: jlong,
    cf: jint,
    key: &JByteBuffer<'l>,
    key_offset: jint,
    key_length: jint,
    value: &JByteBuffer<'l>,
    value_offset: jint,
    value_length: jint,
    apply: impl FnOnce(&Db, &crate::lsm::ColumnFamily, &[u8], &[u8]) -> crate::Result<()>,
) -> JniResult<()> {
    let handle = handles::database(db)?;
    let family = handle.family(cf as u32)?;
    let key_buf = DirectBuffer::of(env, key, "key")?;
    let value_buf = DirectBuffer::of(env, value, "value")?;
    // SAFETY: both local references live until the native method returns and the slices do not
    // outlive this function; both are read-only, so overlapping ranges are fine.
    let (key, value) = unsafe {
        (
            key_buf.slice(key_offset, key_length, "key")?,
            value_buf.slice(value_offset, value_length, "value")?,
        )
    };
    apply(&handle.db, &family, key, value)?;
    Ok(())
}

/// `static native void put(long db, int cf, ByteBuffer key, int keyOffset, int keyLength,
/// ByteBuffer value, int valueOffset, int valueLength)`
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_put<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    cf: jint,
    key: JByteBuffer<'l>,
    key_offset: jint,
    key_length: jint,
    value: JByteBuffer<'l>,
    value_offset: jint,
    value_length: jint,
) {
    guard(&mut env, |env| {
        write_kv(
            env,
            db,
            cf,
            &key,
            key_offset,
            key_length,
            &value,
            value_offset,
            value_length,
            Db::put,
        )
    })
}

/// `static native void merge(long db, int cf, ByteBuffer key, int keyOffset, int keyLength,
/// ByteBuffer value, int valueOffset, int valueLength)`: list append (Flink's `,`-joined layout).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_merge<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    cf: jint,
    key: JByteBuffer<'l>,
    key_offset: jint,
    key_length: jint,
    value: JByteBuffer<'l>,
    value_offset: jint,
    value_length: jint,
) {
    guard(&mut env, |env| {
        write_kv(
            env,
            db,
            cf,
            &key,
            key_offset,
            key_length,
            &value,
            value_offset,
            value_length,
            Db::merge,
        )
    })
}

/// `static native void delete(long db, int cf, ByteBuffer key, int keyOffset, int keyLength)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_delete<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    cf: jint,
    key: JByteBuffer<'l>,
    key_offset: jint,
    key_length: jint,
) {
    guard(&mut env, |env| {
        let handle = handles::database(db)?;
        let family = handle.family(cf as u32)?;
        let key_buf = DirectBuffer::of(env, &key, "key")?;
        // SAFETY: `key` lives until this method returns; the slice does not escape this closure.
        let key = unsafe { key_buf.slice(key_offset, key_length, "key")? };
        handle.db.delete(&family, key)?;
        Ok(())
    })
}

/// `static native void flush(long db)`: writes every memtable to storage.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_flush<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
) {
    guard(&mut env, |_| {
        handles::database(db)?.db.flush()?;
        Ok(())
    })
}

/// `static native long executeBatch(long db, ByteBuffer request, int requestLength,
/// ByteBuffer response)`: runs the batch in `request[0..requestLength]` (docs/BATCH_WIRE_FORMAT.md)
/// and writes the responses at the start of `response`. Returns the bytes written, or
/// `-(bytes needed)` if `response` is too small (then nothing was applied).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_executeBatch<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    request: JByteBuffer<'l>,
    request_length: jint,
    response: JByteBuffer<'l>,
) -> jlong {
    guard(&mut env, |env| {
        let handle = handles::database(db)?;
        let request_buf = DirectBuffer::of(env, &request, "request")?;
        let response_buf = DirectBuffer::of(env, &response, "response")?;
        let (_, request_len) = request_buf.range(0, request_length, "request")?;
        let response_len = response_buf.capacity();
        if request_buf.overlaps(0, request_len, &response_buf, 0, response_len) {
            return illegal_argument("request and response buffers overlap");
        }
        let response_len = jint::try_from(response_len).unwrap_or(jint::MAX);
        // SAFETY: both local references live until this method returns and the slices do not
        // escape it; the ranges were checked against the capacities and do not overlap (checked
        // above), so the shared and the exclusive slice never alias.
        let (request, response) = unsafe {
            (
                request_buf.slice(0, request_length, "request")?,
                response_buf.slice_mut(0, response_len, "response")?,
            )
        };
        Ok(execute_batch(&handle.db, &handle.families, request, response)?)
    })
}

/// `static native boolean holdsFile(long db, String name)`: whether the database's current
/// version lists the file (see `Db::holds_file`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_holdsFile<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    name: JString<'l>,
) -> jboolean {
    guard(&mut env, |env| {
        let name = string(env, &name, "name")?;
        let handle = handles::database(db)?;
        Ok(jboolean::from(handle.db.holds_file(&name)))
    })
}

/// `static native void takeBackFiles(long db, String[] names)`: the database owns again files it
/// handed over to checkpoints that all came to nothing (see `Db::take_back`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_takeBackFiles<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    names: JObjectArray<'l>,
) {
    guard(&mut env, |env| {
        let names = strings(env, &names, "names")?;
        let handle = handles::database(db)?;
        handle.db.take_back(&names)?;
        Ok(())
    })
}

/// `static native void compact(long db)`: compacts every level down to the last and waits.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_compact<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
) {
    guard(&mut env, |_| {
        let handle = handles::database(db)?;
        handle.db.compact_all()?;
        Ok(())
    })
}
