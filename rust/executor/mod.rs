//! The batch executor (FLIP-426): one AEC batch arrives as one buffer, in the format of
//! `docs/BATCH_WIRE_FORMAT.md`, and behaves as if its requests ran one by one in issue order:
//! every read sees the batch's own earlier writes to its key (`batch_writes.rs`, `scan.rs`). Yet
//! the reads that need the store go out as one `multi_get` (all block reads in flight at once),
//! scans are served in chunks, and every write goes into one atomic write batch applied after the
//! reads.

mod batch_writes;
mod families;
mod scan;
pub mod wire;

pub use families::FamilyRegistry;

use std::time::Instant;

use crate::Result;
use crate::lsm::column_family::prefix_successor;
use crate::lsm::{Db, WriteBatch};
use batch_writes::{BatchWrites, Seen};
use scan::BatchScan;
use wire::{Op, Request, ResponseWriter};

/// Executes one encoded batch against `db` and writes the responses into `response`.
/// Returns the bytes written, or `-(bytes needed)` if `response` is too small, in which case
/// nothing was applied and the caller retries with a larger buffer.
pub fn execute_batch(
    db: &Db,
    families: &FamilyRegistry,
    request: &[u8],
    response: &mut [u8],
) -> Result<i64> {
    let started = Instant::now();
    let requests = wire::decode_requests(request, families)?;
    let writes = BatchWrites::new(&requests)?;
    let response_len = response.len();
    let mut out = ResponseWriter::new(response, requests.len());

    // What each GET sees of the batch's earlier writes; those that need the store's value share
    // one multi_get.
    let seen: Vec<Option<Seen<'_>>> = requests
        .iter()
        .enumerate()
        .map(|(at, r)| (r.op == Op::Get).then(|| writes.seen(r.cf.id(), r.key, at)))
        .collect();
    let store_reads: Vec<_> = requests
        .iter()
        .zip(&seen)
        .filter(|(_, seen)| matches!(seen, Some(Seen::OnStore(_))))
        .map(|(r, _)| (&r.cf, r.key))
        .collect();
    // The scans' first blocks load in the same flight as the gets' blocks.
    let scan_requests: Vec<&Request<'_>> = requests.iter().filter(|r| is_scan(r.op)).collect();
    let scan_ends: Vec<Option<Vec<u8>>> =
        scan_requests.iter().map(|r| prefix_successor(r.key)).collect();
    let scans: Vec<_> = scan_requests
        .iter()
        .zip(&scan_ends)
        .map(|(r, end)| (&r.cf, scan::start_key(r), end.as_deref()))
        .collect();
    let reads = db.multi_get_and_prefetch(&store_reads, &scans)?;
    if reads.waited {
        out.flags(wire::WAITED_ON_STORAGE);
    }
    let mut store_values = reads.values.into_iter();

    let mut batch = WriteBatch::new();
    for (at, (request, seen)) in requests.iter().zip(seen).enumerate() {
        match request.op {
            Op::Get => {
                let seen = seen.expect("every get was resolved");
                let value = match seen {
                    Seen::OnStore(_) => {
                        let store = store_values.next().expect("one store value per store read");
                        seen.over(store.as_deref())
                    }
                    Seen::Decided(value) => value,
                };
                out.value(value.as_deref());
            }
            Op::Scan { limit } => scan(db, &writes, request, at, limit, &mut out)?,
            Op::PrefixExists => {
                out.flag(BatchScan::new(db, &writes, request, at)?.next(|_, _| {})?)
            }
            Op::Put => batch.put(&request.cf, request.key, value_of(request)),
            Op::Merge => batch.merge(&request.cf, request.key, value_of(request)),
            Op::Delete => batch.delete(&request.cf, request.key),
            Op::DeletePrefix => batch.delete_prefix(&request.cf, request.key),
        }
    }

    let written = out.finish();
    if written > response_len {
        return Ok(-(written as i64));
    }
    db.write(&batch)?;
    db.record_batch(requests.len(), started.elapsed());
    Ok(written as i64)
}

fn is_scan(op: Op) -> bool {
    matches!(op, Op::Scan { .. } | Op::PrefixExists)
}

/// The value of a put or merge (`BatchWrites::new` refused requests without one).
fn value_of<'a>(request: &Request<'a>) -> &'a [u8] {
    request.value.expect("writes were checked for values")
}

/// One chunk of a prefix scan, resuming after `request.value` if given.
fn scan(
    db: &Db,
    writes: &BatchWrites<'_>,
    request: &Request<'_>,
    at: usize,
    limit: u32,
    out: &mut ResponseWriter<'_>,
) -> Result<()> {
    let mut entries = BatchScan::new(db, writes, request, at)?;
    let count_at = out.begin_scan();
    let mut count = 0;
    while count < limit && entries.next(|key, value| out.scan_entry(key, value))? {
        count += 1;
    }
    let has_more = count == limit && entries.next(|_, _| {})?;
    out.end_scan(count_at, count, has_more);
    Ok(())
}

#[cfg(test)]
mod tests;
