//! The engine's statistics for Java's metrics: the names once ([`EXPORTED_STATS`]), then all
//! values of a database in one call, in the names' order.

use ::jni::JNIEnv;
use ::jni::objects::{JClass, JLongArray};
use ::jni::sys::{jlong, jobjectArray};

use super::guard::{JniResult, guard, illegal_argument};
use super::handles;
use super::options::string_array;
use crate::lsm::{DbStats, EXPORTED_STATS};

/// `static native String[] statNames()`: the name of each value `stats` fills, in order.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_statNames<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jobjectArray {
    guard(&mut env, |env| {
        let names: Vec<String> = EXPORTED_STATS.iter().map(|(name, _)| name.to_string()).collect();
        string_array(env, &names)
    })
    .into_raw()
}

/// `static native void stats(long db, long[] values)`: fills `values` (exactly as long as
/// `statNames()`) with the database's statistics. Values above `Long.MAX_VALUE` saturate.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_stats<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    values: JLongArray<'l>,
) {
    guard(&mut env, |env| fill(env, db, &values))
}

/// `static native void closeWithStats(long db, long[] finalStats)`: closes the database as
/// `close` does, then fills `finalStats` (as `stats` would) with its statistics once its
/// background work stopped: the final values, which a closed database's gauges show.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_closeWithStats<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
    final_stats: JLongArray<'l>,
) {
    guard(&mut env, |env| {
        check_length(env, &final_stats)?;
        let handle = handles::InDb::enter(handles::DATABASES.remove(db)?);
        handle.db.close()?;
        write(env, &final_stats, &handle.db.stats())
    })
}

fn fill(env: &mut JNIEnv<'_>, db: jlong, values: &JLongArray<'_>) -> JniResult<()> {
    check_length(env, values)?;
    let stats = handles::DATABASES.get(db)?.db.stats();
    write(env, values, &stats)
}

fn check_length(env: &mut JNIEnv<'_>, values: &JLongArray<'_>) -> JniResult<()> {
    if values.is_null() {
        return illegal_argument("values must not be null");
    }
    let len = env.get_array_length(values)? as usize;
    if len != EXPORTED_STATS.len() {
        return illegal_argument(format!(
            "values has {len} slots, the engine exports {} statistics",
            EXPORTED_STATS.len()
        ));
    }
    Ok(())
}

fn write(env: &mut JNIEnv<'_>, values: &JLongArray<'_>, stats: &DbStats) -> JniResult<()> {
    let out: Vec<jlong> =
        stats.exported_values().map(|v| jlong::try_from(v).unwrap_or(jlong::MAX)).collect();
    env.set_long_array_region(values, 0, &out)?;
    Ok(())
}
