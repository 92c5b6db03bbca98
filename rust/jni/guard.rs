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
