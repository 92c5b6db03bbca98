//! A wrapper that injects storage failures for tests: fail the Nth call of a kind, fail a seeded
//! random fraction of calls, or return short reads. Rules change while the database runs, so a
//! test can break storage mid-flush and then heal it with [`FaultStorage::clear`].
//!
//! Injected failures happen before the call reaches the inner storage: the operation has no
//! effect. Their message contains "injected fault" so tests can tell them from real errors.
//!
//! A kind can also be held ([`FaultStorage::hold`], or only on some threads with
//! [`FaultStorage::hold_on_threads`]): its calls wait at a gate, without blocking a thread, until
//! released, so a test can stop a flush mid-way and act while it is stuck.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::Notify;

use super::{FileInfo, FileWriter, Storage, StorageRef, WriteMode};
use crate::{Error, ErrorKind, Result};

/// The calls a rule can target. `Read` covers both `read` and `read_range`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Create,
    Write,
    Finish,
    Put,
    Read,
    Size,
    List,
    Delete,
    Rename,
    Copy,
}

impl OpKind {
    pub const ALL: [OpKind; 10] = [
        OpKind::Create,
        OpKind::Write,
        OpKind::Finish,
        OpKind::Put,
        OpKind::Read,
        OpKind::Size,
        OpKind::List,
        OpKind::Delete,
        OpKind::Rename,
        OpKind::Copy,
    ];
}

/// xorshift64: tiny, seeded, and good enough to spread failures; not worth a `rand` dependency.
#[derive(Debug, Clone)]
pub(crate) struct XorShift(u64);

impl XorShift {
    pub(crate) fn new(seed: u64) -> Self {
        // Mix the seed so 0 and small seeds still give a non-zero, well-spread state.
        let state = seed ^ 0x9E37_79B9_7F4A_7C15;
        Self(if state == 0 { 0x9E37_79B9_7F4A_7C15 } else { state })
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Debug, Clone)]
struct Fraction {
    fraction: f64,
    rng: XorShift,
}

impl Fraction {
    fn hit(&mut self) -> bool {
        self.rng.next_f64() < self.fraction
    }
}

#[derive(Debug, Default)]
struct FaultState {
    /// Calls left until the failing one (1 = the next call fails).
    nth: HashMap<OpKind, u64>,
    fraction: HashMap<OpKind, Fraction>,
    short_reads: Option<Fraction>,
    calls: HashMap<OpKind, u64>,
    injected: u64,
    short_reads_done: u64,
    /// The kind of injected failures (transient unless a test says otherwise).
    error_kind: Option<ErrorKind>,
    /// Held kinds, each for calls on threads whose name starts with its prefix (all for "").
    held: HashMap<OpKind, String>,
    /// Calls waiting at the gate right now, per kind.
    waiting: HashMap<OpKind, u64>,
}

impl FaultState {
    /// Counts the call and says whether it must fail.
    fn check(&mut self, kind: OpKind) -> Option<u64> {
        let count = self.calls.entry(kind).or_default();
        *count += 1;
        let count = *count;
        let mut fail = false;
        if let Some(left) = self.nth.get_mut(&kind) {
            *left -= 1;
            if *left == 0 {
                self.nth.remove(&kind);
                fail = true;
            }
        }
        // Draw even when the nth rule already fired so the random sequence stays independent
        // of the other rules.
        if let Some(fraction) = self.fraction.get_mut(&kind) {
            fail |= fraction.hit();
        }
        if fail {
            self.injected += 1;
            Some(count)
        } else {
            None
        }
    }

    fn shorten(&mut self, data: Bytes) -> Bytes {
        let hit = !data.is_empty() && self.short_reads.as_mut().is_some_and(Fraction::hit);
        if hit {
            self.short_reads_done += 1;
            data.slice(..data.len() / 2)
        } else {
            data
        }
    }
}

#[derive(Debug, Default)]
struct SharedState {
    state: Mutex<FaultState>,
    /// Signalled when a call starts waiting at the gate (for [`FaultStorage::wait_held`]).
    waiting_changed: Condvar,
    /// Signalled when held kinds are released.
    released: Notify,
}

#[derive(Debug, Clone, Default)]
struct Shared(Arc<SharedState>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, FaultState> {
        // A test that panicked while holding the lock must not hide the next test's failure.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits while `kind` is held, then counts the call and fails it if a rule says so.
    async fn check(&self, kind: OpKind, url: &str) -> Result<()> {
        self.pass_gate(kind).await;
        let mut state = self.lock();
        match state.check(kind) {
            Some(count) => Err(Error::storage(
                state.error_kind.unwrap_or(ErrorKind::Transient),
                url,
                format!("injected fault: {kind:?} call #{count}"),
                None,
            )),
            None => Ok(()),
        }
    }

    async fn pass_gate(&self, kind: OpKind) {
        // Futures run to completion on the caller's thread (`block_on`), so this is the caller.
        let thread = std::thread::current();
        let holds = |prefix: &String| {
            prefix.is_empty() || thread.name().is_some_and(|name| name.starts_with(prefix.as_str()))
        };
        let mut counted = false;
        loop {
            // Created before the check: a release between the check and the await still wakes it.
            let released = self.0.released.notified();
            {
                let mut state = self.lock();
                if !state.held.get(&kind).is_some_and(holds) {
                    if counted {
                        *state.waiting.entry(kind).or_default() -= 1;
                    }
                    return;
                }
                if !counted {
                    counted = true;
                    *state.waiting.entry(kind).or_default() += 1;
                    self.0.waiting_changed.notify_all();
                }
            }
            released.await;
        }
    }
}

#[derive(Debug)]
pub struct FaultStorage {
    inner: StorageRef,
    state: Shared,
}

impl FaultStorage {
    /// Starts with no rules: every call passes through.
    pub fn new(inner: StorageRef) -> Self {
        Self { inner, state: Shared::default() }
    }

    /// The `n`th call of `kind` from now (1 = the next one) fails, once. Replaces an earlier
    /// nth rule for the same kind; `n == 0` removes it.
    pub fn fail_nth(&self, kind: OpKind, n: u64) {
        let mut state = self.state.lock();
        if n == 0 {
            state.nth.remove(&kind);
        } else {
            state.nth.insert(kind, n);
        }
    }

    /// Each call of `kind` fails with probability `fraction`, drawn from a PRNG seeded with
    /// `seed`, so the same calls fail on every run. `fraction <= 0` removes the rule.
    pub fn fail_fraction(&self, kind: OpKind, fraction: f64, seed: u64) {
        let mut state = self.state.lock();
        if fraction <= 0.0 {
            state.fraction.remove(&kind);
        } else {
            state.fraction.insert(kind, Fraction { fraction, rng: XorShift::new(seed) });
        }
    }

    /// Every call of `kind` fails until the rule is cleared.
    pub fn fail_always(&self, kind: OpKind) {
        self.fail_fraction(kind, 1.0, 0);
    }

    /// A `fraction` of successful reads (`read` and `read_range`) return only the first half of
    /// their bytes, as a buggy or interrupted transfer might. `fraction <= 0` turns it off.
    pub fn short_reads(&self, fraction: f64, seed: u64) {
        self.state.lock().short_reads =
            (fraction > 0.0).then(|| Fraction { fraction, rng: XorShift::new(seed) });
    }

    /// Injected failures from now on are of `kind` (until then: transient, as a network hiccup).
    pub fn fail_as(&self, kind: ErrorKind) {
        self.state.lock().error_kind = Some(kind);
    }

    /// Calls of `kind` wait until [`FaultStorage::release`] (calls already past the gate go on).
    pub fn hold(&self, kind: OpKind) {
        self.hold_on_threads(kind, "");
    }

    /// Calls of `kind` made on threads whose name starts with `prefix` (e.g. "forst-flush") wait
    /// until [`FaultStorage::release`].
    pub fn hold_on_threads(&self, kind: OpKind, prefix: &str) {
        self.state.lock().held.insert(kind, prefix.to_string());
    }

    /// Lets held calls of every kind go on, and later ones pass.
    pub fn release(&self) {
        self.state.lock().held.clear();
        self.state.0.released.notify_waiters();
    }

    /// Blocks until at least `n` calls of `kind` wait at the gate.
    pub fn wait_held(&self, kind: OpKind, n: u64) {
        let mut state = self.state.lock();
        while state.waiting.get(&kind).copied().unwrap_or(0) < n {
            state = self.state.0.waiting_changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Removes every rule and releases held calls; counters are kept.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        state.nth.clear();
        state.fraction.clear();
        state.short_reads = None;
        drop(state);
        self.release();
    }

    /// Calls of `kind` seen so far, failed ones included.
    pub fn calls(&self, kind: OpKind) -> u64 {
        self.state.lock().calls.get(&kind).copied().unwrap_or(0)
    }

    /// Failures injected so far (short reads not included).
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    /// Short reads returned so far.
    pub fn short_reads_returned(&self) -> u64 {
        self.state.lock().short_reads_done
    }

    fn url_of(&self, path: &str) -> String {
        format!("{}/{}", self.inner.url().trim_end_matches('/'), path)
    }
}

#[async_trait]
impl Storage for FaultStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let url = self.url_of(path);
        self.state.check(OpKind::Create, &url).await?;
        let inner = self.inner.create(path).await?;
        Ok(Box::new(FaultWriter { inner, state: self.state.clone(), url }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        self.state.check(OpKind::Put, &self.url_of(path)).await?;
        self.inner.put(path, data, mode).await
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.state.check(OpKind::Read, &self.url_of(path)).await?;
        let data = self.inner.read_range(path, range).await?;
        Ok(self.state.lock().shorten(data))
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.state.check(OpKind::Read, &self.url_of(path)).await?;
        let data = self.inner.read(path).await?;
        Ok(self.state.lock().shorten(data))
    }

    async fn size(&self, path: &str) -> Result<u64> {
        self.state.check(OpKind::Size, &self.url_of(path)).await?;
        self.inner.size(path).await
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        self.state.check(OpKind::List, &self.url_of(dir)).await?;
        self.inner.list(dir).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.state.check(OpKind::Delete, &self.url_of(path)).await?;
        self.inner.delete(path).await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.state.check(OpKind::Rename, &self.url_of(from)).await?;
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.state.check(OpKind::Copy, &self.url_of(from)).await?;
        self.inner.copy(from, to).await
    }

    fn locate(&self, path: &str) -> Option<super::Location> {
        self.inner.locate(path)
    }

    /// Counts as a Copy: checkpoints and restores copy files in through here.
    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<super::Transfer> {
        self.state.check(OpKind::Copy, &self.url_of(to)).await?;
        self.inner.copy_in(src, from, to).await
    }
}

struct FaultWriter {
    inner: Box<dyn FileWriter>,
    state: Shared,
    url: String,
}

#[async_trait]
impl FileWriter for FaultWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.state.check(OpKind::Write, &self.url).await?;
        self.inner.write(data).await
    }

    fn held_bytes(&mut self) -> u64 {
        self.inner.held_bytes()
    }

    async fn finish(self: Box<Self>) -> Result<u64> {
        // On failure the inner writer is dropped unfinished, so nothing becomes visible.
        self.state.check(OpKind::Finish, &self.url).await?;
        self.inner.finish().await
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_seeded_and_uniform_enough() {
        let draw = |seed| {
            let mut rng = XorShift::new(seed);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let mut rng = XorShift::new(0);
        let n = 100_000;
        let below = (0..n).filter(|_| rng.next_f64() < 0.25).count();
        assert!((below as f64 / n as f64 - 0.25).abs() < 0.01, "{below}");
    }

    #[test]
    fn nth_rule_fires_once() {
        let mut state = FaultState::default();
        state.nth.insert(OpKind::Read, 3);
        let fails: Vec<bool> = (0..5).map(|_| state.check(OpKind::Read).is_some()).collect();
        assert_eq!(fails, [false, false, true, false, false]);
        assert!(state.check(OpKind::Write).is_none());
        assert_eq!(state.calls[&OpKind::Read], 5);
        assert_eq!(state.injected, 1);
    }
}
