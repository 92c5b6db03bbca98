//! How every block is stored in the file: `payload | type: u8 | masked crc32c: u32 LE`.
//!
//! `type` 0 means the payload is the raw block; `type` 1 means it is `uncompressed_len: u32 LE`
//! followed by an LZ4 block. The checksum covers payload and type so that a flipped type byte is
//! caught too. Checksums are masked (rotated plus a constant) because a CRC over data that itself
//! embeds CRCs is weak; it also makes an all-zero block fail.

use bytes::Bytes;

use super::Compression;
use super::coding::{Decoded, Malformed, read_u32_at};

/// Bytes after every payload: type + checksum.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

const TYPE_RAW: u8 = 0;
const TYPE_LZ4: u8 = 1;

/// LZ4 cannot expand data by more than ~255x; a larger claim is corruption, and refusing it
/// avoids allocating gigabytes on a crafted length.
const LZ4_MAX_RATIO: usize = 255;

const MASK_DELTA: u32 = 0xa282_ead8;

pub(crate) fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

pub(crate) fn checksum(data: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c(data))
}

/// Appends `raw` as a stored block to `out`; returns the stored size (payload + trailer).
pub(crate) fn write_block(out: &mut Vec<u8>, raw: &[u8], compression: Compression) -> usize {
    let start = out.len();
    let mut block_type = TYPE_RAW;
    if compression == Compression::Lz4 {
        // Compressed in place after `start`: `uncompressed_len` then the LZ4 block. A block too
        // large for LZ4 (2 GiB) stays raw.
        if let Ok(bound) = lz4::block::compress_bound(raw.len()) {
            out.resize(start + 4 + bound, 0);
            let compressed = lz4::block::compress_to_buffer(raw, None, true, &mut out[start..]);
            // Decompression costs CPU on every cache miss; only worth it if it saves an eighth.
            match compressed {
                Ok(len) if len <= raw.len() - raw.len() / 8 => {
                    out.truncate(start + len);
                    block_type = TYPE_LZ4;
                }
                _ => out.truncate(start),
            }
        }
    }
    if block_type == TYPE_RAW {
        out.extend_from_slice(raw);
    }
    out.push(block_type);
    let crc = checksum(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.len() - start
}

/// Verifies and unwraps one stored block, returning the raw block contents. A raw payload is
/// returned as a slice of `stored`, without copying.
pub(crate) fn read_block(stored: &Bytes) -> Decoded<Bytes> {
    if stored.len() < BLOCK_TRAILER_LEN {
        return Err(Malformed::new(format!(
            "stored block of {} bytes is shorter than its trailer",
            stored.len()
        )));
    }
    let payload_len = stored.len() - BLOCK_TRAILER_LEN;
    let expected = read_u32_at(stored, payload_len + 1)?;
    let actual = checksum(&stored[..payload_len + 1]);
    if expected != actual {
        return Err(Malformed::new(format!(
            "block checksum mismatch: stored {expected:#010x}, computed {actual:#010x}"
        )));
    }
    match stored[payload_len] {
        TYPE_RAW => Ok(stored.slice(..payload_len)),
        TYPE_LZ4 => {
            let payload = &stored[..payload_len];
            let raw_len = read_u32_at(payload, 0)? as usize;
            let compressed = &payload[4..];
            if raw_len > compressed.len().saturating_mul(LZ4_MAX_RATIO) + 64 {
                return Err(Malformed::new(format!(
                    "lz4 block claims {raw_len} bytes from {} compressed",
                    compressed.len()
                )));
            }
            let mut raw = vec![0u8; raw_len];
            let raw_len_i32 = i32::try_from(raw_len)
                .map_err(|_| Malformed::new(format!("lz4 block claims {raw_len} bytes")))?;
            let n = lz4::block::decompress_to_buffer(compressed, Some(raw_len_i32), &mut raw)
                .map_err(|e| Malformed::new(format!("lz4 decompression failed: {e}")))?;
            if n != raw_len {
                return Err(Malformed::new(format!(
                    "lz4 block decompressed to {n} bytes, header says {raw_len}"
                )));
            }
            Ok(Bytes::from(raw))
        }
        other => Err(Malformed::new(format!("unknown block type {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(raw: &[u8], compression: Compression) -> (usize, Bytes) {
        let mut out = vec![9u8; 3]; // a non-empty prefix checks the offset arithmetic
        let n = write_block(&mut out, raw, compression);
        assert_eq!(n, out.len() - 3);
        let stored = Bytes::from(out).slice(3..);
        (n, read_block(&stored).unwrap())
    }

    #[test]
    fn raw_and_lz4_roundtrip() {
        let compressible = b"abcdefgh".repeat(500);
        let (n, back) = roundtrip(&compressible, Compression::Lz4);
        assert!(n < compressible.len() / 2);
        assert_eq!(&back[..], &compressible[..]);
        let (n, back) = roundtrip(&compressible, Compression::None);
        assert_eq!(n, compressible.len() + BLOCK_TRAILER_LEN);
        assert_eq!(&back[..], &compressible[..]);
        let (_, back) = roundtrip(b"", Compression::Lz4);
        assert!(back.is_empty());
    }

    #[test]
    fn incompressible_stays_raw() {
        // A simple LCG gives bytes LZ4 cannot shrink by an eighth.
        let mut x: u32 = 12345;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let (n, back) = roundtrip(&noise, Compression::Lz4);
        assert_eq!(n, noise.len() + BLOCK_TRAILER_LEN);
        assert_eq!(&back[..], &noise[..]);
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let raw = b"hello hello hello hello hello hello".repeat(4);
        for compression in [Compression::None, Compression::Lz4] {
            let mut out = Vec::new();
            write_block(&mut out, &raw, compression);
            for i in 0..out.len() {
                let mut bad = out.clone();
                bad[i] ^= 0x10;
                assert!(read_block(&Bytes::from(bad)).is_err(), "byte {i}");
            }
            assert!(read_block(&Bytes::from(out[..4].to_vec())).is_err());
        }
    }

    /// Files written before the engine moved to the C library (lz4_flex 0.11 encoded their
    /// blocks) stay readable: this payload is what lz4_flex made of `fixture_raw`.
    #[test]
    fn blocks_compressed_by_lz4_flex_still_decode() {
        let fixture_raw: Vec<u8> =
            (0..300u32).map(|i| b"forst-rs block "[(i % 15) as usize] ^ (i / 60) as u8).collect();
        let hex = "2c010000ff00666f7273742d727320626c6f636b200f001aff00676e7372752c737221636d6e62\
                   6a210f001aff00646d7071762f707122606e6d6169220f001aff00656c7170772e717023616f6c\
                   6068230f001aff00626b7677702976772466686b676f240f00146066686b676f24";
        let mut stored: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        stored.push(TYPE_LZ4);
        let crc = checksum(&stored);
        stored.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(&read_block(&Bytes::from(stored)).unwrap()[..], &fixture_raw[..]);
    }

    #[test]
    fn lz4_bomb_is_refused() {
        // Valid checksum, but the header claims 1 GiB from a few bytes.
        let mut payload = (1u32 << 30).to_le_bytes().to_vec();
        payload.extend_from_slice(&[0u8; 8]);
        payload.push(TYPE_LZ4);
        let crc = checksum(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        assert!(read_block(&Bytes::from(payload)).is_err());
    }
}
