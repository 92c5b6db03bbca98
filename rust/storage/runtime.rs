//! The I/O runtime shared by every database in the process. Engine threads (JNI callers, flush and
//! compaction threads) are not tokio threads; they hand storage futures to `block_on`, while the
//! runtime's workers drive sockets and timers so that many requests overlap.

use std::future::Future;

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Runtime};

static IO_RUNTIME: Lazy<Runtime> = Lazy::new(|| {
    Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("forst-io")
        .enable_all()
        .build()
        .expect("cannot start the forst I/O runtime")
});

pub fn io_runtime() -> &'static Runtime {
    &IO_RUNTIME
}

/// Runs a storage future to completion from a non-runtime thread.
pub fn block_on<F: Future>(future: F) -> F::Output {
    IO_RUNTIME.block_on(future)
}
