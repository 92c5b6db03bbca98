//! Runs each native method body under `catch_unwind` and turns its failure into a Java exception.
//!
//! | failure | Java exception |
//! |---|---|
//! | `ErrorKind::NotFound` | `java.io.FileNotFoundException` |
//! | `ErrorKind::AlreadyExists` | `java.nio.file.FileAlreadyExistsException` |
//! | `ErrorKind::PermissionDenied` | `java.nio.file.AccessDeniedException` |
//! | `ErrorKind::Corruption` | `org.forstrs.jni.ForStCorruptionException` (an `IOException`) |
//! | `ErrorKind::Transient`, `ErrorKind::Other` | `java.io.IOException` |
//! | `ErrorKind::InvalidArgument`, bad input checked here | `java.lang.IllegalArgumentException` |
//! | `ErrorKind::Closed`, unknown or closed handle | `java.lang.IllegalStateException` |
//! | a panic | `java.lang.RuntimeException` with the panic text |
//!
//! Every message is the Rust error's text, which includes its causes. A failed database
//! (`Error::Failed`) throws `IllegalStateException` whose Java cause is the exception of the error
//! that failed it, so a Flink task fails over with the original error in its stack trace.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ::jni::JNIEnv;
use ::jni::objects::{JObject, JThrowable, JValue};

use super::handles;
use crate::{Error, ErrorKind};

/// Why a native method failed.
#[derive(Debug)]
pub enum Failure {
    Engine(Error),
    IllegalArgument(String),
    IllegalState(String),
    /// A JNI call failed; if it left a Java exception pending, that exception is what Java sees.
    Jni(::jni::errors::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<::jni::errors::Error> for Failure {
    fn from(e: ::jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

pub type JniResult<T> = std::result::Result<T, Failure>;

pub fn illegal_argument<T>(message: impl Into<String>) -> JniResult<T> {
    Err(Failure::IllegalArgument(message.into()))
}

/// Runs `body`; on error or panic throws the matching Java exception and returns `R::default()`
/// (which Java never sees, since the exception is pending when the native method returns).
pub fn guard<'local, R: Default>(
    env: &mut JNIEnv<'local>,
    body: impl FnOnce(&mut JNIEnv<'local>) -> JniResult<R>,
) -> R {
    let mark = handles::touched_mark();
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env)));
    // Whatever a panic left half-done in a database the call worked on, nobody may go on using
    // it: it fails for every caller, as after a panic in background work.
    let panicked = outcome.as_ref().err().map(|p| Error::from_panic("a native call", p.as_ref()));
    handles::forget_touched(mark, panicked.as_ref());
    match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(failure)) => {
            throw(env, failure);
            R::default()
        }
        Err(payload) => {
            throw_class(
                env,
                "java/lang/RuntimeException",
                &format!("panic in ForSt-RS native code: {}", panic_text(&payload)),
            );
            R::default()
        }
    }
}

fn throw(env: &mut JNIEnv<'_>, failure: Failure) {
    let (class, message) = match failure {
        Failure::Engine(e) => return throw_error(env, &e),
        Failure::IllegalArgument(m) => ("java/lang/IllegalArgumentException", m),
        Failure::IllegalState(m) => ("java/lang/IllegalStateException", m),
        Failure::Jni(e) => ("java/lang/RuntimeException", format!("JNI call failed: {e}")),
    };
    throw_class(env, class, &message);
}

/// The Java exception class of an engine error's kind.
fn exception_class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "java/io/FileNotFoundException",
        ErrorKind::AlreadyExists => "java/nio/file/FileAlreadyExistsException",
        ErrorKind::PermissionDenied => "java/nio/file/AccessDeniedException",
        ErrorKind::Corruption => "org/forstrs/jni/ForStCorruptionException",
        ErrorKind::InvalidArgument => "java/lang/IllegalArgumentException",
        ErrorKind::Closed => "java/lang/IllegalStateException",
        ErrorKind::Transient | ErrorKind::Other => "java/io/IOException",
    }
}

fn throw_error(env: &mut JNIEnv<'_>, e: &Error) {
    if env.exception_check().unwrap_or(false) {
        return;
    }
    match new_exception(env, e) {
        Ok(exception) => {
            let thrown = env.throw(&exception);
            // The pending exception is held by the JVM; this reference is no longer needed.
            let _ = env.delete_local_ref(exception);
            if thrown.is_err() && !env.exception_check().unwrap_or(false) {
                throw_class(env, "java/lang/RuntimeException", &e.to_string());
            }
        }
        Err(_) => {
            // Whatever went wrong building it, Java must still see the error's text.
            let _ = env.exception_clear();
            throw_class(env, "java/io/IOException", &e.to_string());
        }
    }
}

/// The exception for `e`; a failed database's has the exception of its cause as cause.
fn new_exception<'local>(
    env: &mut JNIEnv<'local>,
    e: &Error,
) -> ::jni::errors::Result<JThrowable<'local>> {
    let message = env.new_string(e.to_string())?;
    let args = [JValue::Object(&message)];
    let created = match env.new_object(exception_class(e.kind()), "(Ljava/lang/String;)V", &args) {
        // Only our own class can be missing (a test JVM without the jar): still an IOException.
        Err(_) if e.kind() == ErrorKind::Corruption => {
            env.exception_clear()?;
            env.new_object("java/io/IOException", "(Ljava/lang/String;)V", &args)
        }
        other => other,
    };
    // Native code called from a Rust thread may throw many times before returning to Java.
    env.delete_local_ref(message)?;
    let exception = created?;
    if let Error::Failed(cause) = e {
        let cause = JObject::from(new_exception(env, cause)?);
        let signature = "(Ljava/lang/Throwable;)Ljava/lang/Throwable;";
        let linked = env.call_method(&exception, "initCause", signature, &[JValue::Object(&cause)]);
        env.delete_local_ref(cause)?;
        if let Ok(returned) = linked.and_then(|v| v.l()) {
            // initCause returns `this`: one more reference to drop.
            env.delete_local_ref(returned)?;
        } else {
            return Err(::jni::errors::Error::JavaException);
        }
    }
    Ok(JThrowable::from(exception))
}

fn throw_class(env: &mut JNIEnv<'_>, class: &str, message: &str) {
    // An exception already pending (e.g. from a failed JNI call) is the more precise one: keep it.
    if env.exception_check().unwrap_or(false) {
        return;
    }
    if env.throw_new(class, message).is_err() && !env.exception_check().unwrap_or(false) {
        // Could not even find the class: fall back to the one class every JVM has loaded.
        let _ = env.throw_new("java/lang/RuntimeException", message);
    }
}

fn panic_text(payload: &Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use ::jni::objects::{JObject, JString};

    use super::*;
    use crate::jvm::test_jvm::vm;

    fn call_string(env: &mut JNIEnv<'_>, object: &JObject<'_>, method: &str) -> String {
        let value =
            env.call_method(object, method, "()Ljava/lang/String;", &[]).unwrap().l().unwrap();
        if value.is_null() {
            String::new()
        } else {
            env.get_string(&JString::from(value)).unwrap().into()
        }
    }

    /// Runs `body` under `guard`; returns its result and the pending exception's (class, message).
    fn run(
        body: impl FnOnce(&mut JNIEnv<'_>) -> JniResult<i32>,
    ) -> (i32, Option<(String, String)>) {
        let (result, exception) = run_with_cause(body);
        (result, exception.map(|(thrown, _)| thrown))
    }

    /// As [`run`], with the (class, message) of the exception's cause too.
    #[allow(clippy::type_complexity)]
    fn run_with_cause(
        body: impl FnOnce(&mut JNIEnv<'_>) -> JniResult<i32>,
    ) -> (i32, Option<((String, String), Option<(String, String)>)>) {
        let mut env = vm().attach_current_thread().unwrap();
        let result = guard(&mut env, |env| body(env));
        if !env.exception_check().unwrap() {
            return (result, None);
        }
        let exception = env.exception_occurred().unwrap();
        env.exception_clear().unwrap();
        let thrown = describe(&mut env, &exception);
        let cause = env
            .call_method(&exception, "getCause", "()Ljava/lang/Throwable;", &[])
            .unwrap()
            .l()
            .unwrap();
        let cause = (!cause.is_null()).then(|| describe(&mut env, &cause));
        (result, Some((thrown, cause)))
    }

    /// (class name, message) of a Java exception.
    fn describe(env: &mut JNIEnv<'_>, exception: &JObject<'_>) -> (String, String) {
        let class = env
            .call_method(exception, "getClass", "()Ljava/lang/Class;", &[])
            .unwrap()
            .l()
            .unwrap();
        (call_string(env, &class, "getName"), call_string(env, exception, "getMessage"))
    }

    fn thrown(failure: Failure) -> (String, String) {
        run(|_| Err(failure)).1.expect("an exception")
    }

    #[test]
    fn success_throws_nothing() {
        assert_eq!(run(|_| Ok(7)), (7, None));
    }

    #[test]
    fn a_panic_becomes_a_runtime_exception_with_its_text() {
        let (result, exception) = run(|_| panic!("boom {}", 42));
        assert_eq!(result, 0);
        let (class, message) = exception.unwrap();
        assert_eq!(class, "java.lang.RuntimeException");
        assert!(message.contains("boom 42"), "{message}");
        // The JVM and the thread keep working.
        assert_eq!(run(|_| Ok(1)), (1, None));
    }

    #[test]
    fn engine_errors_map_to_their_java_exceptions() {
        let permission = |text: &str| Error::storage(ErrorKind::PermissionDenied, "p", text, None);
        let cases = [
            // The test JVM has no jar: the corruption class falls back to IOException.
            (
                Error::corruption("000001.sst", 17, "bad checksum"),
                "java.io.IOException",
                "000001.sst",
            ),
            (Error::io("s3://b/x", "disk full"), "java.io.IOException", "disk full"),
            (Error::transient("s3://b/x", "connection reset"), "java.io.IOException", "reset"),
            (Error::NotFound("MANIFEST-9".into()), "java.io.FileNotFoundException", "MANIFEST-9"),
            (
                Error::storage(ErrorKind::AlreadyExists, "MANIFEST-3", "put", None),
                "java.nio.file.FileAlreadyExistsException",
                "MANIFEST-3",
            ),
            (permission("no write access"), "java.nio.file.AccessDeniedException", "no write"),
            (Error::invalid("key too long"), "java.lang.IllegalArgumentException", "key too long"),
            (
                Error::Closed("db is closed".into()),
                "java.lang.IllegalStateException",
                "db is closed",
            ),
        ];
        for (error, class, text) in cases {
            let (thrown_class, message) = thrown(Failure::Engine(error));
            assert_eq!(thrown_class, class);
            assert!(message.contains(text), "{message}");
        }
        assert_eq!(
            thrown(Failure::IllegalState("handle 5".into())).0,
            "java.lang.IllegalStateException"
        );
        assert_eq!(
            thrown(Failure::IllegalArgument("null".into())).0,
            "java.lang.IllegalArgumentException"
        );
    }

    #[test]
    fn a_failed_database_throws_with_its_cause_as_java_cause() {
        let cause = Error::storage(ErrorKind::PermissionDenied, "s3://b/db", "put", None);
        let failed = Error::Failed(std::sync::Arc::new(cause));
        let (result, exception) = run_with_cause(|_| Err(Failure::Engine(failed)));
        assert_eq!(result, 0);
        let ((class, message), cause) = exception.unwrap();
        assert_eq!(class, "java.lang.IllegalStateException");
        assert!(message.contains("permission denied on s3://b/db"), "{message}");
        let (cause_class, cause_message) = cause.expect("the original error is the cause");
        assert_eq!(cause_class, "java.nio.file.AccessDeniedException");
        assert!(cause_message.contains("s3://b/db"), "{cause_message}");
    }

    #[test]
    fn an_exception_already_pending_is_kept() {
        let (_, exception) = run(|env| {
            env.throw_new("java/lang/ArithmeticException", "from Java").unwrap();
            Err(Failure::Jni(::jni::errors::Error::JavaException))
        });
        assert_eq!(exception, Some(("java.lang.ArithmeticException".into(), "from Java".into())));
    }
}
