//! The engine's policy for poisoned locks: take the guard anyway.
//!
//! A panic in engine work fails the database (`lsm::supervision`: background threads and tasks
//! catch it and call `DbInner::fail`; the JNI guard fails the databases a panicking native call
//! touched and throws), so a poisoned lock adds nothing to know. What the locks guard is replaced
//! whole (super version, column families) or changed in single steps (counters, flags, sets of
//! names), so a guard recovered after a panic sees a state that was whole before or after a step.
//! Panicking on poison instead would turn one panic into one per later caller: the waiters that
//! must wake to the failure, `close`, and `Drop` impls, where a second panic during unwinding
//! aborts the JVM.

use std::sync::{LockResult, PoisonError};

/// `LockResult` (of `lock`, `read`, `write`, `Condvar::wait*`) to its guard, poisoned or not.
pub(crate) trait Recover<T> {
    fn recover(self) -> T;
}

impl<T> Recover<T> for LockResult<T> {
    #[inline]
    fn recover(self) -> T {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}
