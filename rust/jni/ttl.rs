//! The TTL compaction filter native of `org.forstrs.jni.ForStNative` (the engine side is
//! `lsm::ttl`), and the Java objects compaction calls back: Flink's `TtlTimeProvider` when it is
//! not the wall clock, and the element filter of lists whose elements vary in length.
//!
//! Method IDs are resolved here, on the Java thread registering the state, from each object's own
//! class (`FindClass` on a compaction thread would see only the system class loader). The
//! compaction thread attaches as a daemon and calls inside a local reference frame; a Java
//! exception is cleared and becomes an error, on which compaction keeps the entry unchanged.

use std::sync::Arc;

use ::jni::JNIEnv;
use ::jni::objects::{JClass, JMethodID, JObject, JValue};
use ::jni::signature::{Primitive, ReturnType};
use ::jni::sys::{jint, jlong};

use super::guard::{Failure, JniResult, guard, illegal_argument};
use super::handles;
use crate::jvm::{JavaRef, attach_daemon, take_pending_exception};
use crate::lsm::{ListElementFilter, SystemClock, TtlClock, TtlFilter, TtlLayout};
use crate::{Error, Result};

/// `layout` codes of `setTtlCompactionFilter`.
const NO_FILTER: jint = 0;
const VALUE: jint = 1;
const FIXED_LENGTH_LIST: jint = 2;
const ELEMENT_FILTER_LIST: jint = 3;

/// Local references one callback creates (the byte array, an exception and its text).
const LOCAL_FRAME_CAPACITY: i32 = 8;

/// `static native void setTtlCompactionFilter(long db, int cf, int layout, int layoutParameter,
/// long ttlMillis, long queryTimeAfterNumEntries, Object timeProvider, Object listElementFilter)`
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_setTtlCompactionFilter<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    cf: jint,
    layout: jint,
    layout_parameter: jint,
    ttl_millis: jlong,
    query_time_after_entries: jlong,
    time_provider: JObject<'l>,
    list_element_filter: JObject<'l>,
) {
    guard(&mut env, |env| {
        let handle = handles::database(db)?;
        let family = handle.family(cf as u32)?;
        let filter = if layout == NO_FILTER {
            None
        } else {
            if ttl_millis <= 0 {
                return illegal_argument(format!("TTL of {ttl_millis} ms must be positive"));
            }
            let Ok(query_time_after_entries) = u64::try_from(query_time_after_entries) else {
                return illegal_argument(format!(
                    "query time after {query_time_after_entries} entries must not be negative"
                ));
            };
            Some(TtlFilter {
                layout: ttl_layout(env, layout, layout_parameter, &list_element_filter)?,
                ttl_millis,
                query_time_after_entries,
                clock: clock(env, &time_provider)?,
            })
        };
        handle.db.set_ttl_filter(&family, filter)?;
        Ok(())
    })
}

fn ttl_layout(
    env: &mut JNIEnv<'_>,
    layout: jint,
    parameter: jint,
    list_element_filter: &JObject<'_>,
) -> JniResult<TtlLayout> {
    let Ok(parameter) = usize::try_from(parameter) else {
        return illegal_argument(format!("layout parameter {parameter} must not be negative"));
    };
    match layout {
        VALUE => Ok(TtlLayout::Value { timestamp_offset: parameter }),
        // Shorter elements cannot hold the 8-byte timestamp: not a TTL list.
        FIXED_LENGTH_LIST if parameter >= 8 => {
            Ok(TtlLayout::FixedList { element_bytes: parameter })
        }
        FIXED_LENGTH_LIST => illegal_argument(format!("list element length {parameter} < 8")),
        ELEMENT_FILTER_LIST => {
            let method = JavaMethod::resolve(
                env,
                list_element_filter,
                "nextUnexpiredOffset",
                "([BJJ)I",
                "list element filter",
            )?;
            Ok(TtlLayout::List(Arc::new(JavaListElementFilter(method))))
        }
        _ => illegal_argument(format!("unknown TTL layout {layout}")),
    }
}

/// The wall clock for a null provider (Flink's default), else the provider's `currentTimestamp`.
fn clock(env: &mut JNIEnv<'_>, time_provider: &JObject<'_>) -> JniResult<Arc<dyn TtlClock>> {
    if time_provider.is_null() {
        return Ok(Arc::new(SystemClock));
    }
    let method =
        JavaMethod::resolve(env, time_provider, "currentTimestamp", "()J", "TTL time provider")?;
    Ok(Arc::new(JavaClock(method)))
}

/// A Java object and one of its methods.
struct JavaMethod {
    object: JavaRef,
    method: JMethodID,
    what: &'static str,
}

impl JavaMethod {
    fn resolve(
        env: &mut JNIEnv<'_>,
        object: &JObject<'_>,
        name: &str,
        signature: &str,
        what: &'static str,
    ) -> JniResult<Self> {
        if object.is_null() {
            return illegal_argument(format!("{what} is null"));
        }
        let class = env.get_object_class(object)?;
        let method = env.get_method_id(&class, name, signature).map_err(|_| {
            // The pending NoSuchMethodError says less than this.
            let _ = env.exception_clear();
            Failure::IllegalArgument(format!("{what} has no method {name}{signature}"))
        })?;
        Ok(JavaMethod { object: JavaRef::new(env, object)?, method, what })
    }

    /// Runs `body` (the call of the method on the object) from any thread: attached as a
    /// daemon, in a local reference frame, a Java exception turned into an error.
    fn call<T>(
        &self,
        body: impl FnOnce(&mut JNIEnv<'_>, &JObject<'static>, JMethodID) -> ::jni::errors::Result<T>,
    ) -> Result<T> {
        let mut env = attach_daemon()?;
        let outcome = env.with_local_frame(LOCAL_FRAME_CAPACITY, |env| {
            body(env, self.object.as_obj(), self.method).map_err(|e| {
                let text = take_pending_exception(env).unwrap_or_else(|| e.to_string());
                CallError(Error::io("jvm", format!("{}: {text}", self.what)))
            })
        });
        outcome.map_err(|e| e.0)
    }
}

/// Our error inside `with_local_frame`, which wants an error type a JNI error converts into.
struct CallError(Error);

impl From<::jni::errors::Error> for CallError {
    fn from(e: ::jni::errors::Error) -> Self {
        CallError(Error::io("jvm", format!("JNI call failed: {e}")))
    }
}

/// `long currentTimestamp()` of a Flink `TtlTimeProvider`.
struct JavaClock(JavaMethod);

impl TtlClock for JavaClock {
    fn now_millis(&self) -> Result<i64> {
        self.0.call(|env, object, method| {
            // SAFETY: `method` is `long currentTimestamp()` of this object's class; no arguments.
            let now = unsafe {
                env.call_method_unchecked(
                    object,
                    method,
                    ReturnType::Primitive(Primitive::Long),
                    &[],
                )
            };
            now?.j()
        })
    }
}

/// `int nextUnexpiredOffset(byte[] list, long ttl, long currentTimestamp)`, as Flink's
/// `FlinkCompactionFilter.ListElementFilter`.
struct JavaListElementFilter(JavaMethod);

impl ListElementFilter for JavaListElementFilter {
    fn next_unexpired_offset(
        &self,
        list: &[u8],
        ttl_millis: i64,
        now_millis: i64,
    ) -> Result<usize> {
        let offset = self.0.call(|env, object, method| {
            let array = JObject::from(env.byte_array_from_slice(list)?);
            let args = [
                JValue::Object(&array).as_jni(),
                JValue::Long(ttl_millis).as_jni(),
                JValue::Long(now_millis).as_jni(),
            ];
            // SAFETY: `method` is `int nextUnexpiredOffset(byte[], long, long)` of this object's
            // class, and `args` are a byte[] and two longs.
            let offset = unsafe {
                env.call_method_unchecked(
                    object,
                    method,
                    ReturnType::Primitive(Primitive::Int),
                    &args,
                )
            };
            offset?.i()
        })?;
        usize::try_from(offset)
            .map_err(|_| Error::invalid(format!("negative list offset {offset}")))
    }
}
