//! Failpoints, for tests only (cargo feature `failpoints`, never in the jar's library): named
//! places in engine work that panic when armed, so that tests (Rust, and Java through the
//! test-only `org.forstrs.jni.Failpoints`) can check that a panicking flush, compaction or write
//! (on the caller's thread) fails the database instead of hanging it or letting it go on; and
//! one that silently loses a put, so that a test can show that it notices a lost update. An
//! unarmed point costs one relaxed atomic load.
//!
//! Arming is process-wide (every open database reaches the same points), so tests that arm one
//! must not run beside tests that could reach it.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::{Error, Result};

/// One named point; it panics the next `times` times it is reached after `arm`.
pub struct Failpoint {
    name: &'static str,
    remaining: AtomicU32,
}

impl Failpoint {
    const fn new(name: &'static str) -> Self {
        Failpoint { name, remaining: AtomicU32::new(0) }
    }

    /// Panics if armed (and counts one of its times down); otherwise one relaxed load.
    #[inline]
    pub(crate) fn hit(&self) {
        if self.remaining.load(Ordering::Relaxed) != 0 {
            self.fire();
        }
    }

    /// Whether the point fires here (counting one of its times down), for a point that changes
    /// what the engine does instead of panicking; otherwise one relaxed load.
    #[inline]
    pub(crate) fn fires(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) != 0 && self.take()
    }

    #[cold]
    fn fire(&self) {
        if self.take() {
            panic!("{}", panic_message(self.name));
        }
    }

    #[cold]
    fn take(&self) -> bool {
        self.remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// In a flush, after it wrote its files and before it installs them.
pub(crate) static FLUSH: Failpoint = Failpoint::new("flush");
/// In a compaction that merges files (background, or one a caller runs), after it wrote its
/// outputs and before it installs them.
pub(crate) static COMPACTION: Failpoint = Failpoint::new("compaction");

/// In a write, on the caller's thread under the writer lock, before the batch is applied.
pub(crate) static WRITE: Failpoint = Failpoint::new("write");

/// In a write, for each put: the put is left out of the memtable and the write still succeeds
/// (the mutation tests' lost update).
pub(crate) static DROP_PUT: Failpoint = Failpoint::new("drop-put");

static ALL: [&Failpoint; 4] = [&FLUSH, &COMPACTION, &WRITE, &DROP_PUT];

/// Makes the point `name` fire the next `times` times it is reached (0 disarms it).
pub fn arm(name: &str, times: u32) -> Result<()> {
    let point = ALL.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<_> = ALL.iter().map(|p| p.name).collect();
        Error::invalid(format!("no failpoint {name:?}; there are {names:?}"))
    })?;
    point.remaining.store(times, Ordering::Release);
    Ok(())
}

/// The message of the panic the point `name` raises (tests look for it in errors).
pub fn panic_message(name: &str) -> String {
    format!("failpoint '{name}' fired")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_point_panics_the_given_number_of_times_then_passes() {
        static POINT: Failpoint = Failpoint::new("test-only");
        POINT.hit();
        POINT.remaining.store(2, Ordering::Release);
        for _ in 0..2 {
            let panicked = std::panic::catch_unwind(|| POINT.hit()).unwrap_err();
            assert_eq!(panicked.downcast_ref::<String>().unwrap(), &panic_message("test-only"));
        }
        POINT.hit();
    }

    #[test]
    fn an_armed_point_fires_the_given_number_of_times_then_not() {
        static POINT: Failpoint = Failpoint::new("test-only-fires");
        assert!(!POINT.fires());
        POINT.remaining.store(2, Ordering::Release);
        assert!(POINT.fires() && POINT.fires());
        assert!(!POINT.fires());
    }

    #[test]
    fn unknown_names_are_refused_naming_the_known_ones() {
        let e = arm("no-such-point", 1).unwrap_err();
        assert!(e.to_string().contains("flush") && e.to_string().contains("compaction"), "{e}");
    }
}
