//! Iterators that combine other iterators: a k-way merge and a concatenation of a sorted level,
//! plus the bounded view of one file they are built from.

pub mod file;
pub mod level;
pub mod merging;
