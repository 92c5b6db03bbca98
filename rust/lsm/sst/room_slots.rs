//! A table's way to its index and filter partitions that the index/filter room holds, without a
//! cache lookup. A read probes the filter of every file that may hold its key and the index of
//! the one that passes; through the cache each is a hash probe, a shard lock and an entry to
//! load (about a fifth of a multi_get at 16M keys). The room keeps what it holds until the
//! memtables take their share back, so its partitions can be reached straight from the table.
//!
//! A slot only points at a partition (a `Weak`): the room still owns it, and an eviction frees
//! it as before. The slot then leads nowhere and the next lookup goes through the cache again.
//! Only partitions in the room get a slot: those in the block cache churn with the data blocks,
//! and lookups that skip the cache would let their recency fade.

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::bloom::{Bloom, prefetch_line};
use super::index::Index;
use crate::lsm::cache::BlockCache;

type Slot = (Option<Weak<Bloom>>, Option<Weak<Index>>);

/// An `Arc`'s strong and weak counts, which sit just before its value.
const COUNTS: usize = 2 * size_of::<usize>();

/// What a slot's `Weak` keeps allocated once its partition is gone: the counts and the struct,
/// not the bits or the entries.
const FILTER_SHELL: u64 = (COUNTS + size_of::<Bloom>()) as u64;
const INDEX_SHELL: u64 = (COUNTS + size_of::<Index>()) as u64;

/// One slot per partition of a table: its filter and its index partition. Charged to the cache:
/// the slots, and a shell for every slot that points somewhere (while the partition lives, its
/// struct is counted twice; a few percent of a partition).
pub(crate) struct RoomSlots {
    slots: Box<[Mutex<Slot>]>,
    cache: Arc<BlockCache>,
    /// Bytes reserved in `cache`.
    charged: AtomicU64,
}

impl RoomSlots {
    pub(crate) fn new(partitions: usize, cache: Arc<BlockCache>) -> Self {
        let slots: Box<[_]> = (0..partitions).map(|_| Mutex::new((None, None))).collect();
        let bytes = (slots.len() * size_of::<Mutex<Slot>>()) as u64;
        cache.reserve(bytes);
        RoomSlots { slots, cache, charged: AtomicU64::new(bytes) }
    }

    /// Bytes the slots charge to the cache.
    pub(crate) fn charged_bytes(&self) -> u64 {
        self.charged.load(Ordering::Relaxed)
    }

    pub(crate) fn filter(&self, p: usize) -> Option<Arc<Bloom>> {
        self.slot(p, |(filter, _)| self.upgrade(filter, FILTER_SHELL))?
    }

    pub(crate) fn index(&self, p: usize) -> Option<Arc<Index>> {
        self.slot(p, |(_, index)| self.upgrade(index, INDEX_SHELL))?
    }

    /// Prefetches slot `p`, the first step of the way to its filter.
    pub(crate) fn prefetch_slot(&self, p: usize) {
        if let Some(slot) = self.slots.get(p) {
            prefetch_line((slot as *const Mutex<Slot>).cast());
        }
    }

    /// Prefetches the counts of the filter slot `p` points at, the second step: `filter(p)`
    /// then finds them in the CPU's caches.
    pub(crate) fn prefetch_filter(&self, p: usize) {
        self.slot(p, |(filter, _)| {
            if let Some(filter) = filter {
                // Only an address is formed, and a prefetch never faults.
                prefetch_line(filter.as_ptr().cast::<u8>().wrapping_sub(COUNTS));
            }
        });
    }

    pub(crate) fn hold_filter(&self, p: usize, filter: &Arc<Bloom>) {
        self.slot(p, |(slot, _)| self.hold(slot, filter, FILTER_SHELL));
    }

    pub(crate) fn hold_index(&self, p: usize, index: &Arc<Index>) {
        self.slot(p, |(_, slot)| self.hold(slot, index, INDEX_SHELL));
    }

    /// Runs `f` on partition `p`'s slot; None past the table's partitions.
    fn slot<T>(&self, p: usize, f: impl FnOnce(&mut Slot) -> T) -> Option<T> {
        let slot = self.slots.get(p)?;
        Some(f(&mut slot.lock().unwrap_or_else(|e| e.into_inner())))
    }

    fn hold<T>(&self, slot: &mut Option<Weak<T>>, held: &Arc<T>, shell: u64) {
        if slot.replace(Arc::downgrade(held)).is_none() {
            self.charge(shell, true);
        }
    }

    /// The partition `slot` points at if it is still held; else lets go of its shell.
    fn upgrade<T>(&self, slot: &mut Option<Weak<T>>, shell: u64) -> Option<Arc<T>> {
        let held = slot.as_ref()?.upgrade();
        if held.is_none() {
            *slot = None;
            self.charge(shell, false);
        }
        held
    }

    fn charge(&self, bytes: u64, more: bool) {
        if more {
            self.charged.fetch_add(bytes, Ordering::Relaxed);
            self.cache.reserve(bytes);
        } else {
            self.charged.fetch_sub(bytes, Ordering::Relaxed);
            self.cache.release(bytes);
        }
    }
}

impl Drop for RoomSlots {
    fn drop(&mut self) {
        self.cache.release(*self.charged.get_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_leads_to_its_partition_only_while_the_room_holds_it() {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let slots = RoomSlots::new(2, Arc::clone(&cache));
        let empty = cache.reserved_bytes();
        assert!(empty > 0, "the slots are charged");
        assert!(slots.filter(0).is_none());
        let mut raw = vec![0u8; 64];
        raw.push(6); // probes
        let held = Arc::new(Bloom::decode(raw.into()).unwrap());
        slots.hold_filter(0, &held);
        assert_eq!(cache.reserved_bytes(), empty + FILTER_SHELL, "and the shell it may keep");
        assert!(Arc::ptr_eq(&slots.filter(0).unwrap(), &held));
        assert!(slots.filter(1).is_none());
        // Past the table's partitions: nothing, no panic.
        slots.hold_filter(7, &held);
        assert!(slots.filter(7).is_none());
        drop(held);
        assert!(slots.filter(0).is_none(), "an evicted partition is not kept alive");
        assert_eq!(cache.reserved_bytes(), empty, "its shell let go");
        drop(slots);
        assert_eq!(cache.reserved_bytes(), 0);
    }
}
