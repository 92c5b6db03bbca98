//! The JNI bridge: the only place where the JVM meets the engine.
//!
//! Every native method of `org.forstrs.jni.ForStNative` is in [`natives`]. Each one runs under
//! [`guard::guard`]: panics are caught and errors become Java exceptions (see [`guard::Failure`]),
//! so no input from Java can take the JVM down. Databases are reached through opaque `long`
//! handles ([`handles`]); an unknown or closed handle is an `IllegalStateException`, never a
//! dangling pointer. Keys, values and batches travel in direct `ByteBuffer`s ([`buffers`]).
//!
//! `JNI_OnLoad` hands the `JavaVM` to [`crate::jvm`], where native threads that must call into
//! Java attach as daemons and never block JVM exit. [`logging`] forwards the engine's `tracing`
//! events to slf4j once Java installs it (`NativeLog`, right after loading the library).

pub mod buffers;
pub mod build_info;
pub mod checkpoint_reader;
pub mod checkpoints;
#[cfg(feature = "failpoints")]
mod failpoints;
#[cfg(test)]
mod file_transfer_tests;
pub mod files;
pub mod guard;
pub mod handles;
pub mod logging;
pub mod natives;
pub mod options;
pub mod stats;
pub mod ttl;

use std::ffi::c_void;

use ::jni::JavaVM;
use ::jni::sys::{JNI_ERR, JNI_VERSION_1_8, jint};

/// Called by the JVM when `System.load` loads this library.
///
/// # Safety
/// Called only by the JVM, with a valid `JavaVM` pointer that stays valid for the life of the
/// process.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn JNI_OnLoad(
    vm: *mut ::jni::sys::JavaVM,
    _reserved: *mut c_void,
) -> jint {
    // SAFETY: the JVM passes a valid pointer that outlives the library (see the function docs).
    match unsafe { JavaVM::from_raw(vm) } {
        Ok(vm) => {
            crate::jvm::set_java_vm(vm);
            JNI_VERSION_1_8
        }
        Err(_) => JNI_ERR,
    }
}
