//! Free space on the cache's disk, for `cache.reserve-size`.

use std::path::Path;

/// Bytes an unprivileged process may still write on the file system of `dir`, or `None` if the
/// file system cannot tell (then the reserve is not enforced, as in Flink's ForSt).
pub(super) fn available_bytes(dir: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_directory_has_some_space_and_a_missing_one_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available_bytes(dir.path()).is_some_and(|bytes| bytes > 0));
        assert_eq!(available_bytes(&dir.path().join("missing")), None);
    }
}
