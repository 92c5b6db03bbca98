//! Engine options from Java: a `String[]` of key/value pairs (`null` or empty: defaults).
//! Unknown keys and bad values fail fast with a message that names the key.

use crate::Error;
use crate::lsm::DbOptions;
use crate::storage::StorageOptions;

/// Prefixes of the keys that configure storage rather than the engine (see
/// [`StorageOptions::set`]), e.g. `fs.force-proxy`.
const STORAGE_KEY_PREFIXES: &[&str] = &["fs.", "s3.", "local."];

/// The keys `ForStNative.open` accepts, with what they set.
pub const KEYS: &[(&str, &str)] = &[
    ("memtable-bytes", "memtable size that triggers a flush"),
    ("max-frozen-memtables", "frozen memtables waiting for flush before writers stall"),
    ("block-cache-bytes", "capacity of the in-memory block cache"),
    ("target-file-bytes", "target SST file size"),
    ("l0-compaction-trigger", "L0 files that trigger a compaction"),
    ("l0-stop-trigger", "L0 files at which flushes wait for compaction"),
    ("l1-target-bytes", "target size of L1"),
    ("level-size-multiplier", "size ratio between levels"),
    ("compaction-readahead-bytes", "bytes per storage request when compaction reads"),
    ("auto-compaction", "run background compactions (true/false)"),
    ("block-size", "target uncompressed data block size"),
    ("bloom-bits-per-key", "bloom filter bits per key (0: no filter)"),
];

/// Splits the options of `ForStNative.open` into storage options (keys under
/// [`STORAGE_KEY_PREFIXES`]) and engine options ([`parse`]).
pub fn parse_open(pairs: &[String]) -> crate::Result<(DbOptions, StorageOptions)> {
    let mut engine = Vec::with_capacity(pairs.len());
    let mut storage = StorageOptions::default();
    for pair in pairs.chunks(2) {
        match pair {
            [key, value] if STORAGE_KEY_PREFIXES.iter().any(|p| key.starts_with(p)) => {
                storage.set(key, value)?
            }
            _ => engine.extend_from_slice(pair),
        }
    }
    Ok((parse(&engine)?, storage))
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
        let (key, value) = (pair[0].as_str(), pair[1].as_str());
        match key {
            "memtable-bytes" => options.memtable_bytes = number(key, value)?,
            "max-frozen-memtables" => options.max_frozen_memtables = number(key, value)?,
            "block-cache-bytes" => options.block_cache_bytes = number(key, value)?,
            "target-file-bytes" => options.target_file_bytes = number(key, value)?,
            "l0-compaction-trigger" => options.l0_compaction_trigger = number(key, value)?,
            "l0-stop-trigger" => options.l0_stop_trigger = number(key, value)?,
            "l1-target-bytes" => options.l1_target_bytes = number(key, value)?,
            "level-size-multiplier" => options.level_size_multiplier = number(key, value)?,
            "compaction-readahead-bytes" => {
                options.compaction_readahead_bytes = number(key, value)?
            }
            "auto-compaction" => options.auto_compaction = boolean(key, value)?,
            "block-size" => options.table.block_size = number(key, value)?,
            "bloom-bits-per-key" => options.table.bloom_bits_per_key = number(key, value)?,
            _ => {
                let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(Error::invalid(format!(
                    "unknown option '{key}' (known: {})",
                    known.join(", ")
                )));
            }
        }
    }
    Ok(options)
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> crate::Result<T> {
    value.trim().parse().map_err(|_| {
        Error::invalid(format!("option '{key}': '{value}' is not a non-negative integer"))
    })
}

fn boolean(key: &str, value: &str) -> crate::Result<bool> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid(format!("option '{key}': '{value}' is not true or false"))),
    }
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
            "1024",
            "auto-compaction",
            "false",
            "bloom-bits-per-key",
            "0",
        ]))
        .unwrap();
        assert_eq!(options.memtable_bytes, 1024);
        assert!(!options.auto_compaction);
        assert_eq!(options.table.bloom_bits_per_key, 0);
    }

    #[test]
    fn storage_keys_are_split_off() {
        let (db, storage) = parse_open(&strings(&[
            "memtable-bytes",
            "2048",
            "fs.force-proxy",
            "true",
            "local.fsync",
            "false",
        ]))
        .unwrap();
        assert_eq!(db.memtable_bytes, 2048);
        assert!(storage.force_proxy && !storage.local_fsync);
        let e = parse_open(&strings(&["fs.force-proxy", "maybe"])).unwrap_err().to_string();
        assert!(e.contains("fs.force-proxy"), "{e}");
        assert!(parse_open(&strings(&["fs.nope", "1"])).is_err());
        assert!(parse_open(&strings(&["fs.force-proxy"])).is_err());
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
}
