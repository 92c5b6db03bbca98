//! Background scheduling: starting the worker threads (one flush thread and
//! `max_background_compactions` compaction threads; their bodies, `flush` and `compaction`,
//! are handed in by `Db`, so this state does not depend on them), waking them (one mutex and
//! condition variable, `DbInner::background`), stopping them (shutdown, or a failure that stops
//! the whole database), and waiting for them.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::{Error, Result};

use super::DbInner;

#[derive(Default)]
pub(crate) struct BackgroundState {
    pub shutdown: bool,
    /// Memtables flushed since open, in the order they were frozen (see `DbInner::frozen_total`).
    pub flushes_done: u64,
    pub compaction_requested: bool,
    /// Writers waiting for a frozen memtable to be flushed (they hold no lock meanwhile).
    pub stalled_writers: usize,
}

impl DbInner {
    /// Starts a background thread running `body` (the flush or the compaction worker, which `Db`
    /// passes in: this state knows nothing of them); `stop_background` ends it.
    pub(crate) fn spawn_worker(self: &Arc<Self>, name: &str, body: fn(&DbInner)) -> JoinHandle<()> {
        let inner = self.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // Names the database in the thread's log lines.
                let _in_db = inner.options.log_span.entered();
                body(&inner)
            })
            .expect("cannot spawn a background thread")
    }

    /// Tells the background threads to stop; the caller joins them.
    pub(crate) fn stop_background(&self) {
        self.background.lock().unwrap().shutdown = true;
        self.notify_background();
    }

    pub(crate) fn request_compaction(&self) {
        if self.options.auto_compaction {
            self.background.lock().unwrap().compaction_requested = true;
            self.background_changed.notify_all();
        }
    }

    /// Waits until every memtable frozen so far is flushed (they flush in the order they were
    /// frozen). Fails if the database fails or closes meanwhile.
    pub(crate) fn wait_for_flushes(&self) -> Result<()> {
        let frozen = self.frozen_total.load(Ordering::Acquire);
        let mut background = self.background.lock().unwrap();
        loop {
            if background.flushes_done >= frozen {
                return Ok(());
            }
            self.check_running(&background, "database closed during flush")?;
            background = self.background_changed.wait(background).unwrap();
        }
    }

    /// For waiters on `background_changed`: fails once the database failed or shuts down.
    pub(crate) fn check_running(&self, background: &BackgroundState, closing: &str) -> Result<()> {
        if let Some(cause) = self.failure.get() {
            return Err(Error::Failed(cause.clone()));
        }
        if background.shutdown {
            return Err(Error::Closed(closing.into()));
        }
        Ok(())
    }

    /// For the background threads: true once they must stop (shutdown, or the database failed).
    pub(crate) fn stopped(&self, background: &BackgroundState) -> bool {
        background.shutdown || self.failure.get().is_some()
    }

    /// Stops the database after background work failed for good: every later call fails with
    /// `error` as its cause, and waiters wake up to that.
    pub(crate) fn fail(&self, error: Error) {
        tracing::error!("database {} failed, refusing every call: {error}", self.storage.url());
        let _ = self.failure.set(Arc::new(error));
        self.notify_background();
    }

    /// Waits `delay` before background work is retried; false if the database shuts down first.
    pub(crate) fn pause_before_retry(&self, delay: Duration) -> bool {
        let background = self.background.lock().unwrap();
        let (background, _) =
            self.background_changed.wait_timeout_while(background, delay, |b| !b.shutdown).unwrap();
        !background.shutdown
    }

    /// Wakes every waiter on `background_changed` after a change they check. The lock is taken
    /// first so that a waiter between its check and its wait cannot miss the wake-up.
    pub(crate) fn notify_background(&self) {
        drop(self.background.lock().unwrap());
        self.background_changed.notify_all();
    }
}
