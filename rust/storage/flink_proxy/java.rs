//! The JVM side of the proxy: the bridge classes and method IDs, resolved once, and [`call`],
//! which runs one JNI call from any thread with the discipline every call needs (daemon attach,
//! a local reference frame, a pending exception turned into an [`Error`] and cleared).

use ::jni::JNIEnv;
use ::jni::objects::{GlobalRef, JClass, JMethodID, JStaticMethodID, JThrowable};
use ::jni::signature::{Primitive, ReturnType};
use once_cell::sync::OnceCell;

pub(super) use crate::jvm::JavaRef;
use crate::jvm::{attach_daemon, java_vm, take_pending_exception};
use crate::{Error, ErrorKind, Result};

/// Local references one call may create before its frame is popped; -Xcheck:jni warns past this
/// plus 32. A read of a checkpoint on HDFS through the tools holds about 49 in one call.
const LOCAL_FRAME_CAPACITY: i32 = 64;

const BRIDGE: &str = "org/forstrs/fs/FlinkFsBridge";
const READER: &str = "org/forstrs/fs/FlinkFsReader";
const WRITER: &str = "org/forstrs/fs/FlinkFsWriter";
const LISTING: &str = "org/forstrs/fs/FileListing";

/// Global references to the bridge classes and their method IDs.
pub(super) struct Classes {
    pub bridge: GlobalRef,
    pub for_uri: JStaticMethodID,
    pub file_system_class: JMethodID,
    pub size: JMethodID,
    pub list: JMethodID,
    pub delete: JMethodID,
    pub rename: JMethodID,
    pub copy: JMethodID,
    pub create: JMethodID,
    pub put: JMethodID,
    pub open_reader: JMethodID,
    pub listing_paths: JMethodID,
    pub listing_sizes: JMethodID,
    pub reader_read_fully: JMethodID,
    pub reader_read_kind: JMethodID,
    pub reader_close: JMethodID,
    pub writer_write: JMethodID,
    pub writer_finish: JMethodID,
    pub writer_abort: JMethodID,
    pub file_not_found: GlobalRef,
    pub throwable_to_string: JMethodID,
    pub throwable_get_cause: JMethodID,
}

static CLASSES: OnceCell<Classes> = OnceCell::new();

/// The bridge classes, resolved on first use.
///
/// The first use must be on a thread whose Java caller's class loader sees this jar: `FindClass`
/// resolves through the class loader of the Java method on top of the calling thread's stack, and
/// a thread attached from native code has none (only the system class loader). Opening a proxy
/// storage from `ForStNative.open` (a Java thread, our jar's loader) does this; a failure is not
/// remembered, so a later call from the right thread can still succeed.
pub(super) fn classes() -> Result<&'static Classes> {
    CLASSES.get_or_try_init(|| {
        let mut env = attach_daemon()?;
        let resolved = env.with_local_frame(LOCAL_FRAME_CAPACITY, |env| {
            resolve(env).map_err(|e| {
                let pending = describe_pending(env);
                CallError(Error::invalid(format!(
                    "the Flink file-system proxy cannot load its Java classes ({e}{pending}); is \
                     the forstjni jar on the class path of the JVM, together with Flink?"
                )))
            })
        });
        resolved.map_err(|e| e.0)
    })
}

/// Whether a JVM is there to proxy to (the library was loaded by Java).
pub(super) fn jvm_present() -> bool {
    java_vm().is_some()
}

fn resolve(env: &mut JNIEnv<'_>) -> ::jni::errors::Result<Classes> {
    let bridge = env.find_class(BRIDGE)?;
    let reader = env.find_class(READER)?;
    let writer = env.find_class(WRITER)?;
    let listing = env.find_class(LISTING)?;
    let file_not_found = env.find_class("java/io/FileNotFoundException")?;
    let throwable = env.find_class("java/lang/Throwable")?;
    let bridge_type = "Lorg/forstrs/fs/FlinkFsBridge;";
    Ok(Classes {
        for_uri: env.get_static_method_id(
            &bridge,
            "forUri",
            format!("(Ljava/lang/String;){bridge_type}"),
        )?,
        file_system_class: env.get_method_id(&bridge, "fileSystemClass", "()Ljava/lang/String;")?,
        size: env.get_method_id(&bridge, "size", "(Ljava/lang/String;)J")?,
        list: env.get_method_id(
            &bridge,
            "list",
            "(Ljava/lang/String;)Lorg/forstrs/fs/FileListing;",
        )?,
        delete: env.get_method_id(&bridge, "delete", "(Ljava/lang/String;)V")?,
        rename: env.get_method_id(&bridge, "rename", "(Ljava/lang/String;Ljava/lang/String;)V")?,
        copy: env.get_method_id(&bridge, "copy", "(Ljava/lang/String;Ljava/lang/String;)Z")?,
        create: env.get_method_id(
            &bridge,
            "create",
            "(Ljava/lang/String;)Lorg/forstrs/fs/FlinkFsWriter;",
        )?,
        put: env.get_method_id(&bridge, "put", "(Ljava/lang/String;Ljava/nio/ByteBuffer;IZ)V")?,
        open_reader: env.get_method_id(
            &bridge,
            "openReader",
            "(Ljava/lang/String;)Lorg/forstrs/fs/FlinkFsReader;",
        )?,
        listing_paths: env.get_method_id(&listing, "paths", "()[Ljava/lang/String;")?,
        listing_sizes: env.get_method_id(&listing, "sizes", "()[J")?,
        reader_read_fully: env.get_method_id(&reader, "readFully", "(JLjava/nio/ByteBuffer;I)V")?,
        reader_read_kind: env.get_method_id(&reader, "readKind", "()Ljava/lang/String;")?,
        reader_close: env.get_method_id(&reader, "close", "()V")?,
        writer_write: env.get_method_id(&writer, "write", "(Ljava/nio/ByteBuffer;I)V")?,
        writer_finish: env.get_method_id(&writer, "finish", "()V")?,
        writer_abort: env.get_method_id(&writer, "abort", "()V")?,
        throwable_to_string: env.get_method_id(&throwable, "toString", "()Ljava/lang/String;")?,
        throwable_get_cause: env.get_method_id(
            &throwable,
            "getCause",
            "()Ljava/lang/Throwable;",
        )?,
        bridge: env.new_global_ref(&bridge)?,
        file_not_found: env.new_global_ref(&file_not_found)?,
    })
}

/// Our error inside `with_local_frame`, which wants an error type that a JNI error converts into.
struct CallError(Error);

impl From<::jni::errors::Error> for CallError {
    fn from(e: ::jni::errors::Error) -> Self {
        CallError(Error::io("jvm", format!("JNI call failed: {e}")))
    }
}

/// Runs `body` (JNI calls for `what` on `path`) on the calling thread, attached to the JVM as a
/// daemon, inside a local reference frame (threads of native pools stay attached for their whole
/// life, so local references must not pile up). A Java exception left by `body` is cleared and
/// returned as an error naming `path`, with the text of the exception and its causes and a kind
/// from their classes (see [`kind_of_class`]).
///
/// Blocks while Java runs: call it from a blocking-pool thread, never from an async worker.
pub(super) fn call<T>(
    path: &str,
    what: &str,
    body: impl FnOnce(&mut JNIEnv<'_>, &Classes) -> ::jni::errors::Result<T>,
) -> Result<T> {
    let classes = classes()?;
    let mut env = attach_daemon()?;
    let outcome = env.with_local_frame(LOCAL_FRAME_CAPACITY, |env| match body(env, classes) {
        Ok(value) => Ok(value),
        Err(e) => Err(CallError(java_error(env, classes, path, what, e))),
    });
    outcome.map_err(|e| e.0)
}

/// The error for a failed JNI call; takes and clears the pending exception, if any.
fn java_error(
    env: &mut JNIEnv<'_>,
    classes: &Classes,
    path: &str,
    what: &str,
    error: ::jni::errors::Error,
) -> Error {
    if !env.exception_check().unwrap_or(false) {
        return Error::io(path, format!("{what}: JNI call failed: {error}"));
    }
    let Ok(exception) = env.exception_occurred() else {
        let _ = env.exception_clear();
        return Error::io(path, format!("{what}: Java exception (cannot be read)"));
    };
    let _ = env.exception_clear();
    let not_found = <&JClass>::from(classes.file_not_found.as_obj());
    let not_found = env.is_instance_of(&exception, not_found).unwrap_or(false);
    let chain = throwable_chain(env, classes, exception);
    let text = chain.join("; caused by: ");
    // Else the first exception of the chain whose class says what happened decides.
    let kind = match not_found {
        true => Some(ErrorKind::NotFound),
        false => chain.iter().find_map(|t| kind_of_class(t.split(':').next().unwrap_or(t))),
    };
    Error::storage(kind.unwrap_or(ErrorKind::Other), path, format!("{what}: {text}"), None)
}

/// Causes followed at most: enough for Flink's and Hadoop's wrapping, bounded against cycles.
const MAX_CAUSES: usize = 8;

/// `toString()` of the exception and of each of its causes, outermost first. Each level's
/// references are deleted before the next, so the chain fits any local frame.
fn throwable_chain(
    env: &mut JNIEnv<'_>,
    classes: &Classes,
    exception: JThrowable<'_>,
) -> Vec<String> {
    let mut texts = Vec::new();
    let mut current = exception;
    for _ in 0..MAX_CAUSES {
        texts.push(throwable_text(env, classes, &current));
        // SAFETY: the method ID is Throwable.getCause()Ljava/lang/Throwable; and `current` is a
        // Throwable; no arguments.
        let cause = unsafe {
            env.call_method_unchecked(
                &current,
                classes.throwable_get_cause,
                ReturnType::Object,
                &[],
            )
        };
        let cause = match cause.and_then(|v| v.l()) {
            Ok(cause) if !cause.is_null() => JThrowable::from(cause),
            _ => {
                let _ = env.exception_clear();
                break;
            }
        };
        let same = env.is_same_object(&cause, &current).unwrap_or(true);
        let _ = env.delete_local_ref(std::mem::replace(&mut current, cause));
        if same {
            break;
        }
    }
    let _ = env.delete_local_ref(current);
    texts
}

/// The kind of a Java exception class, if its name tells.
fn kind_of_class(class: &str) -> Option<ErrorKind> {
    Some(match class {
        "java.io.FileNotFoundException" | "java.nio.file.NoSuchFileException" => {
            ErrorKind::NotFound
        }
        "java.nio.file.AccessDeniedException"
        | "org.apache.hadoop.security.AccessControlException"
        | "org.apache.hadoop.fs.permission.AccessControlException" => ErrorKind::PermissionDenied,
        "java.nio.file.FileAlreadyExistsException"
        | "org.apache.hadoop.fs.FileAlreadyExistsException" => ErrorKind::AlreadyExists,
        "java.net.SocketTimeoutException"
        | "java.net.ConnectException"
        | "java.net.SocketException"
        | "java.net.NoRouteToHostException"
        | "java.io.InterruptedIOException"
        | "java.util.concurrent.TimeoutException"
        | "org.apache.hadoop.ipc.RetriableException" => ErrorKind::Transient,
        _ => return None,
    })
}

/// `Throwable.toString()`: the exception's class name and message.
fn throwable_text(env: &mut JNIEnv<'_>, classes: &Classes, exception: &JThrowable<'_>) -> String {
    // SAFETY: the method ID is Throwable.toString()Ljava/lang/String; and `exception` is a
    // Throwable; no arguments.
    let text = unsafe {
        env.call_method_unchecked(exception, classes.throwable_to_string, ReturnType::Object, &[])
    };
    match text.and_then(|v| v.l()) {
        Ok(s) if !s.is_null() => {
            let s = ::jni::objects::JString::from(s);
            let text =
                env.get_string(&s).map(String::from).unwrap_or_else(|_| "(unreadable)".into());
            let _ = env.delete_local_ref(s);
            text
        }
        _ => {
            // toString itself threw: report what we can, never leave an exception pending.
            let _ = env.exception_clear();
            "(exception without description)".into()
        }
    }
}

/// Text of an exception pending after a failed lookup (cleared), for the error message.
fn describe_pending(env: &mut JNIEnv<'_>) -> String {
    take_pending_exception(env).map(|t| format!(": {t}")).unwrap_or_default()
}

/// `ReturnType` of a `void` method.
pub(super) const VOID: ReturnType = ReturnType::Primitive(Primitive::Void);
