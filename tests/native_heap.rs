//! Freed heap memory leaves the process when the engine says so (`native_heap`, called after
//! every flush and compaction job). glibc keeps what is freed below the heap's last live
//! allocation resident for reuse by the same arena: at 16M keys in `benches/scale.rs` the
//! flushed memtables and compaction buffers stayed resident (167 MiB after the load, 1 MiB of it
//! in use) under everything the reads cached afterwards. Alone in its test binary: it reads the
//! process's resident set size.

use forst::lsm::native_heap::release_free_memory;

const MIB: usize = 1 << 20;
/// Below glibc's threshold for giving an allocation its own mapping: these come from the heap.
const PIECE: usize = 64 << 10;

/// Resident memory of this process (VmRSS in /proc/self/status).
fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn memory_freed_below_a_live_allocation_is_handed_back() {
    // 48 MiB written in heap-sized pieces, then a piece that stays: the heap cannot shrink
    // from its end past it, as after a flush while newer allocations live.
    let pieces: Vec<Vec<u8>> = (0..48 * MIB / PIECE).map(|_| vec![1; PIECE]).collect();
    let live = vec![1u8; PIECE];
    let filled = resident_bytes();
    drop(pieces);
    let freed = resident_bytes();
    release_free_memory();
    let released = resident_bytes();
    eprintln!(
        "resident: {} MiB filled, {} MiB freed, {} MiB released",
        filled / MIB,
        freed / MIB,
        released / MIB
    );
    assert!(live.iter().all(|&b| b == 1));
    assert!(
        freed.saturating_sub(released) >= 40 * MIB,
        "the 48 MiB freed stayed resident: {} MiB before, {} MiB after",
        freed / MIB,
        released / MIB
    );
}
