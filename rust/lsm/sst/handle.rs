//! Block handles: where a stored block lives in the file.

use super::coding::{Cursor, Decoded, put_u64, put_varint64};

/// `size` is the stored size, payload plus the 5-byte type/checksum trailer, so one
/// `read_range(offset..offset + size)` fetches the whole block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub(crate) fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// End offset, or None if it overflows (a corrupt handle).
    pub(crate) fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }

    /// Compact encoding used in the index block.
    pub(crate) fn encode_varint(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    pub(crate) fn decode_varint(c: &mut Cursor<'_>) -> Decoded<Self> {
        Ok(BlockHandle::new(c.varint64()?, c.varint64()?))
    }

    /// Fixed-width encoding used in the footer, which must have a fixed size.
    pub(crate) fn encode_fixed(&self, out: &mut Vec<u8>) {
        put_u64(out, self.offset);
        put_u64(out, self.size);
    }

    pub(crate) fn decode_fixed(c: &mut Cursor<'_>) -> Decoded<Self> {
        Ok(BlockHandle::new(c.u64()?, c.u64()?))
    }
}
