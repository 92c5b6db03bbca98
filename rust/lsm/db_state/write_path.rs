//! The write path: a batch into the active memtable under the write lock, stalling while too
//! many frozen memtables wait for flush, and freezing a full memtable for the flush thread. Apart
//! from `Db` so that the checkpoint's freeze and the writers share one place that swaps memtables.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::lsm::batch::{BatchOp, WriteBatch};
use crate::lsm::key::MAX_SEQ;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::range_tombstone::RangeTombstone;
use crate::lsm::sst::MAX_ENTRY_BYTES;
use crate::{Error, Result};

use super::{DbInner, SuperVersion, memtable_charge_step};

impl DbInner {
    /// Applies a batch atomically: readers see all of it or none of it. `check_families: false`
    /// skips the check of the batch's handles (`drop_family` writes through the one it just
    /// refused).
    pub(crate) fn apply(&self, batch: &WriteBatch, check_families: bool) -> Result<()> {
        self.check_open()?;
        if batch.is_empty() {
            return Ok(());
        }
        // Refuse what no SST could hold now, rather than fail every flush later.
        if let Some(len) = batch.ops.iter().map(BatchOp::entry_bytes).find(|&n| n > MAX_ENTRY_BYTES)
        {
            return Err(Error::invalid(format!(
                "entry of {len} bytes exceeds the limit of {MAX_ENTRY_BYTES} bytes for key + value"
            )));
        }
        // Wait for room without the write lock: a stalled writer must not hold up a checkpoint's
        // synchronous phase (or other writers' checks) for as long as a flush takes.
        let _writer = loop {
            self.wait_for_memtable_room()?;
            let writer = self.write_lock.lock().recover();
            if self.has_memtable_room() {
                break writer;
            }
        };
        // Under the write lock: a family dropped before this point has its range deletion at a
        // lower sequence number, so a write accepted here can never outlive the drop.
        if check_families {
            batch.families.iter().try_for_each(|cf| self.check_family(cf))?;
        }
        #[cfg(feature = "failpoints")]
        crate::lsm::failpoints::WRITE.hit();
        let mem = self.current().mem.clone();
        let bytes_before = mem.approximate_bytes();
        let mut seq = self.visible_seq.load(Ordering::Acquire);
        if seq + batch.len() as u64 > MAX_SEQ {
            return Err(Error::invalid("sequence numbers exhausted"));
        }
        for op in &batch.ops {
            seq += 1;
            match op {
                BatchOp::Write { kind, key, value } => {
                    #[cfg(feature = "failpoints")]
                    if *kind == crate::lsm::key::ValueKind::Put
                        && crate::lsm::failpoints::DROP_PUT.fires()
                    {
                        continue;
                    }
                    mem.insert(&batch.data[key.clone()], seq, *kind, &batch.data[value.clone()])
                }
                BatchOp::DeleteRange { start, end } => mem.add_tombstone(RangeTombstone {
                    start: start.clone(),
                    end: end.clone(),
                    seq,
                }),
            }
        }
        // Publish only after the whole batch is in the memtable.
        self.visible_seq.store(seq, Ordering::Release);
        self.counters.written(batch.ops.iter().map(|op| op.entry_bytes() as u64).sum());
        let bytes = mem.approximate_bytes();
        if bytes >= self.options.memtable_bytes {
            self.freeze_memtable();
        }
        // The charge follows the memtables in steps, so that small writes do not each resize
        // the cache.
        let step = memtable_charge_step(self.options.memtable_bytes);
        if bytes / step != bytes_before / step {
            self.charge_memtables();
        }
        Ok(())
    }

    /// Freezes the active memtable and wakes the flush thread. Caller holds the write lock, so no
    /// insert races with the swap.
    pub(crate) fn freeze_memtable(&self) {
        self.freeze_memtable_quietly();
        self.notify_background();
    }

    /// Freezes without waking anyone: on a busy machine the woken flush thread takes the caller's
    /// core for a scheduler slice (milliseconds), which a checkpoint's synchronous phase must not
    /// pay. Whoever calls this wakes the flush thread later.
    pub(crate) fn freeze_memtable_quietly(&self) {
        let mut sv = self.super_version.write().recover();
        if sv.mem.is_empty() {
            return;
        }
        let mut frozen = vec![sv.mem.clone()];
        frozen.extend(sv.frozen.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: Arc::new(MemTable::new(self.options.memtable_bytes)),
            frozen,
            version: sv.version.clone(),
            file_map: sv.file_map.clone(),
        });
        self.frozen_total.fetch_add(1, Ordering::AcqRel);
    }

    fn has_memtable_room(&self) -> bool {
        self.current().frozen.len() < self.options.max_frozen_memtables
    }

    /// Stalls the writer while too many frozen memtables wait for flush; bounded memory wins over
    /// latency. Fails if the database fails meanwhile (a flush that cannot succeed), so writers
    /// learn about it. The caller holds no lock, so room may be gone again when it takes the write
    /// lock.
    fn wait_for_memtable_room(&self) -> Result<()> {
        let mut background = self.background.lock().recover();
        let mut stalled = false;
        let started = Instant::now();
        let outcome = loop {
            if self.has_memtable_room() {
                break Ok(());
            }
            if let Err(e) = self.check_running(&background, "database is closed") {
                break Err(e);
            }
            if !stalled {
                stalled = true;
                background.stalled_writers += 1;
                self.background_changed.notify_all();
            }
            background = self.background_changed.wait(background).recover();
        };
        if stalled {
            self.counters.stalled(started.elapsed());
            background.stalled_writers -= 1;
            self.background_changed.notify_all();
        }
        outcome
    }
}
