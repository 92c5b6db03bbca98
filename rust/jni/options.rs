//! Engine options from Java: a `String[]` of key/value pairs (`null` or empty: defaults), parsed
//! by the engine's one table of options ([`ENGINE_OPTIONS`]). Unknown keys and bad values fail
//! fast with a message that names the key. Also the natives that hand that table to Java, check
//! options without opening a database, and report the options an open database runs with.

use ::jni::JNIEnv;
use ::jni::objects::{JClass, JObject, JObjectArray};
use ::jni::sys::{jint, jlong, jobjectArray};

use super::guard::{JniResult, guard};
use super::handles;
use super::logging::label::{self, DbLabel};
use super::natives::strings;
use crate::Error;
use crate::lsm::DbOptions;
use crate::lsm::options::{ENGINE_OPTIONS, LogSpan};
use crate::storage::StorageOptions;

/// Prefixes of the keys that configure storage rather than the engine (see
/// [`StorageOptions::set`]), e.g. `fs.force-proxy`.
const STORAGE_KEY_PREFIXES: &[&str] = &["fs.", "s3.", "local.", "cache."];

/// Columns of each row of `ForStNative.engineOptions`.
pub const TABLE_COLUMNS: usize = 6;

/// Splits the options of `ForStNative.open` into storage options (keys under
/// [`STORAGE_KEY_PREFIXES`]), the database's label in log lines (keys under
/// [`label::KEY_PREFIX`], which the backend sets from the task: the engine options' `log_span`)
/// and engine options ([`parse`]).
pub fn parse_open(pairs: &[String]) -> crate::Result<(DbOptions, StorageOptions)> {
    let mut engine = Vec::with_capacity(pairs.len());
    let mut storage = StorageOptions::default();
    let mut log_label = DbLabel::default();
    for pair in pairs.chunks(2) {
        match pair {
            [key, value] if STORAGE_KEY_PREFIXES.iter().any(|p| key.starts_with(p)) => {
                storage.set(key, value)?
            }
            [key, value] if key.starts_with(label::KEY_PREFIX) => log_label.set(key, value)?,
            _ => engine.extend_from_slice(pair),
        }
    }
    let mut options = parse(&engine)?;
    options.log_span = LogSpan(log_label.span());
    Ok((options, storage))
}

pub fn parse(pairs: &[String]) -> crate::Result<DbOptions> {
    if !pairs.len().is_multiple_of(2) {
        return Err(Error::invalid(format!(
            "options must be key/value pairs, got an odd number of strings ({})",
            pairs.len()
        )));
    }
    let mut options = DbOptions::default();
    for pair in pairs.chunks(2) {
        options.set(&pair[0], &pair[1])?;
    }
    Ok(options)
}

/// The table of engine options, one row of [`TABLE_COLUMNS`] strings per option: name, type
/// (`bytes`, `count`, `bool`, `choice`), default, minimum (empty: none), the choices joined by
/// `,` (empty unless a choice), doc.
pub fn table() -> Vec<String> {
    let mut rows = Vec::with_capacity(ENGINE_OPTIONS.len() * TABLE_COLUMNS);
    for option in ENGINE_OPTIONS {
        rows.extend([
            option.name.to_string(),
            option.kind.name().to_string(),
            option.default_value(),
            option.min.map(|m| m.to_string()).unwrap_or_default(),
            option.kind.choices().join(","),
            option.doc.to_string(),
        ]);
    }
    rows
}

pub(super) fn string_array<'l>(
    env: &mut JNIEnv<'l>,
    items: &[String],
) -> JniResult<JObjectArray<'l>> {
    let array = env.new_object_array(items.len() as jint, "java/lang/String", JObject::null())?;
    for (i, item) in items.iter().enumerate() {
        let item = env.new_string(item)?;
        let item = env.auto_local(item);
        env.set_object_array_element(&array, i as jint, &*item)?;
    }
    Ok(array)
}

/// `static native String[] engineOptions()`: [`table`].
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_engineOptions<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jobjectArray {
    guard(&mut env, |env| string_array(env, &table())).into_raw()
}

/// `static native void checkOptions(String[] options)`: parses and validates the options of
/// `open` as `open` does, without opening anything; throws `IllegalArgumentException` naming the
/// option that is wrong.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_checkOptions<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    options: JObjectArray<'l>,
) {
    guard(&mut env, |env| {
        let (options, _) = parse_open(&strings(env, &options, "options")?)?;
        options.validate()?;
        Ok(())
    })
}

/// `static native String[] optionsInEffect(long db)`: name/value pairs of every engine option of
/// the open database, as the engine runs with them.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_forstrs_jni_ForStNative_optionsInEffect<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    db: jlong,
) -> jobjectArray {
    guard(&mut env, |env| {
        let handle = handles::DATABASES.get(db)?;
        let pairs: Vec<String> = handle
            .db
            .inner
            .options
            .values()
            .into_iter()
            .flat_map(|(name, value)| [name.to_string(), value])
            .collect();
        string_array(env, &pairs)
    })
    .into_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_known_keys() {
        let options = parse(&strings(&[
            "memtable-bytes",
            "1024000",
            "auto-compaction",
            "false",
            "bloom-bits-per-key",
            "0",
        ]))
        .unwrap();
        assert_eq!(options.memtable_bytes, 1_024_000);
        assert!(!options.auto_compaction);
        assert_eq!(options.table.bloom_bits_per_key, 0);
    }

    #[test]
    fn storage_keys_are_split_off() {
        let (db, storage) = parse_open(&strings(&[
            "memtable-bytes",
            "20480",
            "fs.force-proxy",
            "true",
            "local.fsync",
            "false",
        ]))
        .unwrap();
        assert_eq!(db.memtable_bytes, 20480);
        assert!(storage.force_proxy && !storage.local_fsync);
        let e = parse_open(&strings(&["fs.force-proxy", "maybe"])).unwrap_err().to_string();
        assert!(e.contains("fs.force-proxy"), "{e}");
        assert!(parse_open(&strings(&["fs.nope", "1"])).is_err());
        assert!(parse_open(&strings(&["fs.force-proxy"])).is_err());
    }

    #[test]
    fn log_label_keys_are_split_off() {
        let (db, _) = parse_open(&strings(&[
            "log.job",
            "8e0f",
            "log.subtask",
            "1",
            "memtable-bytes",
            "20480",
        ]))
        .unwrap();
        assert_eq!(db.memtable_bytes, 20480);
        let e = parse_open(&strings(&["log.jobid", "8e0f"])).unwrap_err().to_string();
        assert!(e.contains("'log.jobid'"), "{e}");
    }

    #[test]
    fn rejects_unknown_keys_bad_values_and_odd_lists() {
        let e = parse(&strings(&["nope", "1"])).unwrap_err().to_string();
        assert!(e.contains("'nope'"), "{e}");
        let e = parse(&strings(&["memtable-bytes", "-1"])).unwrap_err().to_string();
        assert!(e.contains("memtable-bytes"), "{e}");
        let e = parse(&strings(&["auto-compaction", "yes"])).unwrap_err().to_string();
        assert!(e.contains("auto-compaction"), "{e}");
        assert!(parse(&strings(&["memtable-bytes"])).is_err());
    }

    #[test]
    fn table_has_one_row_per_option_with_parseable_defaults() {
        let table = table();
        assert_eq!(table.len(), ENGINE_OPTIONS.len() * TABLE_COLUMNS);
        for row in table.chunks(TABLE_COLUMNS) {
            let options = parse(&[row[0].clone(), row[2].clone()]).unwrap();
            options.validate().unwrap();
        }
        let compression = table.chunks(TABLE_COLUMNS).find(|r| r[0] == "compression").unwrap();
        assert_eq!(compression[1], "choice");
        assert_eq!(compression[4], "none,lz4");
        let memtable = table.chunks(TABLE_COLUMNS).find(|r| r[0] == "memtable-bytes").unwrap();
        assert_eq!((memtable[1].as_str(), memtable[3].as_str()), ("bytes", "4096"));
    }
}
