//! Where a key's files sit in a version, for point reads. A read checks a level-0 file's bounds
//! one by one and binary-searches each sorted level; through the files every comparison follows
//! a pointer to a key elsewhere in memory (a cache miss per step at scale). Here the bounds'
//! 16-byte heads sit side by side, and only a key whose head ties a bound's compares whole keys.
//! Files are also numbered (`ordinal`), so that a read can keep per-file state in an array.

use std::sync::Arc;

use super::{TableFile, Version};
use crate::lsm::key::head_of;
use crate::lsm::options::NUM_LEVELS;

pub(crate) struct FileMap {
    /// Per level, per file: the heads of its smallest and of its largest (or end) key.
    heads: [Vec<(u128, u128)>; NUM_LEVELS],
    /// Ordinal of each level's first file: files are numbered level by level, in order.
    first: [usize; NUM_LEVELS],
}

impl FileMap {
    pub fn new(version: &Version) -> FileMap {
        let heads = version.levels.each_ref().map(|files| {
            files.iter().map(|f| (head_of(f.smallest()), head_of(f.largest()))).collect()
        });
        let mut first = [0; NUM_LEVELS];
        for level in 1..NUM_LEVELS {
            first[level] = first[level - 1] + version.levels[level - 1].len();
        }
        FileMap { heads, first }
    }

    /// The files of `version` (the one this map was made of) that may hold `key`, newest first,
    /// each with its ordinal: the level-0 files whose bounds hold it, then at most one file per
    /// deeper level.
    pub fn files_for_key<'a>(
        &'a self,
        version: &'a Version,
        key: &'a [u8],
    ) -> impl Iterator<Item = (usize, &'a Arc<TableFile>)> + 'a {
        debug_assert!(version.levels.iter().zip(&self.heads).all(|(f, h)| f.len() == h.len()));
        let head = head_of(key);
        let level0 = version.levels[0].iter().zip(&self.heads[0]).enumerate();
        let level0 = level0.filter(move |&(_, (f, &bounds))| holds(bounds, head, f, key));
        let level0 = level0.map(|(i, (f, _))| (i, f));
        let deeper = (1..NUM_LEVELS).filter_map(move |level| {
            let (files, heads) = (&version.levels[level], &self.heads[level]);
            // Files whose largest head is below the key's end before it, those above do not:
            // only ties need whole keys.
            let below = heads.partition_point(|&(_, largest)| largest < head);
            let ties = heads[below..].partition_point(|&(_, largest)| largest == head);
            let i = below + files[below..below + ties].partition_point(|f| f.ends_before(key));
            let file = files.get(i)?;
            holds(heads[i], head, file, key).then_some((self.first[level] + i, file))
        });
        level0.chain(deeper)
    }
}

/// `file.contains(key)`, decided by the heads of its bounds unless `head`, the key's, ties one.
fn holds((smallest, largest): (u128, u128), head: u128, file: &TableFile, key: &[u8]) -> bool {
    if head < smallest || head > largest {
        false
    } else if head > smallest && head < largest {
        true
    } else {
        file.contains(key)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::lsm::version::Bounds;

    /// A file over [lo, hi], or over [lo, hi) when `exclusive` (a restore's clipped bounds).
    fn file(number: u64, lo: &str, hi: &str, exclusive: bool) -> Arc<TableFile> {
        let bounds = exclusive.then(|| Bounds {
            smallest: Bytes::copy_from_slice(lo.as_bytes()),
            end: Bytes::copy_from_slice(hi.as_bytes()),
            end_exclusive: true,
        });
        TableFile::without_table(number, lo, hi, 100, bounds)
    }

    /// What `files_for_key` must find: every level-0 file holding the key, then the one of each
    /// deeper level, by whole keys, with their positions in `version.files()`.
    fn naive(version: &Version, key: &[u8]) -> Vec<(usize, u64)> {
        let ordinals: Vec<_> = version.files().map(|f| f.number).collect();
        let ordinal = |f: &TableFile| ordinals.iter().position(|&n| n == f.number).unwrap();
        let level0 = version.levels[0].iter().filter(|f| f.contains(key));
        let deeper =
            version.levels[1..].iter().filter_map(|files| files.iter().find(|f| f.contains(key)));
        level0.chain(deeper).map(|f| (ordinal(f), f.number)).collect()
    }

    #[test]
    fn heads_find_the_files_whole_keys_find_also_where_keys_share_16_bytes() {
        // Keys that differ only past their 16th byte, so heads tie, next to short keys.
        let p = "user-00001234|map|";
        let k = |s: &str| format!("{p}{s}");
        let mut version = Version::default();
        version.levels[0] = vec![
            file(1, &k("b"), &k("d"), false),
            file(2, "a", &k("c"), true),
            file(3, &k("d"), "z", false),
        ];
        version.levels[1] = vec![
            file(4, "a", &k("b"), false),
            file(5, &k("b\0"), &k("c"), true),
            file(6, &k("c"), &k("e"), false),
            file(7, "user-00001235", "user-00001236", false),
        ];
        version.levels[3] = vec![file(8, "", p, true), file(9, p, "zz", false)];
        let map = FileMap::new(&version);
        let probes = ["", "a", "user-00001234", "user-00001235", "user-000012355", "zz", "zzz"];
        let suffixes = ["", "a", "b", "b\0", "b\0\0", "bb", "c", "cc", "d", "e", "e\0", "f"];
        let keys = probes.iter().map(|s| s.to_string()).chain(suffixes.iter().map(|s| k(s)));
        for key in keys {
            let found: Vec<_> =
                map.files_for_key(&version, key.as_bytes()).map(|(o, f)| (o, f.number)).collect();
            assert_eq!(found, naive(&version, key.as_bytes()), "key {key:?}");
        }
    }
}
