//! The merge operator for Flink's list state: a merge operand is one or more serialized elements,
//! and the merged value is every element in write order joined by `,` — the layout Flink's
//! `ForStListState` / `RocksDBListState` deserialize (RocksDB's StringAppendOperator with ',').

use bytes::{Bytes, BytesMut};

pub const LIST_DELIMITER: u8 = b',';

/// Combines a base value (if any) with operands given OLDEST FIRST.
pub fn merge_values(base: Option<&[u8]>, operands_oldest_first: &[&[u8]]) -> Bytes {
    let len = base.map_or(0, |b| b.len() + 1)
        + operands_oldest_first.iter().map(|o| o.len() + 1).sum::<usize>();
    let mut out = BytesMut::with_capacity(len);
    let mut first = true;
    for part in base.into_iter().chain(operands_oldest_first.iter().copied()) {
        if !first {
            out.extend_from_slice(&[LIST_DELIMITER]);
        }
        out.extend_from_slice(part);
        first = false;
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_with_comma_in_write_order() {
        assert_eq!(&merge_values(None, &[b"a"])[..], b"a");
        assert_eq!(&merge_values(Some(b"a"), &[b"b", b"c"])[..], b"a,b,c");
        assert_eq!(&merge_values(None, &[b"x", b"y"])[..], b"x,y");
    }
}
