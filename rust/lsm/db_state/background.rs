//! Background scheduling: starting the worker threads (one flush thread and
//! `max_background_compactions` compaction threads; their bodies, `flush` and `compaction`,
//! are handed in by `Db`, so this state does not depend on them), waking them (one mutex and
//! condition variable, `DbInner::background`), stopping them (shutdown, or a failure that stops
//! the whole database), and waiting for them. A worker that panics fails the database with the
//! panic's text (`lsm::supervision`), so nobody waits for it in vain.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::lsm::locks::Recover;
use crate::lsm::supervision::supervised;
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
    /// passes in: this state knows nothing of them); `stop_background` ends it. If `body` panics,
    /// the database fails with "`role` thread panicked: <the panic's text>".
    pub(crate) fn spawn_worker(
        self: &Arc<Self>,
        name: &str,
        role: &str,
        body: fn(&DbInner),
    ) -> JoinHandle<()> {
        let inner = self.clone();
        let what = format!("{role} thread");
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // Names the database in the thread's log lines.
                let _in_db = inner.options.log_span.entered();
                if let Err(panicked) = supervised(&what, || body(&inner)) {
                    inner.fail(panicked);
                }
            })
            .expect("cannot spawn a background thread")
    }

    /// Tells the background threads to stop; the caller joins them.
    pub(crate) fn stop_background(&self) {
        self.background.lock().recover().shutdown = true;
        self.notify_background();
    }

    pub(crate) fn request_compaction(&self) {
        if self.options.auto_compaction {
            self.background.lock().recover().compaction_requested = true;
            self.background_changed.notify_all();
        }
    }

    /// Waits until every memtable frozen so far is flushed (they flush in the order they were
    /// frozen). Fails if the database fails or closes meanwhile.
    pub(crate) fn wait_for_flushes(&self) -> Result<()> {
        let frozen = self.frozen_total.load(Ordering::Acquire);
        let mut background = self.background.lock().recover();
        loop {
            if background.flushes_done >= frozen {
                return Ok(());
            }
            self.check_running(&background, "database closed during flush")?;
            background = self.background_changed.wait(background).recover();
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

    /// Stops the database after background work failed for good (an error, or a panic): every
    /// later call fails with `error` as its cause, and waiters wake up to that: writers stalled
    /// on frozen memtables, flushes, checkpoints (all on `background_changed`). Waiters for
    /// running compactions and for deletions wake as those end (their claims and counts are let
    /// go on unwinding too). The first failure is the one reported.
    pub(crate) fn fail(&self, error: Error) {
        let url = self.storage.url();
        match self.failure.set(Arc::new(error)) {
            Ok(()) => tracing::error!(
                "database {url} failed, refusing every call: {}",
                self.failure.get().expect("just set")
            ),
            Err(later) => tracing::debug!("database {url} failed already; then: {later}"),
        }
        self.notify_background();
    }

    /// Runs engine work (a compaction, on a background thread or the caller's); a panic in it
    /// fails the database with "`what` panicked: <text>" and returns that failure.
    pub(crate) fn run_supervised<T>(
        &self,
        what: &str,
        work: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        supervised(what, work).unwrap_or_else(|panicked| {
            self.fail(panicked);
            Err(Error::Failed(self.failure.get().expect("set by fail").clone()))
        })
    }

    /// Waits `delay` before background work is retried; false if the database shuts down or
    /// fails first.
    pub(crate) fn pause_before_retry(&self, delay: Duration) -> bool {
        let background = self.background.lock().recover();
        let (background, _) = self
            .background_changed
            .wait_timeout_while(background, delay, |b| !self.stopped(b))
            .recover();
        !self.stopped(&background)
    }

    /// Wakes every waiter on `background_changed` after a change they check. The lock is taken
    /// first so that a waiter between its check and its wait cannot miss the wake-up.
    pub(crate) fn notify_background(&self) {
        drop(self.background.lock().recover());
        self.background_changed.notify_all();
    }
}
