//! ForSt-RS: Flink's disaggregated state store.
//!
//! Layers, top to bottom (arrows point down only):
//! - `jni`: the JVM entry points (`org.forstrs.jni.ForStNative`), handles, errors as exceptions.
//! - `executor`: runs one encoded batch of Flink state requests (docs/BATCH_WIRE_FORMAT.md).
//! - `lsm`: the LSM engine (memtable, SST files, versions, flush and compaction, iterators).
//! - `storage`: the file-system seam the engine reads and writes through (object_store, wrappers).
//! - `jvm`: the JVM this library runs in, below both `jni` and the storage's Flink proxy.

pub mod error;
pub mod executor;
/// Entry points of the fuzz targets (docs/FUZZING.md); not an API, not in the jar.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod jni;
pub mod jvm;
pub mod lsm;
pub mod storage;
#[cfg(any(test, feature = "test-storages"))]
pub mod test_support;

pub use error::{Error, ErrorKind, Result};

/// Git revision this library was built from.
pub const BUILD_REVISION: &str = env!("FORST_GIT_REV");

// Other global allocators than glibc's malloc, measured by scripts/bench-allocators.sh; the jar's
// library keeps glibc's (docs/benchmarks.md, "Native allocator").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static JEMALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
