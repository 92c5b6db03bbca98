//! The LSM engine. It knows storage only through `crate::storage::Storage`.

pub mod iterator;
pub mod key;
