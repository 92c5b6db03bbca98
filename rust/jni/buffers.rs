//! Borrowing the bytes of direct `ByteBuffer`s without copying them.
//!
//! Only direct buffers are accepted: a null or heap buffer, a negative offset or length, or a
//! range past the buffer's capacity is an `IllegalArgumentException`. Ranges are absolute
//! (`offset` from the start of the buffer); the buffer's position and limit are not used.
//!
//! Contract with Java (documented on `ForStNative`): while a native call runs, Java does not
//! read or write the buffers passed to it from another thread.

use ::jni::JNIEnv;
use ::jni::objects::JByteBuffer;
use ::jni::sys::jint;

use super::guard::{JniResult, illegal_argument};

/// Address and capacity of a direct buffer. Holds no borrow of the JNI environment; its life is
/// bounded by the `JByteBuffer` local reference it came from (see [`DirectBuffer::of`]).
#[derive(Clone, Copy, Debug)]
pub struct DirectBuffer {
    address: *mut u8,
    capacity: usize,
}

impl DirectBuffer {
    /// Checks that `buffer` is a non-null direct buffer and reads its address and capacity.
    pub fn of(env: &JNIEnv<'_>, buffer: &JByteBuffer<'_>, what: &str) -> JniResult<DirectBuffer> {
        if buffer.is_null() {
            return illegal_argument(format!("{what} buffer is null"));
        }
        let address = match env.get_direct_buffer_address(buffer) {
            Ok(address) if !address.is_null() => address,
            _ => return illegal_argument(format!("{what} buffer is not a direct ByteBuffer")),
        };
        let capacity = match env.get_direct_buffer_capacity(buffer) {
            Ok(capacity) => capacity,
            Err(_) => return illegal_argument(format!("{what} buffer is not a direct ByteBuffer")),
        };
        Ok(DirectBuffer { address, capacity })
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Checks `offset..offset + length` against the capacity.
    pub fn range(&self, offset: jint, length: jint, what: &str) -> JniResult<(usize, usize)> {
        if offset < 0 || length < 0 {
            return illegal_argument(format!(
                "{what}: negative offset {offset} or length {length}"
            ));
        }
        let (offset, length) = (offset as usize, length as usize);
        if offset + length > self.capacity {
            return illegal_argument(format!(
                "{what}: offset {offset} + length {length} exceeds the buffer capacity {}",
                self.capacity
            ));
        }
        Ok((offset, length))
    }

    /// The bytes `offset..offset + length`, checked against the capacity.
    ///
    /// # Safety
    /// The caller keeps the `JByteBuffer` local reference this came from alive while the slice
    /// is used (a native method's arguments live until it returns, so a slice that does not
    /// escape the call is fine), and no `&mut` slice of an overlapping range exists meanwhile.
    pub unsafe fn slice<'a>(&self, offset: jint, length: jint, what: &str) -> JniResult<&'a [u8]> {
        let (offset, length) = self.range(offset, length, what)?;
        // SAFETY: `address` is the non-null start of a direct buffer of `capacity` bytes, the
        // range lies inside it (checked above), the memory stays allocated while the buffer
        // object is reachable (the caller holds its local reference, see above) and Java does not
        // write it concurrently (contract in the module docs).
        Ok(unsafe { std::slice::from_raw_parts(self.address.add(offset), length) })
    }

    /// Like [`DirectBuffer::slice`], writable.
    ///
    /// # Safety
    /// As for [`DirectBuffer::slice`], and no other slice of an overlapping range exists while
    /// this one is used.
    pub unsafe fn slice_mut<'a>(
        &self,
        offset: jint,
        length: jint,
        what: &str,
    ) -> JniResult<&'a mut [u8]> {
        let (offset, length) = self.range(offset, length, what)?;
        // SAFETY: as in `slice`; exclusivity is the caller's obligation (see above).
        Ok(unsafe { std::slice::from_raw_parts_mut(self.address.add(offset), length) })
    }

    /// Whether `self[a..a + a_len]` and `other[b..b + b_len]` share any byte.
    pub fn overlaps(
        &self,
        a: usize,
        a_len: usize,
        other: &DirectBuffer,
        b: usize,
        b_len: usize,
    ) -> bool {
        let (a_start, b_start) = (self.address as usize + a, other.address as usize + b);
        a_len > 0 && b_len > 0 && a_start < b_start + b_len && b_start < a_start + a_len
    }
}
