//! The properties block: what the engine needs to know about a file without reading its data.
//!
//! Raw layout: `smallest_len: varint, smallest, largest_len: varint, largest, min_seq: varint64,
//! max_seq: varint64, entries: varint64`. Readers ignore bytes after these fields so that later
//! versions can append more without a format bump. The file size is not stored: it is known
//! from the directory listing or manifest.

use bytes::Bytes;

use super::TableProperties;
use super::coding::{Cursor, Decoded, put_length_prefixed, put_varint64};

pub(crate) fn encode(p: &TableProperties) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.smallest_key.len() + p.largest_key.len() + 32);
    put_length_prefixed(&mut out, &p.smallest_key);
    put_length_prefixed(&mut out, &p.largest_key);
    put_varint64(&mut out, p.min_seq);
    put_varint64(&mut out, p.max_seq);
    put_varint64(&mut out, p.entries);
    out
}

pub(crate) fn decode(raw: &[u8], size: u64) -> Decoded<TableProperties> {
    let mut c = Cursor::new(raw);
    let smallest_key = Bytes::copy_from_slice(c.length_prefixed()?);
    let largest_key = Bytes::copy_from_slice(c.length_prefixed()?);
    Ok(TableProperties {
        smallest_key,
        largest_key,
        min_seq: c.varint64()?,
        max_seq: c.varint64()?,
        entries: c.varint64()?,
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_truncation() {
        let p = TableProperties {
            smallest_key: Bytes::from_static(b"a"),
            largest_key: Bytes::from_static(b"zzz"),
            min_seq: 3,
            max_seq: 1 << 50,
            entries: 12345,
            size: 999,
        };
        let raw = encode(&p);
        let back = decode(&raw, 999).unwrap();
        assert_eq!(back.smallest_key, p.smallest_key);
        assert_eq!(back.largest_key, p.largest_key);
        assert_eq!((back.min_seq, back.max_seq, back.entries, back.size), (3, 1 << 50, 12345, 999));
        for len in 0..raw.len() {
            assert!(decode(&raw[..len], 999).is_err());
        }
    }
}
