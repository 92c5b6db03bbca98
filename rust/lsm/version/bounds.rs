//! Visible bounds: the part of a file a database sees when that is less than the whole file (a
//! restore clipped it to a narrower key-group range, see `lsm::restore`). The file's bytes stay
//! untouched; reads, scans and compactions let through only keys inside the bounds.
//!
//! The upper end is either a key (inclusive) or the start of the next key-group range
//! (exclusive). A restore takes the bounds of a file that straddles a key-group boundary from
//! that boundary alone, without reading the file: between two keys there is no largest key to
//! name, so the end must be exclusive. Either way, every visible key is inside the bounds, but the
//! bounds may be wider than the keys (the file may even hold no visible key at all).

use bytes::Bytes;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// Inclusive lower end.
    pub smallest: Bytes,
    /// Upper end: inclusive unless `end_exclusive`.
    pub end: Bytes,
    pub end_exclusive: bool,
}

impl Bounds {
    /// [smallest, largest].
    pub fn inclusive(smallest: Bytes, largest: Bytes) -> Self {
        Bounds { smallest, end: largest, end_exclusive: false }
    }

    /// Whether every key inside lies below `key`.
    pub fn ends_before(&self, key: &[u8]) -> bool {
        match self.end_exclusive {
            true => self.end.as_ref() <= key,
            false => self.end.as_ref() < key,
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.smallest.as_ref() <= key && !self.ends_before(key)
    }

    /// Whether no key lies inside.
    pub fn is_empty(&self) -> bool {
        self.ends_before(&self.smallest)
    }

    /// Whether every key inside `self` lies below every key inside `next`.
    pub fn precedes(&self, next: &Bounds) -> bool {
        self.ends_before(&next.smallest)
    }

    /// The part inside the key range [start, end), or None when that is empty.
    pub fn clip(&self, start: &Bytes, end: &Bytes) -> Option<Bounds> {
        let smallest = self.smallest.clone().max(start.clone());
        let clipped = match self.ends_before(end) {
            true => Bounds { smallest, ..self.clone() },
            false => Bounds { smallest, end: end.clone(), end_exclusive: true },
        };
        (!clipped.is_empty()).then_some(clipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(smallest: &'static str, end: &'static str, end_exclusive: bool) -> Bounds {
        Bounds { smallest: smallest.into(), end: end.into(), end_exclusive }
    }

    #[test]
    fn an_exclusive_end_excludes_itself() {
        let open = b("b", "d", true);
        assert!(open.contains(b"b") && open.contains(b"c") && open.contains(b"czzz"));
        assert!(!open.contains(b"d") && !open.contains(b"a"));
        assert!(open.ends_before(b"d") && !open.ends_before(b"czzz"));
        let closed = b("b", "d", false);
        assert!(closed.contains(b"d") && !closed.contains(b"d\0"));
        assert!(!closed.ends_before(b"d") && closed.ends_before(b"d\0"));
    }

    #[test]
    fn adjacent_ranges_do_not_overlap_but_touching_keys_do() {
        assert!(b("a", "c", true).precedes(&b("c", "e", true)));
        assert!(!b("a", "c", false).precedes(&b("c", "e", true)));
        assert!(b("a", "b", false).precedes(&b("c", "e", true)));
    }

    #[test]
    fn clipping_keeps_the_narrower_end_and_drops_empty_results() {
        let whole = Bounds::inclusive("b".into(), "x".into());
        let (start, end) = (Bytes::from("c"), Bytes::from("f"));
        assert_eq!(whole.clip(&start, &end), Some(b("c", "f", true)));
        assert_eq!(whole.clip(&"a".into(), &"y".into()), Some(whole.clone()));
        assert_eq!(whole.clip(&"a".into(), &"x".into()), Some(b("b", "x", true)));
        assert_eq!(whole.clip(&"x".into(), &"y".into()), Some(b("x", "x", false)));
        assert_eq!(whole.clip(&"y".into(), &"z".into()), None);
        assert_eq!(whole.clip(&"a".into(), &"b".into()), None);
        assert_eq!(b("c", "f", true).clip(&"f".into(), &"g".into()), None);
        assert_eq!(b("c", "f", true).clip(&"a".into(), &"e".into()), Some(b("c", "e", true)));
    }
}
