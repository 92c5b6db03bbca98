//! The batch executor (FLIP-426): one AEC batch arrives as one buffer, in the format of
//! `docs/BATCH_WIRE_FORMAT.md`. Requests are grouped by kind: every GET of the batch becomes one
//! `multi_get` (all block reads in flight at once), scans are served in chunks, and every write
//! goes into one atomic write batch applied after the reads.

mod families;
pub mod wire;

pub use families::FamilyRegistry;

use crate::lsm::{Db, WriteBatch};
use crate::{Error, Result};
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
    let requests = wire::decode_requests(request, families)?;
    let response_len = response.len();
    let mut out = ResponseWriter::new(response, requests.len());

    let gets: Vec<_> =
        requests.iter().filter(|r| r.op == Op::Get).map(|r| (&r.cf, r.key)).collect();
    let mut values = db.multi_get(&gets)?.into_iter();
    let mut writes = WriteBatch::new();
    for request in &requests {
        match request.op {
            Op::Get => out.value(values.next().expect("one value per get").as_deref()),
            Op::Scan { limit } => scan(db, request, limit, &mut out)?,
            Op::PrefixExists => out.flag(db.iter_prefix(&request.cf, request.key)?.valid()),
            Op::Put => writes.put(&request.cf, request.key, required_value(request)?),
            Op::Merge => writes.merge(&request.cf, request.key, required_value(request)?),
            Op::Delete => writes.delete(&request.cf, request.key),
            Op::DeletePrefix => writes.delete_prefix(&request.cf, request.key),
        }
    }

    let written = out.finish();
    if written > response_len {
        return Ok(-(written as i64));
    }
    db.write(&writes)?;
    Ok(written as i64)
}

fn required_value<'a>(request: &Request<'a>) -> Result<&'a [u8]> {
    request.value.ok_or_else(|| Error::invalid(format!("{:?} request without a value", request.op)))
}

/// One chunk of a prefix scan, resuming after `request.value` if given.
fn scan(db: &Db, request: &Request<'_>, limit: u32, out: &mut ResponseWriter<'_>) -> Result<()> {
    let mut it = db.iter_prefix(&request.cf, request.key)?;
    if let Some(resume_after) = request.value {
        it.seek(resume_after)?;
        if it.valid() && it.key() == resume_after {
            it.advance()?;
        }
    }
    let count_at = out.begin_scan();
    let mut entries = 0;
    while it.valid() && entries < limit {
        out.scan_entry(it.key(), it.value());
        entries += 1;
        it.advance()?;
    }
    out.end_scan(count_at, entries, it.valid());
    Ok(())
}

#[cfg(test)]
mod tests;
