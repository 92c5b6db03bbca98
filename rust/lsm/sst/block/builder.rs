//! Encoder for one data block; see the parent module for the layout.

use crate::lsm::key::{SeqNo, ValueKind, pack_trailer};
use crate::lsm::sst::coding::{put_u32, put_varint32, varint_len};

pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    /// Internal key of the previous entry, for prefix sharing.
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub(crate) fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Size of the raw block if finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Size this entry would add, for deciding whether to cut the block first.
    pub(crate) fn entry_size_hint(user_key: &[u8], value: &[u8]) -> usize {
        let key_len = user_key.len() + super::TRAILER_LEN;
        varint_len(key_len as u64) + varint_len(value.len() as u64) + 1 + key_len + value.len()
    }

    /// Entry lengths must fit u32 and the block must stay under 4 GiB; the table builder caps
    /// entry and block sizes so that holds.
    pub(crate) fn add(&mut self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let trailer = pack_trailer(seq, kind).to_le_bytes();
        let shared = if self.counter < self.restart_interval && !self.buf.is_empty() {
            let key = user_key.iter().chain(trailer.iter());
            key.zip(self.last_key.iter()).take_while(|(a, b)| a == b).count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let key_len = user_key.len() + trailer.len();
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key_len - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        if shared < user_key.len() {
            self.buf.extend_from_slice(&user_key[shared..]);
            self.buf.extend_from_slice(&trailer);
        } else {
            self.buf.extend_from_slice(&trailer[shared - user_key.len()..]);
        }
        self.buf.extend_from_slice(value);

        self.last_key.clear();
        self.last_key.extend_from_slice(user_key);
        self.last_key.extend_from_slice(&trailer);
        self.counter += 1;
    }

    /// Appends the restart trailer and returns the raw block; the builder is empty afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &r in &self.restarts {
            put_u32(&mut out, r);
        }
        put_u32(&mut out, self.restarts.len() as u32);
        self.restarts.clear();
        self.counter = 0;
        self.last_key.clear();
        out
    }
}
