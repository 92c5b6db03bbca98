//! The LSM engine. It knows storage only through `crate::storage::Storage`.
//!
//! `db` is the public API over `db_state`, the state every part shares (`DbInner`).
//! Write path: `db_state::write_path` (batch -> memtable) -> `flush` (memtable -> L0 SST via
//! `collapse` and `table_sink`) -> `compaction` (levels, dropping expired Flink TTL state through
//! `ttl`), each installing its result through `db_state::install`. Read path: `read` (point
//! gets, multi_get) and `db_iterator` (scans) over memtables and `sst` tables. `version` holds
//! the live files and the manifest that makes them durable.

pub mod batch;
pub mod cache;
pub mod checkpoint;
pub mod checkpoint_reader;
mod collapse;
pub mod column_family;
mod compaction;
pub mod db;
pub mod db_iterator;
mod db_state;
#[cfg(test)]
mod db_tests;
mod destroy;
#[cfg(feature = "failpoints")]
pub mod failpoints;
mod flush;
pub mod iterator;
pub mod iterators;
pub mod key;
pub(crate) mod locks;
pub mod memtable;
mod memtable_filter;
mod memtable_skiplist;
mod memtable_tombstones;
pub mod merge;
pub mod native_heap;
pub mod options;
pub mod range_tombstone;
mod read;
mod resolve;
pub mod restore;
mod retry;
pub mod sst;
pub mod stats;
mod supervision;
mod table_sink;
pub mod tombstone_files;
mod tombstone_prefixes;
pub mod ttl;
pub mod version;
mod writer_lock;

pub use batch::WriteBatch;
pub use checkpoint::Checkpoint;
pub use checkpoint_reader::CheckpointReader;
pub use column_family::ColumnFamily;
pub use db::Db;
pub use db_iterator::DbIterator;
pub use destroy::{AfterFailover, Leave, delete_database};
pub use options::DbOptions;
pub use read::Reads;
pub use restore::{KeyGroupLayout, KeyGroups, RestoreSource, restore};
pub use stats::{DbStats, EXPORTED_STATS};
pub use ttl::{ListElementFilter, SystemClock, TtlClock, TtlFilter, TtlLayout};
