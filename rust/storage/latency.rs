//! A wrapper that makes any storage behave like a remote DFS for benchmarks and tests: each call
//! first waits `per_call + bytes * per_byte`. The wait is an async delay, not a blocked thread, so
//! concurrent calls overlap the way requests in flight to S3 do (1000 parallel reads cost about
//! one latency, not 1000).
//!
//! The wait is `precise_delay::delay`, not `tokio::time::sleep`: tokio's 1 ms timer wheel rounds
//! every deadline up, so every sleep ran about 1 ms long (1.5 ms asked -> 2.6 ms measured) and
//! FLIP-423's 1.5 ms HDFS latency could not be modelled. The precise delay never finishes early
//! and alone overshoots by under 0.1 ms (1.5 ms -> 1.58 ms); when 1000 finish at once, polling
//! them all on the two I/O workers adds a few tenths of a millisecond (1.5 ms -> 1.8-2.1 ms
//! mean). `delays_never_end_early` prints both timers.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::precise_delay::delay;
use super::{FileInfo, FileWriter, Storage, StorageRef, WriteMode};
use crate::Result;

/// Simulated cost of a call: a fixed round trip plus transfer time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency {
    pub per_call: Duration,
    /// Transfer time per byte; e.g. 100 MB/s is 10 ns per byte.
    pub per_byte: Duration,
}

impl Latency {
    pub fn new(per_call: Duration, per_byte: Duration) -> Self {
        Self { per_call, per_byte }
    }

    /// Fixed latency only.
    pub fn per_call(per_call: Duration) -> Self {
        Self::new(per_call, Duration::ZERO)
    }

    pub fn cost(&self, bytes: u64) -> Duration {
        let transfer = self.per_byte.as_nanos().saturating_mul(bytes as u128);
        self.per_call
            .saturating_add(Duration::from_nanos(u64::try_from(transfer).unwrap_or(u64::MAX)))
    }
}

/// Totals since creation (or the last [`LatencyStorage::reset_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyStats {
    /// Every call, writer calls included.
    pub calls: u64,
    /// `read` and `read_range` calls.
    pub reads: u64,
    pub bytes_read: u64,
    /// `put` calls and writer `write` calls.
    pub writes: u64,
    pub bytes_written: u64,
    /// The most calls that were in flight at once: concurrent calls overlap their latency.
    pub max_in_flight: u64,
    /// Calls that started while no other was in flight: the waits a caller sat through one after
    /// another. Calls issued together (one `join`) count once; a call that must wait for the
    /// answer of another counts again. Timing can only lower the count (a call issued while an
    /// unrelated one is still in flight joins its wait), never raise it past the longest chain of
    /// calls that wait for each other.
    pub round_trips: u64,
    /// Injected latency that calls finished waiting, summed over calls.
    pub delayed: Duration,
}

#[derive(Debug, Default)]
struct Counters {
    calls: AtomicU64,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    round_trips: AtomicU64,
    delayed_nanos: AtomicU64,
}

/// One call in flight, from its start until it returns (or is dropped).
struct Call<'a>(&'a Counters);

impl Drop for Call<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Counters {
    fn call(&self) -> Call<'_> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let in_flight = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        if in_flight == 1 {
            self.round_trips.fetch_add(1, Ordering::Relaxed);
        }
        self.max_in_flight.fetch_max(in_flight, Ordering::Relaxed);
        Call(self)
    }

    /// A zero cost completes on the first poll.
    async fn wait(&self, cost: Duration) {
        delay(cost).await;
        let nanos = u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX);
        self.delayed_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn read(&self, bytes: u64) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    fn write(&self, bytes: u64) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub struct LatencyStorage {
    inner: StorageRef,
    latency: Latency,
    counters: Arc<Counters>,
}

impl LatencyStorage {
    pub fn new(inner: StorageRef, latency: Latency) -> Self {
        Self { inner, latency, counters: Arc::default() }
    }

    pub fn latency(&self) -> Latency {
        self.latency
    }

    pub fn stats(&self) -> LatencyStats {
        let c = &self.counters;
        LatencyStats {
            calls: c.calls.load(Ordering::Relaxed),
            reads: c.reads.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            max_in_flight: c.max_in_flight.load(Ordering::Relaxed),
            round_trips: c.round_trips.load(Ordering::Relaxed),
            delayed: Duration::from_nanos(c.delayed_nanos.load(Ordering::Relaxed)),
        }
    }

    pub fn reset_stats(&self) {
        let c = &self.counters;
        let totals = [&c.calls, &c.reads, &c.bytes_read, &c.writes, &c.bytes_written];
        let flights = [&c.max_in_flight, &c.round_trips, &c.delayed_nanos];
        for counter in totals.into_iter().chain(flights) {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

#[async_trait]
impl Storage for LatencyStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        let inner = self.inner.create(path).await?;
        Ok(Box::new(LatencyWriter {
            inner,
            latency: self.latency,
            counters: self.counters.clone(),
        }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let _call = self.counters.call();
        self.counters.write(data.len() as u64);
        self.counters.wait(self.latency.cost(data.len() as u64)).await;
        self.inner.put(path, data, mode).await
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let _call = self.counters.call();
        let len = range.end.saturating_sub(range.start);
        self.counters.wait(self.latency.cost(len)).await;
        let data = self.inner.read_range(path, range).await?;
        self.counters.read(data.len() as u64);
        Ok(data)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let _call = self.counters.call();
        // The size is unknown up front: pay the round trip before, the transfer after.
        self.counters.wait(self.latency.cost(0)).await;
        let data = self.inner.read(path).await?;
        self.counters.read(data.len() as u64);
        self.counters.wait(self.latency.cost(data.len() as u64) - self.latency.per_call).await;
        Ok(data)
    }

    async fn size(&self, path: &str) -> Result<u64> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.size(path).await
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.list(dir).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.delete(path).await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        // Server-side: no bytes cross the client's link.
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.copy(from, to).await
    }

    fn locate(&self, path: &str) -> Option<super::Location> {
        self.inner.locate(path)
    }

    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<super::Transfer> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.copy_in(src, from, to).await
    }
}

struct LatencyWriter {
    inner: Box<dyn FileWriter>,
    latency: Latency,
    counters: Arc<Counters>,
}

#[async_trait]
impl FileWriter for LatencyWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        let _call = self.counters.call();
        self.counters.write(data.len() as u64);
        self.counters.wait(self.latency.cost(data.len() as u64)).await;
        self.inner.write(data).await
    }

    fn held_bytes(&mut self) -> u64 {
        self.inner.held_bytes()
    }

    async fn finish(self: Box<Self>) -> Result<u64> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.finish().await
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        let _call = self.counters.call();
        self.counters.wait(self.latency.cost(0)).await;
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::Instant;

    use super::*;
    use crate::storage::{block_on, io_runtime};

    /// Neither a precise delay nor a tokio sleep ends before the time asked, one at a time or
    /// 1000 at once (how much later they end depends on the machine's load: printed, not
    /// asserted).
    #[test]
    fn delays_never_end_early() {
        for micros in [100u64, 500, 1000, 1500, 2000, 5000] {
            let asked = Duration::from_micros(micros);
            println!("asked {asked:?}");
            measure("precise delay", asked, delay);
            measure("tokio sleep", asked, tokio::time::sleep);
        }
    }

    fn measure<F>(name: &str, asked: Duration, wait: fn(Duration) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let rounds = 20;
        let single = block_on(async {
            let start = Instant::now();
            for _ in 0..rounds {
                wait(asked).await;
            }
            start.elapsed() / rounds
        });
        let start = Instant::now();
        let tasks: Vec<_> = (0..1000)
            .map(|_| {
                io_runtime().spawn(async move {
                    let start = Instant::now();
                    wait(asked).await;
                    start.elapsed()
                })
            })
            .collect();
        let each: Vec<Duration> = block_on(futures::future::join_all(tasks))
            .into_iter()
            .map(|took| took.unwrap())
            .collect();
        let wall = start.elapsed();
        let mean = each.iter().sum::<Duration>() / each.len() as u32;
        let max = each.iter().max().unwrap();
        let min = each.iter().min().unwrap();
        assert!(single >= asked, "{name}: one of {asked:?} ended after {single:?}");
        assert!(*min >= asked, "{name}: one of 1000 of {asked:?} ended after {min:?}");
        println!(
            "  {name:13}: single {single:?}; 1000 concurrent: each {mean:?} mean, {max:?} max, all {wall:?}"
        );
    }

    #[test]
    fn cost_adds_transfer_time() {
        let latency = Latency::new(Duration::from_millis(2), Duration::from_nanos(10));
        assert_eq!(latency.cost(0), Duration::from_millis(2));
        assert_eq!(latency.cost(1_000_000), Duration::from_millis(12));
        let huge = Latency::new(Duration::ZERO, Duration::from_secs(1));
        assert!(huge.cost(u64::MAX) > Duration::from_secs(1));
    }
}
