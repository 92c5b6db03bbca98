//! Helpers shared by the crate's unit tests, its integration tests and its benches (built with
//! the `test-storages` feature, never in the jar).

use crate::storage::XorShift;

/// `len` bytes that do not compress (the fault injector's xorshift64 from `seed`), so that files
/// have the size a test needs.
pub fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = XorShift::new(seed);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}
