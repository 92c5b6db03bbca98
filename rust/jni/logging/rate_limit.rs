//! At most `limit` events of one kind (a callsite on behalf of one database) per `interval`; the
//! rest are counted, and the first event of the kind after its interval ends reports how many
//! were dropped. The clock is injected so that tests decide when time passes.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where the limiter reads the time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
}

/// The monotonic clock of the process.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// What to do with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Log it; `suppressed` events of its kind were dropped in the interval before (report them
    /// first when positive).
    Log { suppressed: u64 },
    /// Drop it (counted for the next report).
    Drop,
}

/// Kinds tracked at most: past this, kinds whose interval ended are forgotten (their unreported
/// drops with them), so that many databases opened over a long life do not grow the map.
const MAX_KINDS: usize = 4096;

/// One kind's current interval.
#[derive(Debug)]
struct Window {
    start: Instant,
    logged: u32,
    dropped: u64,
}

pub struct RateLimiter<K, C = SystemClock> {
    limit: u32,
    interval: Duration,
    clock: C,
    windows: Mutex<HashMap<K, Window>>,
}

impl<K: Hash + Eq, C: Clock> RateLimiter<K, C> {
    pub fn new(limit: u32, interval: Duration, clock: C) -> Self {
        RateLimiter { limit, interval, clock, windows: Mutex::new(HashMap::new()) }
    }

    /// Decides about one event of kind `key`.
    pub fn check(&self, key: K) -> Verdict {
        let now = self.clock.now();
        // A poisoned lock only means a panic while counting; the counts are still usable.
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() >= MAX_KINDS && !windows.contains_key(&key) {
            windows.retain(|_, w| now.duration_since(w.start) < self.interval);
        }
        let window = windows.entry(key).or_insert(Window { start: now, logged: 0, dropped: 0 });
        let mut suppressed = 0;
        if now.duration_since(window.start) >= self.interval {
            suppressed = window.dropped;
            *window = Window { start: now, logged: 0, dropped: 0 };
        }
        if window.logged < self.limit {
            window.logged += 1;
            Verdict::Log { suppressed }
        } else {
            window.dropped += 1;
            Verdict::Drop
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }
}

/// Time that moves only when a test says so.
#[cfg(test)]
#[derive(Clone)]
pub(crate) struct ManualClock(std::sync::Arc<Mutex<Instant>>);

#[cfg(test)]
impl ManualClock {
    pub fn new() -> Self {
        ManualClock(std::sync::Arc::new(Mutex::new(Instant::now())))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn logs_up_to_the_limit_per_interval_then_reports_the_dropped() {
        let clock = ManualClock::new();
        let limiter = RateLimiter::new(3, MINUTE, clock.clone());
        let verdicts: Vec<_> = (0..5).map(|_| limiter.check("retry")).collect();
        let logged = Verdict::Log { suppressed: 0 };
        assert_eq!(verdicts, [logged, logged, logged, Verdict::Drop, Verdict::Drop]);

        clock.advance(MINUTE - Duration::from_millis(1));
        assert_eq!(limiter.check("retry"), Verdict::Drop, "still the same interval");
        clock.advance(Duration::from_millis(1));
        assert_eq!(limiter.check("retry"), Verdict::Log { suppressed: 3 });
        assert_eq!(limiter.check("retry"), logged, "the report is made once");
    }

    #[test]
    fn kinds_are_limited_apart() {
        let limiter = RateLimiter::new(1, MINUTE, ManualClock::new());
        assert_eq!(limiter.check(("retry", "db a")), Verdict::Log { suppressed: 0 });
        assert_eq!(limiter.check(("retry", "db a")), Verdict::Drop);
        assert_eq!(limiter.check(("retry", "db b")), Verdict::Log { suppressed: 0 });
        assert_eq!(limiter.check(("delete", "db a")), Verdict::Log { suppressed: 0 });
    }

    #[test]
    fn a_quiet_interval_reports_nothing() {
        let clock = ManualClock::new();
        let limiter = RateLimiter::new(2, MINUTE, clock.clone());
        limiter.check(1);
        clock.advance(MINUTE * 5);
        assert_eq!(limiter.check(1), Verdict::Log { suppressed: 0 });
    }

    #[test]
    fn many_kinds_forget_the_finished_ones() {
        let clock = ManualClock::new();
        let limiter = RateLimiter::new(1, MINUTE, clock.clone());
        for kind in 0..MAX_KINDS {
            limiter.check(kind);
        }
        clock.advance(MINUTE);
        limiter.check(MAX_KINDS);
        assert_eq!(limiter.windows.lock().unwrap().len(), 1);
    }
}
