//! The file-system proxy: [`Storage`](crate::storage::Storage) on any Flink `FileSystem` (HDFS,
//! OSS, viewfs, anything with a Flink plugin), through JNI calls to the Java classes of
//! `org.forstrs.fs` (`java/src/main/java/org/forstrs/fs/`).
//!
//! - `java`: the bridge classes and method IDs (resolved once, global references) and the
//!   discipline of every call: daemon attach, a local frame, Java exceptions into errors.
//! - `storage`: [`FlinkProxyStorage`], the `Storage` implementation.
//! - `readers`: per-file Java readers, each with a bounded pool of open streams, so concurrent
//!   positional reads of one file run in parallel.
//! - `writer`: sequential writes gathered into large direct-buffer writes.
//!
//! Bytes cross in direct `ByteBuffer`s over native memory: reads are filled in place where the
//! Flink stream can fill a `ByteBuffer` (HDFS, local files), writes are read from native memory.

mod java;
mod readers;
mod storage;
mod writer;

pub use storage::{CopyMethod, FlinkProxyStorage};
