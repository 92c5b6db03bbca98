//! SST files: immutable sorted runs of internal entries, written whole by flush and compaction
//! and read by point lookups and iterators.
//!
//! File layout (all integers little-endian):
//!
//! ```text
//! data block 0 .. data block n-1   prefix-compressed entries (block/), LZ4 or raw
//! partitions                       per index partition: its bloom filter over user keys
//!                                  (bloom.rs; absent if disabled), then the partition: last
//!                                  internal key + handle of each data block (index.rs)
//! properties block                 key range, sequence range, entry count (properties.rs)
//! filter directory                 handle of each filter partition (partitions.rs)
//! top-level index                  last internal key + handle of each index partition
//! footer                           64 bytes: handles, version, checksum, magic (footer.rs)
//! ```
//!
//! That is format 2 (partitions.rs); format-1 files (one whole index and filter before the
//! properties) still open, read as a single partition. Every block is framed as
//! `payload | type: u8 | masked crc32c: u32` (framing.rs). Only data blocks are compressed. An
//! open table keeps its properties and top-level index; partitions and data blocks go through
//! the block cache.

mod block;
mod bloom;
mod builder;
mod coding;
mod footer;
mod framing;
/// Entry points of the fuzz targets (re-exported by `crate::fuzzing`).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub(crate) mod fuzzing;
mod handle;
mod index;
mod iter;
mod live;
mod partitions;
mod properties;
mod room_slots;
mod source;
mod table;

#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests;

use bytes::Bytes;

use crate::lsm::key::SeqNo;

pub(crate) use block::Block;
#[cfg(test)]
pub(crate) use bloom::BloomBuilder;
pub(crate) use bloom::{Bloom, fastrange, hash64, prefetch_line};
pub use builder::{MAX_ENTRY_BYTES, TableBuilder};
pub(crate) use handle::BlockHandle;
pub(crate) use index::Index;
pub use iter::TableIterator;
pub use live::index_filter_live_bytes;
pub use source::{Located, TableSource};
pub use table::Table;

/// Compression of data blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
}

#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Target size of an uncompressed data block. A block is cut before an entry that would push
    /// it past this size, so only a single oversized entry makes a larger block.
    pub block_size: usize,
    /// Entries between restart points (full keys) inside a data block.
    pub restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 writes no filter.
    pub bloom_bits_per_key: usize,
    pub compression: Compression,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::Lz4,
        }
    }
}

/// Summary of one file, stored in its properties block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableProperties {
    /// Smallest user key (no trailer).
    pub smallest_key: Bytes,
    /// Largest user key (no trailer).
    pub largest_key: Bytes,
    pub min_seq: SeqNo,
    pub max_seq: SeqNo,
    /// Number of entries (all versions, all kinds).
    pub entries: u64,
    /// File size in bytes.
    pub size: u64,
}
