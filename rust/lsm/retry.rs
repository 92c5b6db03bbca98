//! How background work (flush, compaction) meets errors: a transient one is retried after a
//! backoff that doubles each time, up to a bounded number of retries; a permanent one, or a
//! transient one that outlasts its retries, fails the database (`DbInner::fail`), so that every
//! later call errors and the Flink task fails over instead of spinning.

use std::time::Duration;

use crate::Error;
use crate::lsm::options::DbOptions;

/// The retries of one piece of background work since it last succeeded.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    retries: u32,
}

impl Backoff {
    /// How long to wait before trying again after `error`, or None to give up.
    pub fn after(&mut self, error: &Error, options: &DbOptions) -> Option<Duration> {
        if !error.is_transient() || self.retries >= options.background_retries {
            return None;
        }
        let doubled = options.retry_backoff.saturating_mul(1 << self.retries.min(20));
        self.retries += 1;
        Some(doubled.min(options.max_retry_backoff))
    }

    pub fn succeeded(&mut self) {
        self.retries = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn options() -> DbOptions {
        DbOptions {
            background_retries: 4,
            retry_backoff: Duration::from_millis(100),
            max_retry_backoff: Duration::from_millis(300),
            ..DbOptions::default()
        }
    }

    #[test]
    fn transient_errors_back_off_exponentially_up_to_the_bound() {
        let (mut backoff, options) = (Backoff::default(), options());
        let timeout = Error::transient("s3://b/x", "timed out");
        let waits: Vec<_> = (0..5).map(|_| backoff.after(&timeout, &options)).collect();
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(waits, [ms(100), ms(200), ms(300), ms(300), None]);
        backoff.succeeded();
        assert_eq!(backoff.after(&timeout, &options), ms(100));
    }

    #[test]
    fn permanent_errors_are_not_retried() {
        let mut backoff = Backoff::default();
        for kind in [ErrorKind::PermissionDenied, ErrorKind::Corruption, ErrorKind::Other] {
            let error = Error::storage(kind, "file:///d/x", "put", None);
            assert_eq!(backoff.after(&error, &options()), None, "{kind:?}");
        }
    }
}
