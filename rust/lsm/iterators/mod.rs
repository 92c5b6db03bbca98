//! Iterators that combine other iterators: a k-way merge and a concatenation of a sorted level.

pub mod level;
pub mod merging;
