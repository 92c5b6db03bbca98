//! Data blocks. Layout of a raw (unframed) block:
//!
//! ```text
//! entry*  restart_offset: u32 LE * n  n: u32 LE
//! entry = shared: varint32  unshared: varint32  value_len: varint32  key[shared..]  value
//! ```
//!
//! `key` is the internal key `user_key | pack_trailer(seq, kind) as u64 LE`, and `shared` is how
//! many leading bytes it has in common with the previous entry's key. Every `restart_interval`-th
//! entry is a restart point: it stores its key whole (`shared == 0`) and its offset is listed in
//! the trailer, so a seek binary-searches the restart points and then scans at most one interval.

mod builder;
mod decoder;

pub(crate) use builder::BlockBuilder;
pub use decoder::Block;
pub(crate) use decoder::BlockIter;

/// Bytes of the internal-key trailer appended to every user key.
pub(crate) const TRAILER_LEN: usize = 8;
