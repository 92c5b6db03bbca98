//! The natives that move checkpoint files through Java (`checkpointReadFile`, `file*`), called as
//! the JVM calls them: good input moves the exact bytes, bad input (unknown handles, missing
//! files, bad buffers and URLs) becomes a Java exception and never a crash.

use std::sync::{Arc, Mutex};

use ::jni::JNIEnv;
use ::jni::objects::{JByteBuffer, JClass, JObject, JObjectArray, JString};

use super::checkpoints::Java_org_forstrs_jni_ForStNative_checkpointReadFile as read_file;
use super::files::{
    Java_org_forstrs_jni_ForStNative_fileAbort as file_abort,
    Java_org_forstrs_jni_ForStNative_fileCreate as file_create,
    Java_org_forstrs_jni_ForStNative_fileDelete as file_delete,
    Java_org_forstrs_jni_ForStNative_fileFinish as file_finish,
    Java_org_forstrs_jni_ForStNative_fileWrite as file_write,
};
use super::handles::{CHECKPOINTS, CheckpointHandle, DbHandle};
use crate::jvm::test_jvm::vm;
use crate::lsm::{Db, DbOptions};
use crate::storage::{LocalBackend, StorageOptions, open_storage};
use crate::test_support::incompressible;

/// Calls a native method with a clone of `env` (as the JVM would pass it) and a null class, in a
/// local frame of its own with the JVM's 32 references (so -Xcheck:jni checks the native's
/// references, not the test's); returns its result and the exception it left pending, as
/// (class name, message), cleared.
macro_rules! call {
    ($env:expr, $native:ident($($arg:expr),* $(,)?)) => {{
        $env.push_local_frame(32).unwrap();
        // SAFETY: the clone lives only for this call, on this thread, while `$env` is not used:
        // what the JVM does when it passes its environment to a native method.
        let result = $native(
            unsafe { $env.unsafe_clone() },
            JClass::from(JObject::null()),
            $($arg),*
        );
        let thrown = take_exception($env);
        // SAFETY: no reference made in this frame outlives it (the result is a primitive, the
        // exception was read into Rust strings).
        unsafe { $env.pop_local_frame(&JObject::null()) }.unwrap();
        (result, thrown)
    }};
}

fn take_exception(env: &mut JNIEnv<'_>) -> Option<(String, String)> {
    if !env.exception_check().unwrap() {
        return None;
    }
    let exception = env.exception_occurred().unwrap();
    env.exception_clear().unwrap();
    let class =
        env.call_method(&exception, "getClass", "()Ljava/lang/Class;", &[]).unwrap().l().unwrap();
    let name = java_string(env, &class, "getName");
    let message = java_string(env, &exception, "getMessage");
    Some((name, message))
}

fn java_string(env: &mut JNIEnv<'_>, object: &JObject<'_>, method: &str) -> String {
    let value = env.call_method(object, method, "()Ljava/lang/String;", &[]).unwrap().l().unwrap();
    if value.is_null() {
        String::new()
    } else {
        env.get_string(&JString::from(value)).unwrap().into()
    }
}

/// Asserts that the call threw `class` with a message containing `text`.
fn assert_thrown(thrown: Option<(String, String)>, class: &str, text: &str) {
    let (thrown_class, message) = thrown.unwrap_or_else(|| panic!("expected {class}"));
    assert_eq!(thrown_class, class, "{message}");
    assert!(message.contains(text), "{message:?} should mention {text:?}");
}

/// A new local reference to `s`, for a call that takes its argument by value.
fn local_string<'l>(env: &mut JNIEnv<'l>, s: &JString<'_>) -> JString<'l> {
    JString::from(env.new_local_ref(s).unwrap())
}

fn local_buffer<'l>(env: &mut JNIEnv<'l>, b: &JByteBuffer<'_>) -> JByteBuffer<'l> {
    JByteBuffer::from(env.new_local_ref(b).unwrap())
}

fn no_options() -> JObjectArray<'static> {
    JObjectArray::from(JObject::null())
}

/// A direct ByteBuffer over `memory`, which must outlive every use of the buffer.
fn direct_buffer<'l>(env: &mut JNIEnv<'l>, memory: &mut [u8]) -> JByteBuffer<'l> {
    // SAFETY: `memory` is a live, exclusively borrowed allocation of `memory.len()` bytes; each
    // test keeps it alive (and untouched by Rust) while native methods use the buffer.
    unsafe { env.new_direct_byte_buffer(memory.as_mut_ptr(), memory.len()).unwrap() }
}

fn file_url(dir: &std::path::Path) -> String {
    format!("file://{}", dir.display())
}

/// A DB in `dir` with one flushed SST of about 200 KB, and a durable checkpoint of it registered
/// as a handle. Returns (db, checkpoint handle, SST name).
fn checkpointed_db(dir: &std::path::Path, options: StorageOptions) -> (Arc<DbHandle>, i64, String) {
    let storage = open_storage(&file_url(dir), &options).unwrap();
    let db = Db::open_with_storage(storage, DbOptions::default()).unwrap();
    let cf = db.create_cf("state").unwrap();
    // Incompressible, so the file has the size the test needs.
    for (i, value) in incompressible(7, 2_000 * 100).chunks(100).enumerate() {
        db.put(&cf, format!("key-{i:06}").as_bytes(), value).unwrap();
    }
    let mut checkpoint = db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let files = checkpoint.files().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].0.clone();
    let db = Arc::new(DbHandle::new(db, StorageOptions::default()));
    let handle = CHECKPOINTS.insert(CheckpointHandle {
        checkpoint: Mutex::new(checkpoint),
        db: db.clone(),
        storage_options: StorageOptions::default(),
        log_span: Default::default(),
    });
    (db, handle, name)
}

#[test]
fn read_file_streams_a_checkpoint_file_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, checkpoint, name) = checkpointed_db(dir.path(), StorageOptions::default());
    let mut guard = vm().attach_current_thread().unwrap();
    let env: &mut JNIEnv<'_> = &mut guard;
    let mut memory = vec![0u8; 70_000];
    let buffer = direct_buffer(env, &mut memory);
    let jname = env.new_string(&name).unwrap();

    let expected = std::fs::read(dir.path().join(&name)).unwrap();
    assert!(expected.len() > 3 * 64_000, "{} bytes", expected.len());
    let mut streamed = Vec::new();
    // Bounded: one more round than the chunks the file needs.
    for _ in 0..=expected.len() / 64_000 + 1 {
        let (read, thrown) = call!(
            env,
            read_file(
                checkpoint,
                local_string(env, &jname),
                streamed.len() as i64,
                local_buffer(env, &buffer),
                100,
                64_000
            )
        );
        assert_eq!(thrown, None);
        assert!((0..=64_000).contains(&read), "{read}");
        streamed.extend_from_slice(&memory[100..100 + read as usize]);
        if read < 64_000 {
            break;
        }
    }
    assert_eq!(streamed, expected);

    // At and past the end: nothing.
    for position in [expected.len() as i64, expected.len() as i64 + 5] {
        let (read, thrown) = call!(
            env,
            read_file(
                checkpoint,
                local_string(env, &jname),
                position,
                local_buffer(env, &buffer),
                0,
                10
            )
        );
        assert_eq!((read, thrown), (0, None));
    }
    CHECKPOINTS.remove(checkpoint).unwrap();
}

#[test]
fn read_file_rejects_bad_input_with_exceptions() {
    let dir = tempfile::tempdir().unwrap();
    // object_store's local files open per read: a file deleted underneath is really gone.
    let options = StorageOptions { local_backend: LocalBackend::ObjectStore, ..Default::default() };
    let (_db, checkpoint, name) = checkpointed_db(dir.path(), options);
    let mut guard = vm().attach_current_thread().unwrap();
    let env: &mut JNIEnv<'_> = &mut guard;
    let mut memory = vec![0u8; 1024];
    let buffer = direct_buffer(env, &mut memory);
    let name = env.new_string(&name).unwrap();
    let other = env.new_string("000999-unknown.sst").unwrap();

    let (_, thrown) =
        call!(env, read_file(-7, local_string(env, &name), 0, local_buffer(env, &buffer), 0, 10));
    assert_thrown(thrown, "java.lang.IllegalStateException", "checkpoint handle -7");
    let (_, thrown) =
        call!(env, read_file(checkpoint, other, 0, local_buffer(env, &buffer), 0, 10));
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "not a file of this checkpoint");
    let (_, thrown) = call!(
        env,
        read_file(checkpoint, JString::from(JObject::null()), 0, local_buffer(env, &buffer), 0, 10)
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "name is null");
    let (_, thrown) = call!(
        env,
        read_file(checkpoint, local_string(env, &name), -1, local_buffer(env, &buffer), 0, 10)
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "negative position");
    let (_, thrown) = call!(
        env,
        read_file(checkpoint, local_string(env, &name), 0, local_buffer(env, &buffer), 1000, 25)
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "exceeds the buffer capacity");
    let (_, thrown) = call!(
        env,
        read_file(
            checkpoint,
            local_string(env, &name),
            0,
            JByteBuffer::from(JObject::null()),
            0,
            10
        )
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "output buffer is null");
    let heap = env
        .call_static_method(
            "java/nio/ByteBuffer",
            "allocate",
            "(I)Ljava/nio/ByteBuffer;",
            &[16.into()],
        )
        .unwrap()
        .l()
        .unwrap();
    let (_, thrown) = call!(
        env,
        read_file(checkpoint, local_string(env, &name), 0, JByteBuffer::from(heap), 0, 10)
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "not a direct ByteBuffer");

    // The file vanished from storage.
    std::fs::remove_file(dir.path().join(name_of(env, &name))).unwrap();
    let (read, thrown) = call!(
        env,
        read_file(checkpoint, local_string(env, &name), 0, local_buffer(env, &buffer), 0, 10)
    );
    assert_eq!(read, 0);
    assert_thrown(thrown, "java.io.FileNotFoundException", &name_of(env, &name));

    // A released checkpoint is a closed handle.
    CHECKPOINTS.remove(checkpoint).unwrap();
    let (_, thrown) = call!(
        env,
        read_file(checkpoint, local_string(env, &name), 0, local_buffer(env, &buffer), 0, 10)
    );
    assert_thrown(thrown, "java.lang.IllegalStateException", "unknown or closed");
}

fn name_of(env: &mut JNIEnv<'_>, name: &JString<'_>) -> String {
    env.get_string(name).unwrap().into()
}

#[test]
fn file_writer_publishes_the_bytes_on_finish_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut guard = vm().attach_current_thread().unwrap();
    let env: &mut JNIEnv<'_> = &mut guard;
    let url = env.new_string(file_url(dir.path())).unwrap();
    let name = env.new_string("restore-staging/a.sst").unwrap();
    let content: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut memory = vec![0u8; 50_000];
    let buffer = direct_buffer(env, &mut memory);

    let (file, thrown) =
        call!(env, file_create(local_string(env, &url), no_options(), local_string(env, &name)));
    assert_eq!(thrown, None);
    assert!(file > 0);
    for chunk in content.chunks(40_000) {
        memory[10..10 + chunk.len()].copy_from_slice(chunk);
        let (_, thrown) =
            call!(env, file_write(file, local_buffer(env, &buffer), 10, chunk.len() as i32));
        assert_eq!(thrown, None);
    }
    let published = dir.path().join("restore-staging/a.sst");
    assert!(!published.exists(), "visible before finish");
    let (size, thrown) = call!(env, file_finish(file));
    assert_eq!((size, thrown), (content.len() as i64, None));
    assert_eq!(std::fs::read(&published).unwrap(), content);

    // The handle is closed now.
    let (_, thrown) = call!(env, file_write(file, local_buffer(env, &buffer), 0, 1));
    assert_thrown(thrown, "java.lang.IllegalStateException", "file writer handle");
    let (_, thrown) = call!(env, file_finish(file));
    assert_thrown(thrown, "java.lang.IllegalStateException", "file writer handle");
    let (_, thrown) = call!(env, file_abort(file));
    assert_eq!(thrown, None, "abort of a closed handle is a no-op");

    let (_, thrown) =
        call!(env, file_delete(local_string(env, &url), no_options(), local_string(env, &name)));
    assert_eq!(thrown, None);
    assert!(!published.exists());
    let (_, thrown) = call!(env, file_delete(local_string(env, &url), no_options(), name));
    assert_eq!(thrown, None, "deleting a missing file is not an error");
}

#[test]
fn file_writer_abort_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut guard = vm().attach_current_thread().unwrap();
    let env: &mut JNIEnv<'_> = &mut guard;
    let url = env.new_string(file_url(dir.path())).unwrap();
    let name = env.new_string("b.sst").unwrap();
    let mut memory = vec![1u8; 1000];
    let buffer = direct_buffer(env, &mut memory);
    let (file, _) = call!(env, file_create(url, no_options(), name));
    let (_, thrown) = call!(env, file_write(file, buffer, 0, 1000));
    assert_eq!(thrown, None);
    let (_, thrown) = call!(env, file_abort(file));
    assert_eq!(thrown, None);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn file_writer_rejects_bad_input_with_exceptions() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let mut guard = vm().attach_current_thread().unwrap();
    let env: &mut JNIEnv<'_> = &mut guard;
    let name = env.new_string("x.sst").unwrap();

    let relative = env.new_string("relative/dir").unwrap();
    let (_, thrown) = call!(env, file_create(relative, no_options(), local_string(env, &name)));
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "relative/dir");
    let (_, thrown) = call!(
        env,
        file_create(JString::from(JObject::null()), no_options(), local_string(env, &name))
    );
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "dirUri is null");
    let url = env.new_string(file_url(dir.path())).unwrap();
    let escaping = env.new_string("../outside.sst").unwrap();
    let (_, thrown) = call!(env, file_create(local_string(env, &url), no_options(), escaping));
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "relative segments");
    let bad_options = env.new_object_array(1, "java/lang/String", JObject::null()).unwrap();
    let odd = env.new_string("fs.force-proxy").unwrap();
    env.set_object_array_element(&bad_options, 0, odd).unwrap();
    let (_, thrown) =
        call!(env, file_create(local_string(env, &url), bad_options, local_string(env, &name)));
    assert!(thrown.is_some(), "an option without a value is refused");
    // A directory that cannot be created: a regular file is in the way.
    let under_file = env.new_string(file_url(&blocker.join("sub"))).unwrap();
    let (file, thrown) =
        call!(env, file_create(under_file, no_options(), local_string(env, &name)));
    assert_eq!(file, 0);
    assert_thrown(thrown, "java.io.IOException", "");

    let mut memory = vec![0u8; 8];
    let buffer = direct_buffer(env, &mut memory);
    let (_, thrown) = call!(env, file_write(424_242, buffer, 0, 8));
    assert_thrown(thrown, "java.lang.IllegalStateException", "file writer handle 424242");
    let (file, _) = call!(env, file_create(url, no_options(), local_string(env, &name)));
    let (_, thrown) = call!(env, file_write(file, JByteBuffer::from(JObject::null()), 0, 8));
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "data buffer is null");
    let small = direct_buffer(env, &mut memory);
    let (_, thrown) = call!(env, file_write(file, small, 4, 8));
    assert_thrown(thrown, "java.lang.IllegalArgumentException", "exceeds the buffer capacity");
    // Failed writes leave the file open; abort cleans up.
    let (_, thrown) = call!(env, file_abort(file));
    assert_eq!(thrown, None);
    let (_, thrown) = call!(env, file_finish(file));
    assert_thrown(thrown, "java.lang.IllegalStateException", "unknown or already closed");
    assert!(!dir.path().join("x.sst").exists());
}
