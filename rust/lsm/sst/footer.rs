//! The footer: the fixed-size last 64 bytes of every SST file, from which everything else is
//! found.
//!
//! ```text
//!  0..16  index handle       (offset u64 LE, size u64 LE)
//! 16..32  filter handle      (size 0: the file has no filter)
//! 32..48  properties handle
//! 48..52  format version     u32 LE (1 or 2)
//! 52..56  masked crc32c of bytes 0..52
//! 56..64  magic              u64 LE
//! ```
//!
//! Handles are fixed-width (not varints) so the footer's position is known without parsing.
//!
//! Format 1: the index handle points at the whole index, the filter handle at the whole bloom
//! filter. Format 2 (written since): the index handle points at the top-level index of the
//! partitioned index, the filter handle at the filter directory (partitions.rs).

use super::coding::{Cursor, Decoded, Malformed, put_u32, put_u64, read_u32_at, read_u64_at};
use super::framing::checksum;
use super::handle::BlockHandle;

pub(crate) const FOOTER_LEN: usize = 64;
/// The version this build writes; it reads 1 and 2.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// Whole index and whole filter, held in memory by the reader (read as one partition).
pub(crate) const FORMAT_WHOLE_INDEX: u32 = 1;
/// "ForStSST" read as little-endian bytes.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"ForStSST");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub version: u32,
    pub index: BlockHandle,
    pub filter: Option<BlockHandle>,
    pub properties: BlockHandle,
}

impl Footer {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.index.encode_fixed(out);
        self.filter.unwrap_or_default().encode_fixed(out);
        self.properties.encode_fixed(out);
        put_u32(out, self.version);
        let crc = checksum(&out[start..]);
        put_u32(out, crc);
        put_u64(out, MAGIC);
    }

    /// Checks magic first (a different kind of file), then checksum, then version.
    pub(crate) fn decode(raw: &[u8]) -> Decoded<Footer> {
        if raw.len() != FOOTER_LEN {
            return Err(Malformed::new(format!("footer is {} bytes", raw.len())));
        }
        let magic = read_u64_at(raw, 56)?;
        if magic != MAGIC {
            return Err(Malformed::new(format!("bad magic {magic:#018x}, not an SST file")));
        }
        let stored = read_u32_at(raw, 52)?;
        let computed = checksum(&raw[..52]);
        if stored != computed {
            return Err(Malformed::new(format!(
                "footer checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            )));
        }
        let version = read_u32_at(raw, 48)?;
        if version != FORMAT_VERSION && version != FORMAT_WHOLE_INDEX {
            return Err(Malformed::new(format!(
                "unsupported format version {version} (this build reads 1 and 2)"
            )));
        }
        let mut c = Cursor::new(&raw[..48]);
        let index = BlockHandle::decode_fixed(&mut c)?;
        let filter = BlockHandle::decode_fixed(&mut c)?;
        let properties = BlockHandle::decode_fixed(&mut c)?;
        Ok(Footer { version, index, filter: (filter.size != 0).then_some(filter), properties })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut out = Vec::new();
        Footer {
            version: FORMAT_VERSION,
            index: BlockHandle::new(100, 20),
            filter: None,
            properties: BlockHandle::new(120, 30),
        }
        .encode(&mut out);
        out
    }

    #[test]
    fn roundtrip() {
        let raw = sample();
        assert_eq!(raw.len(), FOOTER_LEN);
        let f = Footer::decode(&raw).unwrap();
        assert_eq!(f.index, BlockHandle::new(100, 20));
        assert_eq!(f.filter, None);
        assert_eq!(f.properties, BlockHandle::new(120, 30));
    }

    #[test]
    fn any_flipped_byte_fails() {
        let raw = sample();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x04;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
        assert!(Footer::decode(&raw[1..]).is_err());
    }

    #[test]
    fn future_version_is_refused() {
        let mut raw = sample();
        raw[48..52].copy_from_slice(&3u32.to_le_bytes());
        let crc = checksum(&raw[..52]);
        raw[52..56].copy_from_slice(&crc.to_le_bytes());
        let err = Footer::decode(&raw).unwrap_err();
        assert!(err.0.contains("version 3"), "{err:?}");
    }
}
