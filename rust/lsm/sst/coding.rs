//! Little-endian fixed-width integers and LEB128 varints, the primitives every SST block is made
//! of. Decoders take a cursor and fail with a short message instead of panicking: block contents
//! come from disk and are untrusted even after the checksum passed (a bug in an older writer, or a
//! crafted file, must surface as corruption, not as an out-of-bounds panic).

/// Why a block's contents could not be decoded; the caller adds file path and block offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

impl Malformed {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Malformed(message.into())
    }
}

pub(crate) type Decoded<T> = std::result::Result<T, Malformed>;

pub(crate) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

/// Length of `v` encoded as a varint, for size estimates.
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn read_u32_at(data: &[u8], at: usize) -> Decoded<u32> {
    let bytes = at
        .checked_add(4)
        .and_then(|end| data.get(at..end))
        .ok_or_else(|| Malformed::new(format!("fixed32 at {at} past end ({})", data.len())))?;
    let mut buf = [0u8; 4];
    buf.copy_from_slice(bytes);
    Ok(u32::from_le_bytes(buf))
}

pub(crate) fn read_u64_at(data: &[u8], at: usize) -> Decoded<u64> {
    let bytes = at
        .checked_add(8)
        .and_then(|end| data.get(at..end))
        .ok_or_else(|| Malformed::new(format!("fixed64 at {at} past end ({})", data.len())))?;
    let mut buf = [0u8; 8];
    buf.copy_from_slice(bytes);
    Ok(u64::from_le_bytes(buf))
}

/// A read position over an untrusted byte slice.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    pub(crate) fn at(data: &'a [u8], pos: usize) -> Self {
        Cursor { data, pos }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub(crate) fn varint64(&mut self) -> Decoded<u64> {
        let mut result: u64 = 0;
        for i in 0..10 {
            let byte = *self
                .data
                .get(self.pos)
                .ok_or_else(|| Malformed::new(format!("varint at {} runs past end", self.pos)))?;
            self.pos += 1;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may only carry the top bit of a u64.
            if i == 9 && bits > 1 {
                return Err(Malformed::new(format!("varint at {} overflows u64", self.pos)));
            }
            result |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(result);
            }
        }
        Err(Malformed::new(format!("varint at {} too long", self.pos)))
    }

    pub(crate) fn varint32(&mut self) -> Decoded<u32> {
        let start = self.pos;
        let v = self.varint64()?;
        u32::try_from(v).map_err(|_| Malformed::new(format!("varint32 at {start} overflows")))
    }

    /// A varint that is a length or offset into memory.
    pub(crate) fn varint_usize(&mut self) -> Decoded<usize> {
        let start = self.pos;
        let v = self.varint64()?;
        usize::try_from(v).map_err(|_| Malformed::new(format!("length at {start} too large")))
    }

    pub(crate) fn u64(&mut self) -> Decoded<u64> {
        let v = read_u64_at(self.data, self.pos)?;
        self.pos += 8;
        Ok(v)
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Decoded<&'a [u8]> {
        let slice =
            self.pos.checked_add(len).and_then(|end| self.data.get(self.pos..end)).ok_or_else(
                || {
                    Malformed::new(format!(
                        "{len} bytes at {} run past end ({})",
                        self.pos,
                        self.data.len()
                    ))
                },
            )?;
        self.pos += len;
        Ok(slice)
    }

    /// A varint length followed by that many bytes.
    pub(crate) fn length_prefixed(&mut self) -> Decoded<&'a [u8]> {
        let len = self.varint_usize()?;
        self.bytes(len)
    }
}

pub(crate) fn put_length_prefixed(out: &mut Vec<u8>, data: &[u8]) {
    put_varint64(out, data.len() as u64);
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip() {
        let values = [0, 1, 127, 128, 300, u32::MAX as u64, 1 << 56, u64::MAX];
        for v in values {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            let mut c = Cursor::new(&buf);
            assert_eq!(c.varint64().unwrap(), v);
            assert!(c.is_empty());
        }
    }

    #[test]
    fn malformed_varints_fail() {
        // Truncated: continuation bit set on the last byte.
        assert!(Cursor::new(&[0x80, 0x80]).varint64().is_err());
        // Eleven bytes.
        assert!(Cursor::new(&[0xff; 11]).varint64().is_err());
        // Ten bytes whose last carries more than one bit.
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(Cursor::new(&over).varint64().is_err());
        // Fits u64 but not u32.
        let mut buf = Vec::new();
        put_varint64(&mut buf, 1 << 40);
        assert!(Cursor::new(&buf).varint32().is_err());
        assert!(Cursor::new(&[5, 1, 2]).length_prefixed().is_err());
    }
}
