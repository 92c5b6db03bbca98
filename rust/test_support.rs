//! Helpers shared by the crate's unit tests, its integration tests and its benches (built with
//! the `test-storages` feature, never in the jar).

/// `len` bytes that do not compress (xorshift64 from `seed`), so that files have the size a test
/// needs.
pub fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
