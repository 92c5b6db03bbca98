//! The JVM this library runs in, for every layer that calls into Java (callbacks of the JNI
//! layer and the Flink file-system proxy of the storage layer): the `JavaVM` kept at load,
//! attaching native threads as daemons, global references released on attached threads, and
//! pending Java exceptions as text.

use ::jni::objects::{GlobalRef, JObject, JString};
use ::jni::{JNIEnv, JavaVM};
use once_cell::sync::OnceCell;

static JVM: OnceCell<JavaVM> = OnceCell::new();

/// Keeps the JVM that loaded this library (`JNI_OnLoad`). A second load of the same library file
/// in one process reuses the first VM (there is only one JVM per process), so a set cell is fine.
pub fn set_java_vm(vm: JavaVM) {
    let _ = JVM.set(vm);
}

/// The JVM that loaded this library, if it was loaded by a JVM.
pub fn java_vm() -> Option<&'static JavaVM> {
    JVM.get()
}

/// Attaches the calling native thread to the JVM as a daemon (it never keeps the JVM alive) and
/// returns its environment; a thread already attached gets its existing environment.
pub fn attach_daemon() -> crate::Result<JNIEnv<'static>> {
    let vm = java_vm()
        .ok_or_else(|| crate::Error::Closed("no JVM: library not loaded by Java".into()))?;
    vm.attach_current_thread_as_daemon()
        .map_err(|e| crate::Error::io("jvm", format!("cannot attach thread to the JVM: {e}")))
}

/// A global reference that is released on a daemon-attached thread. `GlobalRef`'s own drop
/// attaches an unattached thread as a non-daemon for the release; attaching first avoids that.
pub struct JavaRef(Option<GlobalRef>);

impl JavaRef {
    pub fn new(env: &mut JNIEnv<'_>, object: &JObject<'_>) -> ::jni::errors::Result<Self> {
        Ok(JavaRef(Some(env.new_global_ref(object)?)))
    }

    pub fn as_obj(&self) -> &JObject<'static> {
        self.0.as_ref().expect("present until dropped").as_obj()
    }
}

impl Drop for JavaRef {
    fn drop(&mut self) {
        let _ = attach_daemon();
        drop(self.0.take());
    }
}

/// Clears the pending Java exception, if any, and returns its `toString()`.
pub fn take_pending_exception(env: &mut JNIEnv<'_>) -> Option<String> {
    if !env.exception_check().unwrap_or(false) {
        return None;
    }
    let exception = env.exception_occurred();
    let _ = env.exception_clear();
    let exception = exception.ok()?;
    let text = env
        .call_method(&exception, "toString", "()Ljava/lang/String;", &[])
        .and_then(|v| v.l())
        .ok()
        .filter(|s| !s.is_null())
        .and_then(|s| env.get_string(&JString::from(s)).ok().map(String::from));
    // toString itself may have thrown.
    let _ = env.exception_clear();
    Some(text.unwrap_or_else(|| "(exception without description)".into()))
}

/// The JVM of `cargo test` (one per test process: the invocation API allows no second one).
#[cfg(test)]
pub(crate) mod test_jvm {
    use std::sync::OnceLock;

    use ::jni::{InitArgsBuilder, JNIVersion, JavaVM};

    pub fn vm() -> &'static JavaVM {
        static VM: OnceLock<JavaVM> = OnceLock::new();
        VM.get_or_init(|| {
            let args = InitArgsBuilder::new()
                .version(JNIVersion::V8)
                .option("-Xcheck:jni")
                .build()
                .unwrap();
            JavaVM::new(args).expect("start a JVM (set JAVA_HOME to a JDK 17)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_threads_attach_as_daemons() {
        let vm = test_jvm::vm();
        // What JNI_OnLoad does when Java loads the library.
        // SAFETY: the pointer comes from a live JavaVM that lives for the whole test process.
        set_java_vm(unsafe { JavaVM::from_raw(vm.get_java_vm_pointer()) }.unwrap());
        let daemon = std::thread::spawn(|| {
            let mut env = attach_daemon().unwrap();
            let thread = env
                .call_static_method(
                    "java/lang/Thread",
                    "currentThread",
                    "()Ljava/lang/Thread;",
                    &[],
                )
                .unwrap()
                .l()
                .unwrap();
            env.call_method(&thread, "isDaemon", "()Z", &[]).unwrap().z().unwrap()
        })
        .join()
        .unwrap();
        assert!(daemon);
    }
}
