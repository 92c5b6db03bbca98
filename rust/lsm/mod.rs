//! The LSM engine. It knows storage only through `crate::storage::Storage`.

pub mod cache;
pub mod iterator;
pub mod key;
pub mod sst;
