//! Decoding request buffers and encoding response buffers (`docs/BATCH_WIRE_FORMAT.md`).
//! Decoding borrows keys and values from the request buffer: no copies on the way in.

use bytes::{Buf, BufMut};

use crate::lsm::ColumnFamily;
use crate::{Error, Result};

use super::FamilyRegistry;

pub const REQUEST_MAGIC: u32 = 0x4642_5131; // "FBQ1"
pub const RESPONSE_MAGIC: u32 = 0x4642_5232; // "FBR2"
/// Response flag: a read of the batch waited for storage (see `Reads::waited`).
pub const WAITED_ON_STORAGE: u32 = 1;
const NO_VALUE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
    Merge,
    Delete,
    DeletePrefix,
    Scan { limit: u32 },
    PrefixExists,
}

impl Op {
    /// Whether the request answers with what the store holds.
    pub fn reads(self) -> bool {
        matches!(self, Op::Get | Op::Scan { .. } | Op::PrefixExists)
    }

    fn code(self) -> u8 {
        match self {
            Op::Get => 1,
            Op::Put => 2,
            Op::Merge => 3,
            Op::Delete => 4,
            Op::DeletePrefix => 5,
            Op::Scan { .. } => 6,
            Op::PrefixExists => 7,
        }
    }
}

#[derive(Debug)]
pub struct Request<'a> {
    pub op: Op,
    pub cf: ColumnFamily,
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

pub fn decode_requests<'a>(
    mut buf: &'a [u8],
    families: &FamilyRegistry,
) -> Result<Vec<Request<'a>>> {
    let total = buf.len();
    let bad = |buf: &[u8], what: &str| {
        Error::invalid(format!("malformed batch at byte {}: {what}", total - buf.len()))
    };
    if buf.len() < 8 || buf.get_u32_le() != REQUEST_MAGIC {
        return Err(Error::invalid("malformed batch: missing FBQ1 header"));
    }
    let count = buf.get_u32_le() as usize;
    // Each request takes at least 13 bytes: a count larger than that cannot be real.
    if count > buf.len() / 13 {
        return Err(bad(buf, &format!("count {count} exceeds what the buffer can hold")));
    }
    let mut requests = Vec::with_capacity(count);
    for _ in 0..count {
        if buf.len() < 9 {
            return Err(bad(buf, "truncated request header"));
        }
        let code = buf.get_u8();
        let cf_id = buf.get_u32_le();
        let cf = families
            .get(cf_id)
            .ok_or_else(|| bad(buf, &format!("unknown column family id {cf_id}")))?;
        let key = take(&mut buf, total, "key")?.ok_or_else(|| bad(buf, "missing key"))?;
        let value = take(&mut buf, total, "value")?;
        let op = match code {
            1 => Op::Get,
            2 => Op::Put,
            3 => Op::Merge,
            4 => Op::Delete,
            5 => Op::DeletePrefix,
            6 => {
                if buf.len() < 4 {
                    return Err(bad(buf, "truncated scan limit"));
                }
                Op::Scan { limit: buf.get_u32_le() }
            }
            7 => Op::PrefixExists,
            other => return Err(bad(buf, &format!("unknown op {other}"))),
        };
        requests.push(Request { op, cf, key, value });
    }
    if !buf.is_empty() {
        return Err(bad(buf, "trailing bytes after the last request"));
    }
    Ok(requests)
}

/// A length-prefixed byte string, or None for the "no value" marker.
fn take<'a>(buf: &mut &'a [u8], total: usize, what: &str) -> Result<Option<&'a [u8]>> {
    let at = total - buf.len();
    if buf.len() < 4 {
        return Err(Error::invalid(format!(
            "malformed batch at byte {at}: truncated {what} length"
        )));
    }
    let len = buf.get_u32_le();
    if len == NO_VALUE {
        return Ok(None);
    }
    let len = len as usize;
    if buf.len() < len {
        return Err(Error::invalid(format!(
            "malformed batch at byte {at}: {what} of {len} bytes but {} left",
            buf.len()
        )));
    }
    let (bytes, rest) = buf.split_at(len);
    *buf = rest;
    Ok(Some(bytes))
}

/// Writes responses in request order straight into the caller's buffer, so values go from the
/// block cache to Java's direct buffer in one copy. Past the end of the buffer it only counts:
/// `finish` then reports the size needed and the caller applies nothing.
pub struct ResponseWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> ResponseWriter<'a> {
    pub fn new(buf: &'a mut [u8], count: usize) -> Self {
        let mut w = ResponseWriter { buf, len: 0 };
        w.put_u32(RESPONSE_MAGIC);
        w.put_u32(count as u32);
        w.put_u32(0); // flags, set by `flags`
        w
    }

    /// Sets the header's flags.
    pub fn flags(&mut self, flags: u32) {
        if let Some(dst) = self.buf.get_mut(8..12) {
            dst.copy_from_slice(&flags.to_le_bytes());
        }
    }

    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
        }
        self.len = end;
    }

    fn put_u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }

    fn put_bytes(&mut self, bytes: &[u8]) {
        self.put_u32(bytes.len() as u32);
        self.put(bytes);
    }

    pub fn value(&mut self, value: Option<&[u8]>) {
        match value {
            Some(v) => {
                self.put(&[1]);
                self.put_bytes(v);
            }
            None => self.put(&[0]),
        }
    }

    pub fn flag(&mut self, flag: bool) {
        self.put(&[flag as u8]);
    }

    /// Starts a scan chunk; returns the position of its entry count, filled by `end_scan`.
    pub fn begin_scan(&mut self) -> usize {
        let at = self.len;
        self.put_u32(0);
        at
    }

    pub fn scan_entry(&mut self, key: &[u8], value: &[u8]) {
        self.put_bytes(key);
        self.put_bytes(value);
    }

    pub fn end_scan(&mut self, count_at: usize, entries: u32, has_more: bool) {
        if let Some(dst) = self.buf.get_mut(count_at..count_at + 4) {
            dst.copy_from_slice(&entries.to_le_bytes());
        }
        self.flag(has_more);
    }

    /// Bytes written, or needed if more than the buffer holds.
    pub fn finish(self) -> usize {
        self.len
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.put_u32_le(bytes.len() as u32);
    out.put_slice(bytes);
}

/// Encodes request buffers: what Java's StateExecutor does, for Rust tests and benchmarks.
#[derive(Default)]
pub struct RequestEncoder {
    body: Vec<u8>,
    count: u32,
}

impl RequestEncoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, op: Op, cf: u32, key: &[u8], value: Option<&[u8]>) -> &mut Self {
        self.body.put_u8(op.code());
        self.body.put_u32_le(cf);
        put_bytes(&mut self.body, key);
        match value {
            Some(v) => put_bytes(&mut self.body, v),
            None => self.body.put_u32_le(NO_VALUE),
        }
        if let Op::Scan { limit } = op {
            self.body.put_u32_le(limit);
        }
        self.count += 1;
        self
    }

    pub fn finish(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.body.len());
        out.put_u32_le(REQUEST_MAGIC);
        out.put_u32_le(self.count);
        out.extend_from_slice(&self.body);
        out
    }
}

/// One decoded response, for Rust tests and benchmarks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Value(Option<Vec<u8>>),
    Written,
    Scan { entries: Vec<(Vec<u8>, Vec<u8>)>, has_more: bool },
    Exists(bool),
}

/// Decodes a response buffer given the ops of the request, in order.
pub fn decode_responses(mut buf: &[u8], ops: &[Op]) -> Result<Vec<Response>> {
    let short = || Error::invalid("truncated response");
    let need = |buf: &[u8], n: usize| if buf.len() < n { Err(short()) } else { Ok(()) };
    need(buf, 12)?;
    if buf.get_u32_le() != RESPONSE_MAGIC || buf.get_u32_le() as usize != ops.len() {
        return Err(Error::invalid("bad response header"));
    }
    buf.get_u32_le(); // flags
    let bytes = |buf: &mut &[u8]| -> Result<Vec<u8>> {
        need(buf, 4)?;
        let len = buf.get_u32_le() as usize;
        need(buf, len)?;
        let (v, rest) = buf.split_at(len);
        *buf = rest;
        Ok(v.to_vec())
    };
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        out.push(match op {
            Op::Get => {
                need(buf, 1)?;
                Response::Value(if buf.get_u8() == 1 { Some(bytes(&mut buf)?) } else { None })
            }
            Op::Scan { .. } => {
                need(buf, 4)?;
                let n = buf.get_u32_le();
                let mut entries = Vec::new();
                for _ in 0..n {
                    entries.push((bytes(&mut buf)?, bytes(&mut buf)?));
                }
                need(buf, 1)?;
                Response::Scan { entries, has_more: buf.get_u8() == 1 }
            }
            Op::PrefixExists => {
                need(buf, 1)?;
                Response::Exists(buf.get_u8() == 1)
            }
            Op::Put | Op::Merge | Op::Delete | Op::DeletePrefix => Response::Written,
        });
    }
    Ok(out)
}
