//! Supervision of engine work that runs off the caller's thread (flush and compaction threads,
//! tasks on the I/O runtime) or that a caller runs for the whole database (a compaction): a panic
//! there is a bug, and must neither end a thread silently nor leave waiters blocked. It becomes
//! `Error::Panicked` naming the work and the panic's text; whoever called `supervised` fails the
//! database with it (`DbInner::fail`), which wakes every waiter to `Error::Failed`.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;

use crate::Error;

/// Runs `work`; a panic comes back as the error "`what` panicked: <text>".
///
/// Unwind safety: what `work` leaves half-changed is only looked at again by shutdown and the
/// error report, since the caller fails the database on a panic (see `lsm::locks`).
pub(crate) fn supervised<T>(what: &str, work: impl FnOnce() -> T) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(work))
        .map_err(|payload| Error::from_panic(what, payload.as_ref()))
}

/// `supervised` for a task on the I/O runtime, under the same reasoning.
pub(crate) async fn supervised_task<T>(
    what: &str,
    work: impl Future<Output = T>,
) -> Result<T, Error> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|payload| Error::from_panic(what, payload.as_ref()))
}
