//! The test-only Java class `org.forstrs.jni.Failpoints` (built with the cargo feature
//! `failpoints` only, so the jar's library has no way to arm one).

use ::jni::JNIEnv;
use ::jni::objects::{JClass, JString};
use ::jni::sys::jint;

use super::guard::{guard, illegal_argument};
use super::natives::string;

/// `static native void arm(String name, int times)` (see `lsm::failpoints`); an unknown name or a
/// negative count is an `IllegalArgumentException`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_Failpoints_arm<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    times: jint,
) {
    guard(&mut env, |env| {
        let name = string(env, &name, "name")?;
        let Ok(times) = u32::try_from(times) else {
            return illegal_argument(format!("times is negative: {times}"));
        };
        Ok(crate::lsm::failpoints::arm(&name, times)?)
    })
}
