//! Compactions in flight, so that several can run at once without touching the same data: the
//! files they read (RocksDB's `being_compacted`) and the key range each will write at its output
//! level. The picker skips a job that would read a busy file or write into a range another job is
//! writing at the same level; level 0 compacts one job at a time (its files overlap each other).
//! A claim is taken under one mutex together with the version it was picked from, and let go
//! after its result is installed (or it failed), so a job never sees another's inputs as free
//! while their replacement is not yet in the version.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::lsm::compaction::picker::{CompactionJob, key_range};
use crate::lsm::locks::Recover;
use crate::lsm::version::TableFile;

/// What the running compactions hold.
#[derive(Debug, Default)]
pub struct InFlight {
    /// Numbers of the files compactions are reading (or dropping).
    busy: HashSet<u64>,
    /// Per claim: its output level and the inclusive key range it writes there.
    outputs: Vec<(u64, usize, Vec<u8>, Vec<u8>)>,
    next_claim: u64,
    /// Whether a job reading level 0 runs.
    level0: bool,
    running: usize,
    max_running: usize,
}

impl InFlight {
    /// Whether `job` can run beside the compactions in flight: it reads no busy file, writes
    /// into no range another job writes at its output level, and is not a second L0 job.
    pub fn admits(&self, job: &CompactionJob) -> bool {
        if self.level0 && job.inputs.iter().any(|(level, _)| *level == 0) {
            return false;
        }
        if job.input_files().any(|f| self.busy.contains(&f.number)) {
            return false;
        }
        let (lo, hi) = job.key_range();
        !self
            .outputs
            .iter()
            .any(|(_, level, a, b)| *level == job.output_level && *a <= hi && lo <= *b)
    }

    /// Whether a compaction is reading `file`.
    pub fn is_busy(&self, file: &TableFile) -> bool {
        self.busy.contains(&file.number)
    }

    /// Compactions running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Most compactions that ran at once since open.
    pub fn max_running(&self) -> usize {
        self.max_running
    }

    fn claim(
        &mut self,
        files: &[Arc<TableFile>],
        output: Option<(usize, Vec<u8>, Vec<u8>)>,
    ) -> Claimed {
        let id = self.next_claim;
        self.next_claim += 1;
        self.busy.extend(files.iter().map(|f| f.number));
        if let Some((level, lo, hi)) = output {
            self.outputs.push((id, level, lo, hi));
        }
        self.running += 1;
        self.max_running = self.max_running.max(self.running);
        Claimed { id, files: files.iter().map(|f| f.number).collect(), level0: false }
    }

    fn release(&mut self, claimed: &Claimed) {
        claimed.files.iter().for_each(|n| {
            self.busy.remove(n);
        });
        self.outputs.retain(|(id, ..)| *id != claimed.id);
        if claimed.level0 {
            self.level0 = false;
        }
        self.running -= 1;
    }
}

/// What one claim holds, to give back.
struct Claimed {
    id: u64,
    files: Vec<u64>,
    level0: bool,
}

/// The compactions in flight of one database, and a signal when one ends.
#[derive(Default)]
pub struct Compactions {
    state: Mutex<InFlight>,
    ended: Condvar,
}

impl Compactions {
    pub fn lock(&self) -> MutexGuard<'_, InFlight> {
        self.state.lock().recover()
    }

    /// Marks `job`'s files busy and its output range in flight until the claim drops.
    pub fn claim_job<'a>(&'a self, in_flight: &mut InFlight, job: &CompactionJob) -> Claim<'a> {
        let files: Vec<_> = job.input_files().cloned().collect();
        let (lo, hi) = key_range(files.iter());
        let mut claimed = in_flight.claim(&files, Some((job.output_level, lo, hi)));
        if job.inputs.iter().any(|(level, _)| *level == 0) {
            in_flight.level0 = true;
            claimed.level0 = true;
        }
        Claim { compactions: self, claimed: Some(claimed) }
    }

    /// Marks `files` busy (files being dropped: they write nothing) until the claim drops.
    pub fn claim_files<'a>(
        &'a self,
        in_flight: &mut InFlight,
        files: &[Arc<TableFile>],
    ) -> Claim<'a> {
        Claim { compactions: self, claimed: Some(in_flight.claim(files, None)) }
    }

    /// Waits until no compaction runs; true if any ran when called.
    pub fn wait_idle(&self) -> bool {
        let mut in_flight = self.lock();
        let was_running = in_flight.running > 0;
        while in_flight.running > 0 {
            in_flight = self.ended.wait(in_flight).recover();
        }
        was_running
    }
}

/// A compaction's hold on its inputs and output range; dropping it (after the result is
/// installed, or on failure) lets them go.
pub struct Claim<'a> {
    compactions: &'a Compactions,
    claimed: Option<Claimed>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(claimed) = self.claimed.take() {
            self.compactions.lock().release(&claimed);
            self.compactions.ended.notify_all();
        }
    }
}
