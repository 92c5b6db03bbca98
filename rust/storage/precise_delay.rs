//! An async delay accurate to about 0.1 ms, for modelling DFS latency (FLIP-423 assumes 1.5 ms per
//! HDFS request). `tokio::time::sleep` cannot do this: its wheel has 1 ms ticks and rounds every
//! deadline up, so every sleep runs about 1 ms long (1.5 ms asked -> 2.6 ms measured).
//!
//! One timer thread keeps a min-heap of (deadline, waker) and blocks on a condvar with
//! `wait_timeout` until the earliest deadline; std's timed waits (a futex on Linux) overshoot by
//! tens of microseconds. Any number of delays share the thread, so thousands of requests in flight
//! overlap and cost one latency, not thousands. The delay works under any executor.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, Once, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Completes once `duration` has elapsed since this call, never earlier. A zero duration completes
/// on the first poll without touching the timer thread.
pub fn delay(duration: Duration) -> Delay {
    let now = Instant::now();
    // `Instant + Duration` panics on overflow; an absurd duration just means "never" (as in tokio).
    let far_future = Duration::from_secs(86_400 * 365 * 30);
    let deadline = now.checked_add(duration).unwrap_or_else(|| now + far_future);
    Delay { deadline, registered: None }
}

/// Future returned by [`delay`].
#[derive(Debug)]
pub struct Delay {
    deadline: Instant,
    /// The waker last handed to the timer, so a re-poll with the same waker does not add entries.
    registered: Option<Waker>,
}

impl Future for Delay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Every field is Unpin, so no pin projection is needed.
        let this = self.get_mut();
        // The only completion test: the timer thread merely wakes us, so a spurious or early wake
        // can never end the delay early.
        if Instant::now() >= this.deadline {
            return Poll::Ready(());
        }
        let waker = cx.waker();
        if !this.registered.as_ref().is_some_and(|w| w.will_wake(waker)) {
            // New or changed waker (task moved): register it too. The old entry stays in the heap
            // and wakes its old waker once, spuriously, which wakers must tolerate anyway.
            TIMER.register(this.deadline, waker.clone());
            this.registered = Some(waker.clone());
        }
        Poll::Pending
    }
}

/// One pending wake-up. Ordered by deadline only, reversed so `BinaryHeap` (a max-heap) pops the
/// earliest first. Entries of a dropped `Delay` stay until their deadline: harmless, one wake.
struct Entry {
    deadline: Instant,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.deadline.cmp(&self.deadline)
    }
}

struct Timer {
    heap: Mutex<BinaryHeap<Entry>>,
    /// Signalled when an entry becomes the earliest, so the thread shortens its wait.
    changed: Condvar,
    started: Once,
}

static TIMER: Timer =
    Timer { heap: Mutex::new(BinaryHeap::new()), changed: Condvar::new(), started: Once::new() };

impl Timer {
    fn lock(&self) -> MutexGuard<'_, BinaryHeap<Entry>> {
        // Nothing panics while the lock is held with the heap half-updated, so a poisoned heap is
        // still valid.
        self.heap.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&'static self, deadline: Instant, waker: Waker) {
        // Started on first use. The JoinHandle is dropped, detaching the thread: nothing ever joins
        // it, and a process exits without waiting for detached threads.
        self.started.call_once(|| {
            std::thread::Builder::new()
                .name("forst-timer".into())
                .spawn(|| self.run())
                .expect("cannot start the forst timer thread");
        });
        let mut heap = self.lock();
        let earliest = heap.peek().is_none_or(|top| deadline < top.deadline);
        heap.push(Entry { deadline, waker });
        // Later deadlines need no signal: the thread wakes for the earlier one first and re-reads
        // the heap. If the thread is not waiting right now (it is waking wakers, unlocked), the
        // signal is lost but harmless: it re-reads the heap before it waits again.
        if earliest {
            self.changed.notify_one();
        }
    }

    fn run(&self) {
        let mut expired = Vec::new();
        let mut heap = self.lock();
        loop {
            let now = Instant::now();
            while let Some(top) = heap.peek()
                && top.deadline <= now
            {
                expired.push(heap.pop().expect("peeked").waker);
            }
            if !expired.is_empty() {
                // Wake outside the lock: an executor may poll inline from `wake`, and that poll
                // may register again.
                drop(heap);
                expired.drain(..).for_each(Waker::wake);
                heap = self.lock();
                continue;
            }
            heap = match heap.peek() {
                None => self.changed.wait(heap).unwrap_or_else(PoisonError::into_inner),
                Some(top) => {
                    let timeout = top.deadline - now;
                    self.changed
                        .wait_timeout(heap, timeout)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::task::Wake;

    use super::*;
    use crate::storage::block_on;

    #[test]
    fn zero_duration_is_ready_at_once() {
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(Pin::new(&mut delay(Duration::ZERO)).poll(&mut cx), Poll::Ready(()));
    }

    /// Correctness, not timing: a delay may finish late on a loaded machine but never early.
    #[test]
    fn never_finishes_early() {
        for micros in [1u64, 100, 500, 1000, 1500, 5000] {
            let asked = Duration::from_micros(micros);
            for _ in 0..5 {
                let start = Instant::now();
                block_on(delay(asked));
                let took = start.elapsed();
                assert!(took >= asked, "asked {asked:?}, done after {took:?}");
            }
        }
    }

    /// Delays overlap: a pending delay blocks no thread, so 1000 delays polled together are all
    /// waiting at once (counted, not timed), and all of them complete.
    #[test]
    fn concurrent_delays_overlap() {
        let asked = Duration::from_micros(1500);
        let (waiting, most_waiting) = (AtomicUsize::new(0), AtomicUsize::new(0));
        block_on(futures::future::join_all((0..1000).map(|_| async {
            let now = waiting.fetch_add(1, AtomicOrdering::SeqCst) + 1;
            most_waiting.fetch_max(now, AtomicOrdering::SeqCst);
            delay(asked).await;
            waiting.fetch_sub(1, AtomicOrdering::SeqCst);
        })));
        assert_eq!(most_waiting.load(AtomicOrdering::SeqCst), 1000);
        assert_eq!(waiting.load(AtomicOrdering::SeqCst), 0);
    }

    /// A future re-polled with a different waker (moved to another task) registers the new one
    /// with the timer. The deadline is far away, so both polls are surely pending; the timer
    /// thread waking registered wakers is what every other test relies on.
    #[test]
    fn registers_the_latest_waker() {
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let mut d = delay(Duration::from_secs(86_400));
        let (first, second) = (Waker::from(Arc::new(Noop)), Waker::from(Arc::new(Noop)));
        assert!(Pin::new(&mut d).poll(&mut Context::from_waker(&first)).is_pending());
        assert!(Pin::new(&mut d).poll(&mut Context::from_waker(&second)).is_pending());
        assert!(Pin::new(&mut d).poll(&mut Context::from_waker(&second)).is_pending());
        let heap = TIMER.lock();
        let ours: Vec<&Entry> = heap.iter().filter(|e| e.deadline == d.deadline).collect();
        assert_eq!(ours.len(), 2, "one entry per distinct waker");
        assert!(ours.iter().any(|e| e.waker.will_wake(&second)));
    }
}
