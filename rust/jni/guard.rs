//! Runs each native method body under `catch_unwind` and turns its failure into a Java exception.
//!
//! | failure | Java exception |
//! |---|---|
//! | `Error::Io`, `Error::Corruption`, `Error::NotFound` | `java.io.IOException` |
//! | `Error::InvalidArgument`, bad input checked here | `java.lang.IllegalArgumentException` |
//! | `Error::Closed`, unknown or closed handle | `java.lang.IllegalStateException` |
//! | a panic | `java.lang.RuntimeException` with the panic text |
//!
//! Every message carries the Rust error text.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ::jni::JNIEnv;

use crate::Error;

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
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env)));
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
        Failure::Engine(e) => {
            let class = match e {
                Error::Io { .. } | Error::Corruption { .. } | Error::NotFound(_) => {
                    "java/io/IOException"
                }
                Error::InvalidArgument(_) => "java/lang/IllegalArgumentException",
                Error::Closed(_) => "java/lang/IllegalStateException",
            };
            (class, e.to_string())
        }
        Failure::IllegalArgument(m) => ("java/lang/IllegalArgumentException", m),
        Failure::IllegalState(m) => ("java/lang/IllegalStateException", m),
        Failure::Jni(e) => ("java/lang/RuntimeException", format!("JNI call failed: {e}")),
    };
    throw_class(env, class, &message);
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
    use crate::jni::test_jvm::vm;

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
        let mut env = vm().attach_current_thread().unwrap();
        let result = guard(&mut env, |env| body(env));
        if !env.exception_check().unwrap() {
            return (result, None);
        }
        let exception = env.exception_occurred().unwrap();
        env.exception_clear().unwrap();
        let class = env
            .call_method(&exception, "getClass", "()Ljava/lang/Class;", &[])
            .unwrap()
            .l()
            .unwrap();
        let class_name = call_string(&mut env, &class, "getName");
        let message = call_string(&mut env, &exception, "getMessage");
        (result, Some((class_name, message)))
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
        let cases = [
            (
                Error::corruption("000001.sst", 17, "bad checksum"),
                "java.io.IOException",
                "000001.sst",
            ),
            (Error::io("s3://b/x", "connection reset"), "java.io.IOException", "connection reset"),
            (Error::NotFound("MANIFEST-9".into()), "java.io.IOException", "MANIFEST-9"),
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
    fn an_exception_already_pending_is_kept() {
        let (_, exception) = run(|env| {
            env.throw_new("java/lang/ArithmeticException", "from Java").unwrap();
            Err(Failure::Jni(::jni::errors::Error::JavaException))
        });
        assert_eq!(exception, Some(("java.lang.ArithmeticException".into(), "from Java".into())));
    }
}
