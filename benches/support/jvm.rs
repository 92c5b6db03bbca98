//! A JVM in the bench process, for benches that reach Flink file systems through the proxy. The
//! class path comes from `FORST_BENCH_CLASSPATH` (the scripts build it from the Maven project).

use jni::objects::JValue;
use jni::{InitArgsBuilder, JNIVersion, JavaVM};

/// Starts a JVM on `classpath` and hands it to the library as loading it from Java would. The
/// calling thread stays attached, with the system class loader as its context class loader (a
/// thread attached from native code has none; Hadoop needs one).
pub fn start(classpath: &str) -> JavaVM {
    let args = InitArgsBuilder::new()
        .version(JNIVersion::V8)
        .option(format!("-Djava.class.path={classpath}"))
        .build()
        .unwrap();
    let vm = JavaVM::new(args).expect("start a JVM (set JAVA_HOME to a JDK 17)");
    // SAFETY: the pointer is the live VM created above, which lives until the process exits.
    unsafe { forst::jni::JNI_OnLoad(vm.get_java_vm_pointer(), std::ptr::null_mut()) };
    let mut env = vm.attach_current_thread_permanently().unwrap();
    let loader = env
        .call_static_method(
            "java/lang/ClassLoader",
            "getSystemClassLoader",
            "()Ljava/lang/ClassLoader;",
            &[],
        )
        .and_then(|l| l.l())
        .unwrap();
    let thread = env
        .call_static_method("java/lang/Thread", "currentThread", "()Ljava/lang/Thread;", &[])
        .and_then(|t| t.l())
        .unwrap();
    env.call_method(
        &thread,
        "setContextClassLoader",
        "(Ljava/lang/ClassLoader;)V",
        &[JValue::Object(&loader)],
    )
    .unwrap();
    vm
}
