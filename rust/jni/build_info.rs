//! What build of the engine the JVM loaded, for the one log line that says which ForSt runs.
use ::jni::JNIEnv;
use ::jni::objects::JClass;

use super::guard::guard;

/// `static native String buildInfo()`: the crate version and the git revision it was built from.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_buildInfo<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> ::jni::sys::jstring {
    guard(&mut env, |env| {
        let info = format!("{} (git {})", env!("CARGO_PKG_VERSION"), crate::BUILD_REVISION);
        Ok(env.new_string(info)?)
    })
    .into_raw()
}
