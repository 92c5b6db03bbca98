//! Engine options. Defaults suit a Flink task manager slot; tests shrink them to force flushes
//! and compactions.
//!
//! [`ENGINE_OPTIONS`] is the one definition of the options' names, types, defaults, minimums and
//! docs: `ForStNative.open` parses by it, and the Java side reads it (`ForStNative.engineOptions`)
//! to offer every option as a Flink key, so no name is repeated in Java.

use std::time::Duration;

use crate::lsm::sst::{Compression, TableOptions};
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct DbOptions {
    /// A memtable is frozen and flushed once it holds this many bytes.
    pub memtable_bytes: u64,
    /// Writers stall while this many frozen memtables wait for flush: memory stays bounded by
    /// about `(max_frozen_memtables + 1) * memtable_bytes`.
    pub max_frozen_memtables: usize,
    /// Capacity of the in-memory block cache.
    pub block_cache_bytes: u64,
    /// Charge memtables to the block cache, whose capacity is then the whole memory budget
    /// (RocksDB's write buffer manager costed to the cache, as Flink sets it up): blocks of every
    /// kind get the memory that memtables do not use at the moment. Without, only index and
    /// filter partitions do (see `cache.rs`).
    pub memtables_charged_to_cache: bool,
    /// Target size of SST files written by flush and compaction.
    pub target_file_bytes: u64,
    /// Number of L0 files that triggers a compaction of L0 into the level below (L1, or the base
    /// level with `dynamic_level_sizes`).
    pub l0_compaction_trigger: usize,
    /// Flushes wait while L0 holds this many files (so writers stall behind them) until compaction
    /// catches up: reads stay bounded by the number of L0 files.
    pub l0_stop_trigger: usize,
    /// Target size of L1; each deeper level is `level_size_multiplier` times larger. With
    /// `dynamic_level_sizes`, the most the base level (where L0 compacts into) holds.
    pub l1_target_bytes: u64,
    pub level_size_multiplier: u64,
    /// Level targets derived from the size of the data instead of from L1 (RocksDB's
    /// `level_compaction_dynamic_level_bytes`): see `compaction::level_targets`.
    pub dynamic_level_sizes: bool,
    /// Most bytes per storage request when compaction scans input files; the buffers of all
    /// compactions together stay within 1/4 of the block cache (see
    /// `compaction::readahead_per_input`).
    pub compaction_readahead_bytes: usize,
    /// Run background compactions (tests turn this off to control when they happen).
    pub auto_compaction: bool,
    /// Background compaction threads. Jobs run side by side when they read no common file and
    /// write apart (see `compaction::in_flight`); one flush thread runs besides.
    pub max_background_compactions: usize,
    /// A background flush or compaction failing with a transient error is retried this many
    /// times, after `retry_backoff`, doubled for each next retry up to `max_retry_backoff`. A
    /// permanent error, or one that outlasts the retries, fails the database.
    pub background_retries: u32,
    pub retry_backoff: Duration,
    pub max_retry_backoff: Duration,
    pub table: TableOptions,
    /// The span the database's background threads run in: the JNI layer makes one that names
    /// the database in log lines (`jni::logging::label`). Not an engine option (no text form).
    pub log_span: LogSpan,
}

/// A `tracing` span that names a database in log lines (none by default).
#[derive(Debug, Clone)]
pub struct LogSpan(pub tracing::Span);

impl LogSpan {
    /// The calling thread runs in the span until the guard drops.
    pub fn entered(&self) -> tracing::span::EnteredSpan {
        self.0.clone().entered()
    }
}

impl Default for LogSpan {
    fn default() -> Self {
        LogSpan(tracing::Span::none())
    }
}

// A span is a handle to the subscriber's record of it (whose own locks recover from poison):
// entering it again after a panic elsewhere sees nothing half-changed, so options holding one
// stay usable across `catch_unwind`, as they were before they held it.
impl std::panic::UnwindSafe for LogSpan {}
impl std::panic::RefUnwindSafe for LogSpan {}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            memtable_bytes: 64 << 20,
            max_frozen_memtables: 2,
            block_cache_bytes: 256 << 20,
            memtables_charged_to_cache: false,
            target_file_bytes: 32 << 20,
            // RocksDB's (and Flink's ForSt's): every L0 file is one more filter probe per read.
            // 8 wrote less (16M keys: 2.03x the user bytes against 2.93x at 4, RocksDB 2.75x),
            // but left about 6 L0 files that kept multi_get at 16M keys under RocksDB's
            // (`SCALE_TURNS=1` of benches/scale.rs: 0.94x at 8, 1.06x and 1.18x at 4); at 4 write
            // amplification stays within 1.13x RocksDB's at 4M-64M keys.
            l0_compaction_trigger: 4,
            l0_stop_trigger: 24,
            // RocksDB's and Flink's ForSt's `max-size-level-base`: a smaller L1 adds a level
            // sooner, and each level rewrites the data once more (16M keys: write amplification
            // 3.5 at 128 MiB vs RocksDB's 2.6).
            l1_target_bytes: 256 << 20,
            level_size_multiplier: 10,
            // As Flink's ForSt (`compaction.level.use-dynamic-size`).
            dynamic_level_sizes: false,
            compaction_readahead_bytes: 2 << 20,
            auto_compaction: true,
            // One: what a Flink slot's share of cores usually allows (Flink's `thread.num` 2 =
            // one flush and one compaction thread).
            max_background_compactions: 1,
            // About 20 s of retries: a storage hiccup passes, an outage fails the task.
            background_retries: 8,
            retry_backoff: Duration::from_millis(100),
            max_retry_backoff: Duration::from_secs(10),
            table: TableOptions::default(),
            log_span: LogSpan::default(),
        }
    }
}

/// Number of levels (L0 plus six sorted levels).
pub const NUM_LEVELS: usize = 7;

/// How an option's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    /// A size in bytes, as a non-negative integer.
    Bytes,
    /// A non-negative integer.
    Count,
    /// `true` or `false`.
    Bool,
    /// One of the listed words.
    Choice(&'static [&'static str]),
}

impl OptionType {
    /// The type's name in the table Java reads.
    pub fn name(self) -> &'static str {
        match self {
            OptionType::Bytes => "bytes",
            OptionType::Count => "count",
            OptionType::Bool => "bool",
            OptionType::Choice(_) => "choice",
        }
    }

    /// The allowed words of a choice, empty for other types.
    pub fn choices(self) -> &'static [&'static str] {
        match self {
            OptionType::Choice(words) => words,
            _ => &[],
        }
    }
}

/// One engine option: its name (as `ForStNative.open` takes it), type, smallest value (numbers),
/// doc, and how it reads and writes its field of [`DbOptions`].
pub struct EngineOption {
    pub name: &'static str,
    pub kind: OptionType,
    pub min: Option<u64>,
    pub doc: &'static str,
    get: fn(&DbOptions) -> u64,
    set: fn(&mut DbOptions, u64),
}

impl EngineOption {
    /// The option's value in `options`, written as [`DbOptions::set`] takes it.
    pub fn value(&self, options: &DbOptions) -> String {
        let raw = (self.get)(options);
        match self.kind {
            OptionType::Bool => (raw != 0).to_string(),
            OptionType::Choice(words) => words[raw as usize].to_string(),
            OptionType::Bytes | OptionType::Count => raw.to_string(),
        }
    }

    /// The default value, as [`Self::value`] writes it.
    pub fn default_value(&self) -> String {
        self.value(&DbOptions::default())
    }

    fn parse(&self, value: &str) -> Result<u64> {
        let value = value.trim();
        let raw = match self.kind {
            OptionType::Bytes | OptionType::Count => value
                .parse::<u64>()
                .map_err(|_| self.invalid(format!("'{value}' is not a non-negative integer")))?,
            OptionType::Bool => match value {
                "true" => 1,
                "false" => 0,
                _ => return Err(self.invalid(format!("'{value}' is not true or false"))),
            },
            OptionType::Choice(words) => match words.iter().position(|w| *w == value) {
                Some(i) => i as u64,
                None => {
                    return Err(
                        self.invalid(format!("'{value}' is not one of {}", words.join(", ")))
                    );
                }
            },
        };
        match self.min {
            Some(min) if raw < min => {
                Err(self.invalid(format!("{raw} is less than the minimum {min}")))
            }
            _ => Ok(raw),
        }
    }

    fn invalid(&self, why: String) -> Error {
        Error::invalid(format!("option '{}': {why}", self.name))
    }
}

/// Every engine option. Java offers each as `state.backend.forst.engine.<name>`.
pub const ENGINE_OPTIONS: &[EngineOption] = &[
    EngineOption {
        name: "memtable-bytes",
        kind: OptionType::Bytes,
        min: Some(4096),
        doc: "memtable size that triggers a flush",
        get: |o| o.memtable_bytes,
        set: |o, v| o.memtable_bytes = v,
    },
    EngineOption {
        name: "max-frozen-memtables",
        kind: OptionType::Count,
        min: Some(1),
        doc: "frozen memtables waiting for flush before writers stall",
        get: |o| o.max_frozen_memtables as u64,
        set: |o, v| o.max_frozen_memtables = v as usize,
    },
    EngineOption {
        name: "block-cache-bytes",
        kind: OptionType::Bytes,
        min: None,
        doc: "capacity of the in-memory block cache",
        get: |o| o.block_cache_bytes,
        set: |o, v| o.block_cache_bytes = v,
    },
    EngineOption {
        name: "memtables-charged-to-cache",
        kind: OptionType::Bool,
        min: None,
        doc: "charge memtables to the block cache, which then holds the whole memory budget",
        get: |o| o.memtables_charged_to_cache as u64,
        set: |o, v| o.memtables_charged_to_cache = v != 0,
    },
    EngineOption {
        name: "target-file-bytes",
        kind: OptionType::Bytes,
        min: Some(4096),
        doc: "target SST file size",
        get: |o| o.target_file_bytes,
        set: |o, v| o.target_file_bytes = v,
    },
    EngineOption {
        name: "l0-compaction-trigger",
        kind: OptionType::Count,
        min: Some(1),
        doc: "L0 files that trigger a compaction",
        get: |o| o.l0_compaction_trigger as u64,
        set: |o, v| o.l0_compaction_trigger = v as usize,
    },
    EngineOption {
        name: "l0-stop-trigger",
        kind: OptionType::Count,
        min: Some(2),
        doc: "L0 files at which flushes wait for compaction (above l0-compaction-trigger)",
        get: |o| o.l0_stop_trigger as u64,
        set: |o, v| o.l0_stop_trigger = v as usize,
    },
    EngineOption {
        name: "l1-target-bytes",
        kind: OptionType::Bytes,
        min: None,
        doc: "target size of L1 (with dynamic-level-sizes: most bytes of the level L0 \
              compacts into)",
        get: |o| o.l1_target_bytes,
        set: |o, v| o.l1_target_bytes = v,
    },
    EngineOption {
        name: "level-size-multiplier",
        kind: OptionType::Count,
        min: Some(2),
        doc: "size ratio between levels",
        get: |o| o.level_size_multiplier,
        set: |o, v| o.level_size_multiplier = v,
    },
    EngineOption {
        name: "dynamic-level-sizes",
        kind: OptionType::Bool,
        min: None,
        doc: "level targets from the data's size (RocksDB's level_compaction_dynamic_level_bytes): \
              the last level's target is its size, each level above 1/level-size-multiplier of \
              the one below, and L0 compacts into the deepest level whose target is within \
              l1-target-bytes, the levels above it staying empty",
        get: |o| o.dynamic_level_sizes as u64,
        set: |o, v| o.dynamic_level_sizes = v != 0,
    },
    EngineOption {
        name: "compaction-readahead-bytes",
        kind: OptionType::Bytes,
        min: None,
        doc: "most bytes per storage request when compaction reads (the buffers of all \
              compactions together stay within 1/4 of the block cache, which they are charged to)",
        get: |o| o.compaction_readahead_bytes as u64,
        set: |o, v| o.compaction_readahead_bytes = v as usize,
    },
    EngineOption {
        name: "auto-compaction",
        kind: OptionType::Bool,
        min: None,
        doc: "run background compactions",
        get: |o| o.auto_compaction as u64,
        set: |o, v| o.auto_compaction = v != 0,
    },
    EngineOption {
        name: "max-background-compactions",
        kind: OptionType::Count,
        min: Some(1),
        doc: "compaction threads; jobs over disjoint files and key ranges run in parallel",
        get: |o| o.max_background_compactions as u64,
        set: |o, v| o.max_background_compactions = v as usize,
    },
    EngineOption {
        name: "block-size",
        kind: OptionType::Bytes,
        min: Some(64),
        doc: "target uncompressed data block size",
        get: |o| o.table.block_size as u64,
        set: |o, v| o.table.block_size = v as usize,
    },
    EngineOption {
        name: "block-restart-interval",
        kind: OptionType::Count,
        min: Some(1),
        doc: "entries between full keys inside a data block",
        get: |o| o.table.restart_interval as u64,
        set: |o, v| o.table.restart_interval = v as usize,
    },
    EngineOption {
        name: "bloom-bits-per-key",
        kind: OptionType::Count,
        min: None,
        doc: "bloom filter bits per key (0: no filter)",
        get: |o| o.table.bloom_bits_per_key as u64,
        set: |o, v| o.table.bloom_bits_per_key = v as usize,
    },
    EngineOption {
        name: "compression",
        kind: OptionType::Choice(COMPRESSIONS),
        min: None,
        doc: "codec of data blocks (a block stays raw unless LZ4 saves 1/8)",
        get: |o| o.table.compression as u64,
        set: |o, v| o.table.compression = if v == 0 { Compression::None } else { Compression::Lz4 },
    },
];

/// The words of [`OptionType::Choice`] for `compression`, in the order of [`Compression`].
const COMPRESSIONS: &[&str] = &["none", "lz4"];

/// The option named `name`, if the engine has one.
pub fn engine_option(name: &str) -> Option<&'static EngineOption> {
    ENGINE_OPTIONS.iter().find(|o| o.name == name)
}

impl DbOptions {
    /// Sets the option `name` from its text form; an unknown name or a bad value is an error that
    /// names the option.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let option = engine_option(name).ok_or_else(|| {
            let known: Vec<&str> = ENGINE_OPTIONS.iter().map(|o| o.name).collect();
            Error::invalid(format!("unknown option '{name}' (known: {})", known.join(", ")))
        })?;
        (option.set)(self, option.parse(value)?);
        Ok(())
    }

    /// Every option with its value in `self`, in the order of [`ENGINE_OPTIONS`].
    pub fn values(&self) -> Vec<(&'static str, String)> {
        ENGINE_OPTIONS.iter().map(|o| (o.name, o.value(self))).collect()
    }

    /// Checks the minimums and the rules between options; the error names the options.
    pub fn validate(&self) -> Result<()> {
        for option in ENGINE_OPTIONS {
            option.parse(&option.value(self))?;
        }
        if self.l0_stop_trigger <= self.l0_compaction_trigger {
            return Err(Error::invalid(format!(
                "option 'l0-stop-trigger' ({}) must be larger than option 'l0-compaction-trigger' \
                 ({})",
                self.l0_stop_trigger, self.l0_compaction_trigger
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_valid() {
        let mut names: Vec<&str> = ENGINE_OPTIONS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENGINE_OPTIONS.len());
        DbOptions::default().validate().unwrap();
        // Each default survives a round trip through its text form.
        for option in ENGINE_OPTIONS {
            let mut options = DbOptions::default();
            options.set(option.name, &option.default_value()).unwrap();
            assert_eq!(option.value(&options), option.default_value(), "{}", option.name);
        }
    }

    #[test]
    fn set_reaches_the_field_and_values_reports_it() {
        let mut options = DbOptions::default();
        options.set("memtable-bytes", "1048576").unwrap();
        options.set("auto-compaction", "false").unwrap();
        options.set("dynamic-level-sizes", "true").unwrap();
        options.set("compression", "none").unwrap();
        options.set("block-restart-interval", "4").unwrap();
        assert_eq!(options.memtable_bytes, 1 << 20);
        assert!(!options.auto_compaction);
        assert!(options.dynamic_level_sizes);
        assert_eq!(options.table.compression, Compression::None);
        assert_eq!(options.table.restart_interval, 4);
        let values = options.values();
        assert!(values.contains(&("memtable-bytes", "1048576".to_string())));
        assert!(values.contains(&("compression", "none".to_string())));
        assert_eq!(values.len(), ENGINE_OPTIONS.len());
    }

    #[test]
    fn errors_name_the_option() {
        let mut options = DbOptions::default();
        for (name, value) in [
            ("memtable-bytes", "-1"),
            ("memtable-bytes", "100"),
            ("auto-compaction", "yes"),
            ("compression", "snappy"),
            ("block-size", "63"),
        ] {
            let e = options.set(name, value).unwrap_err().to_string();
            assert!(e.contains(&format!("'{name}'")), "{e}");
        }
        let e = options.set("nope", "1").unwrap_err().to_string();
        assert!(e.contains("'nope'") && e.contains("memtable-bytes"), "{e}");

        options.set("l0-compaction-trigger", "8").unwrap();
        options.set("l0-stop-trigger", "8").unwrap();
        let e = options.validate().unwrap_err().to_string();
        assert!(e.contains("'l0-stop-trigger'") && e.contains("'l0-compaction-trigger'"), "{e}");
        let small = DbOptions { memtable_bytes: 10, ..DbOptions::default() };
        let e = small.validate().unwrap_err().to_string();
        assert!(e.contains("'memtable-bytes'"), "{e}");
    }
}
