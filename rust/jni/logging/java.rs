//! The sink of native log lines in the JVM: `org.forstrs.jni.NativeLog.log(int, String, String)`,
//! which logs through slf4j. Any thread may call it: native threads attach as daemons
//! ([`crate::jvm::attach_daemon`]); a line whose call fails is dropped, never a panic.

use ::jni::JNIEnv;
use ::jni::objects::{JClass, JValue};

use super::layer::Sink;
use crate::jvm::JavaRef;

const LOG_METHOD: &str = "log";
const LOG_SIGNATURE: &str = "(ILjava/lang/String;Ljava/lang/String;)V";

/// `NativeLog`, held by a global reference: native threads cannot find it by name (`FindClass`
/// there sees only the system class loader, not the one that loaded the jar).
pub struct JavaLog {
    class: JavaRef,
}

impl JavaLog {
    pub fn new(env: &mut JNIEnv<'_>, class: &JClass<'_>) -> ::jni::errors::Result<Self> {
        // Fails now, not at the first event, if the method is missing (a jar of another build).
        env.get_static_method_id(class, LOG_METHOD, LOG_SIGNATURE)?;
        Ok(JavaLog { class: JavaRef::new(env, class)? })
    }

    fn call(&self, env: &mut JNIEnv<'_>, level: i32, logger: &str, message: &str) -> bool {
        // A frame, so that a native thread (attached for good) frees the strings at once.
        let called = env.with_local_frame(4, |env| -> ::jni::errors::Result<()> {
            let logger = env.new_string(logger)?;
            let message = env.new_string(message)?;
            let class = <&JClass<'_>>::from(self.class.as_obj());
            env.call_static_method(
                class,
                LOG_METHOD,
                LOG_SIGNATURE,
                &[JValue::Int(level), JValue::Object(&logger), JValue::Object(&message)],
            )?;
            Ok(())
        });
        if called.is_err() {
            // The logging call threw (an appender failing): the line is lost, nothing else.
            let _ = env.exception_clear();
        }
        called.is_ok()
    }
}

impl Sink for JavaLog {
    fn log(&self, level: i32, logger: &str, message: &str) -> bool {
        let Ok(mut env) = crate::jvm::attach_daemon() else {
            return false;
        };
        // A native method about to throw may log first: JNI allows no call while an exception is
        // pending, so it is set aside and thrown again after the line.
        let pending = match env.exception_check() {
            Ok(true) => {
                let exception = env.exception_occurred().ok();
                let _ = env.exception_clear();
                exception
            }
            _ => None,
        };
        let logged = self.call(&mut env, level, logger, message);
        if let Some(exception) = pending {
            let _ = env.throw(&exception);
            let _ = env.delete_local_ref(exception);
        }
        logged
    }
}
