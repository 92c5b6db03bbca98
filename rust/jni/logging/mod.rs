//! The engine's `tracing` events in the TaskManager's log: `org.forstrs.jni.NativeLog` installs,
//! once per loaded library, a `tracing` subscriber ([`layer::ForwardingLayer`] over a span
//! registry) that hands each event to slf4j ([`java::JavaLog`]) under the logger
//! `org.forstrs.native.<module>`, prefixed with the label of the database it happened for
//! ([`label`]), at most [`LIMIT_PER_INTERVAL`] times per [`INTERVAL`] for one callsite and
//! database ([`rate_limit`]). Java tells the most verbose level slf4j has on; events above it
//! stop at their callsite and never reach Java.

pub mod java;
pub mod label;
pub mod layer;
pub mod rate_limit;

use std::sync::Arc;
use std::time::Duration;

use ::jni::JNIEnv;
use ::jni::objects::JClass;
use ::jni::sys::jint;
use once_cell::sync::{Lazy, OnceCell};
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

use self::java::JavaLog;
use self::layer::{ForwardingLayer, MaxLevel};
use self::rate_limit::{RateLimiter, SystemClock};
use super::guard::guard;

/// Events of one callsite for one database logged per [`INTERVAL`]; the rest are counted.
pub const LIMIT_PER_INTERVAL: u32 = 10;
pub const INTERVAL: Duration = Duration::from_secs(60);

static MAX_LEVEL: Lazy<Arc<MaxLevel>> = Lazy::new(Arc::default);

static INSTALLED: OnceCell<()> = OnceCell::new();

/// Sets the most verbose level forwarded (0 off, 1 ERROR … 5 TRACE) and has every callsite
/// re-check it.
fn set_max_level(code: jint) {
    MAX_LEVEL.set(code);
    tracing::callsite::rebuild_interest_cache();
}

/// `private static native void nativeInstall(int maxLevel)` of `NativeLog`: makes the forwarding
/// layer the process's subscriber (once; later calls only set the level).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_NativeLog_nativeInstall<'l>(
    mut env: JNIEnv<'l>,
    class: JClass<'l>,
    max_level: jint,
) {
    guard(&mut env, |env| {
        INSTALLED.get_or_try_init(|| -> ::jni::errors::Result<()> {
            let sink = JavaLog::new(env, &class)?;
            let limiter = RateLimiter::new(LIMIT_PER_INTERVAL, INTERVAL, SystemClock);
            let layer = ForwardingLayer::new(sink, MAX_LEVEL.clone(), limiter);
            // Fails only if something else set a global subscriber first: it keeps the events.
            let _ = tracing::subscriber::set_global_default(Registry::default().with(layer));
            Ok(())
        })?;
        set_max_level(max_level);
        Ok(())
    })
}

/// `private static native void nativeSetMaxLevel(int maxLevel)` of `NativeLog`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_NativeLog_nativeSetMaxLevel<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    max_level: jint,
) {
    guard(&mut env, |_| {
        set_max_level(max_level);
        Ok(())
    })
}
