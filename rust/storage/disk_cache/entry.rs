//! One cache entry on disk: a whole remote file, then its checksums and its key.
//!
//! `data | crc32c of each CHUNK_BYTES chunk (u32 LE) | key | footer`, footer (28 bytes, LE):
//! `data length u64 | chunk size u32 | key length u32 | crc32c of checksums+key+these three u32 |
//! magic u64`. The footer and key make an entry self-describing, so the index can be rebuilt from
//! the directory alone after a restart; the per-chunk checksums let a ranged read verify only the
//! chunks it touches. Entries are written to a temporary name and renamed into place, so a crash
//! leaves either a whole entry or a temporary file (deleted at the next open).

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

/// Checksum granularity: a block read (4-64 KiB) verifies one to a few chunks.
pub(super) const CHUNK_BYTES: u64 = 16 << 10;

const FOOTER_BYTES: u64 = 28;
const MAGIC: u64 = u64::from_le_bytes(*b"FRSCACHE");

/// Prefix of entries being written; never an entry name.
pub(super) const TEMP_PREFIX: &str = "tmp-";

/// Suffix of published entries.
pub(super) const ENTRY_SUFFIX: &str = ".entry";

/// What the index keeps of an entry: enough to verify any range of it.
#[derive(Debug)]
pub(super) struct EntryMeta {
    /// The cache key: storage url and path of the remote file.
    pub key: String,
    /// Length of the remote file.
    pub len: u64,
    pub crcs: Arc<[u32]>,
}

impl EntryMeta {
    /// Bytes the entry takes on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.len + 4 * self.crcs.len() as u64 + self.key.len() as u64 + FOOTER_BYTES
    }
}

/// Why an entry could not serve a read.
#[derive(Debug)]
pub(super) enum ReadFailure {
    /// The file is gone or unreadable (the cache directory may have been deleted).
    Io(io::Error),
    /// A chunk's bytes do not match its checksum.
    Corrupt { chunk: u64 },
}

/// Reads `range` (inside the data) of the entry in `file`, verifying every chunk it touches. The
/// chunks are read into a per-thread scratch buffer and only `range` is copied out: a block the
/// engine caches then holds its own bytes, not the whole chunks around it.
pub(super) fn read_range(
    file: &File,
    meta: &EntryMeta,
    range: Range<u64>,
) -> Result<Bytes, ReadFailure> {
    let first = range.start / CHUNK_BYTES;
    let last = range.end.div_ceil(CHUNK_BYTES).max(first + 1);
    let start = first * CHUNK_BYTES;
    let end = (last * CHUNK_BYTES).min(meta.len);
    let verify_and_copy = |buf: &mut Vec<u8>| {
        buf.resize((end - start) as usize, 0);
        file.read_exact_at(buf, start).map_err(ReadFailure::Io)?;
        for (i, chunk) in buf.chunks(CHUNK_BYTES as usize).enumerate() {
            let index = first + i as u64;
            if meta.crcs.get(index as usize) != Some(&crc32c::crc32c(chunk)) {
                return Err(ReadFailure::Corrupt { chunk: index });
            }
        }
        let from = (range.start - start) as usize;
        Ok(Bytes::copy_from_slice(&buf[from..from + (range.end - range.start) as usize]))
    };
    if end - start > SCRATCH_BYTES {
        return verify_and_copy(&mut Vec::new());
    }
    SCRATCH.with(|scratch| verify_and_copy(&mut scratch.borrow_mut()))
}

/// Largest read served from the per-thread scratch buffer (block reads); larger ones (whole
/// files, compaction readahead) allocate their own.
const SCRATCH_BYTES: u64 = 256 << 10;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads and checks the footer, checksums and key of the entry at `path`; the data chunks are
/// verified when read. `Err` names what is wrong.
pub(super) fn open(path: &Path) -> Result<EntryMeta, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    if file_len < FOOTER_BYTES {
        return Err("shorter than a footer".into());
    }
    let mut footer = [0u8; FOOTER_BYTES as usize];
    file.read_exact_at(&mut footer, file_len - FOOTER_BYTES).map_err(|e| e.to_string())?;
    let u32_at = |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap());
    let len = u64::from_le_bytes(footer[0..8].try_into().unwrap());
    let (chunk, key_len, meta_crc) = (u32_at(8), u32_at(12), u32_at(16));
    if u64::from_le_bytes(footer[20..28].try_into().unwrap()) != MAGIC {
        return Err("bad magic".into());
    }
    if u64::from(chunk) != CHUNK_BYTES {
        return Err(format!("chunk size {chunk}, expected {CHUNK_BYTES}"));
    }
    let chunks = len.div_ceil(CHUNK_BYTES);
    let meta_len = chunks
        .checked_mul(4)
        .and_then(|c| c.checked_add(u64::from(key_len)))
        .filter(|m| len.checked_add(*m).and_then(|t| t.checked_add(FOOTER_BYTES)) == Some(file_len))
        .ok_or_else(|| format!("length {file_len} does not match its footer"))?;
    let mut meta = vec![0u8; meta_len as usize];
    file.read_exact_at(&mut meta, len).map_err(|e| e.to_string())?;
    let crc = crc32c::crc32c_append(crc32c::crc32c(&meta), &footer[0..16]);
    if crc != meta_crc {
        return Err("metadata checksum mismatch".into());
    }
    let (crc_bytes, key) = meta.split_at(chunks as usize * 4);
    let crcs = crc_bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let key = String::from_utf8(key.to_vec()).map_err(|_| "key is not UTF-8".to_string())?;
    Ok(EntryMeta { key, len, crcs })
}

/// Writes an entry under a temporary name; [`EntryWriter::publish`] renames it into place.
/// Dropped unpublished, it deletes its temporary file.
pub(super) struct EntryWriter {
    out: BufWriter<File>,
    temp: Option<PathBuf>,
    len: u64,
    crcs: Vec<u32>,
    /// Checksum and length of the chunk being filled.
    crc: u32,
    fill: u64,
}

impl EntryWriter {
    pub fn create(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let temp = dir.join(format!("{TEMP_PREFIX}{:016x}", u64::from_le_bytes(random)));
        let file = File::options().write(true).create_new(true).open(&temp)?;
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, file),
            temp: Some(temp),
            len: 0,
            crcs: Vec::new(),
            crc: 0,
            fill: 0,
        })
    }

    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.out.write_all(data)?;
        self.len += data.len() as u64;
        while !data.is_empty() {
            let take = (CHUNK_BYTES - self.fill).min(data.len() as u64) as usize;
            self.crc = crc32c::crc32c_append(self.crc, &data[..take]);
            self.fill += take as u64;
            data = &data[take..];
            if self.fill == CHUNK_BYTES {
                self.crcs.push(self.crc);
                (self.crc, self.fill) = (0, 0);
            }
        }
        Ok(())
    }

    /// Bytes the entry will take on disk once published under `key`.
    /// Memory of its write buffer.
    pub fn buffer_bytes(&self) -> u64 {
        self.out.capacity() as u64
    }

    pub fn disk_bytes(&self, key: &str) -> u64 {
        let chunks = self.len.div_ceil(CHUNK_BYTES);
        self.len + 4 * chunks + key.len() as u64 + FOOTER_BYTES
    }

    /// Appends checksums, key and footer (no fsync: a torn entry fails its checks and goes) and
    /// renames the entry to `dest`.
    pub fn publish(mut self, key: &str, dest: &Path) -> io::Result<EntryMeta> {
        if self.fill > 0 {
            self.crcs.push(self.crc);
        }
        let key_len = u32::try_from(key.len()).map_err(io::Error::other)?;
        let mut meta: Vec<u8> = self.crcs.iter().flat_map(|c| c.to_le_bytes()).collect();
        meta.extend_from_slice(key.as_bytes());
        let mut footer = Vec::with_capacity(FOOTER_BYTES as usize);
        footer.extend_from_slice(&self.len.to_le_bytes());
        footer.extend_from_slice(&(CHUNK_BYTES as u32).to_le_bytes());
        footer.extend_from_slice(&key_len.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&meta), &footer);
        footer.extend_from_slice(&crc.to_le_bytes());
        footer.extend_from_slice(&MAGIC.to_le_bytes());
        self.out.write_all(&meta)?;
        self.out.write_all(&footer)?;
        self.out.flush()?;
        let temp = self.temp.take().expect("an entry is published once");
        if let Err(e) = fs::rename(&temp, dest) {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        Ok(EntryMeta {
            key: key.to_string(),
            len: self.len,
            crcs: std::mem::take(&mut self.crcs).into(),
        })
    }
}

impl Drop for EntryWriter {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn written_entries_reopen_and_serve_any_range() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 1, CHUNK_BYTES as usize, 3 * CHUNK_BYTES as usize + 17] {
            let bytes = data(len);
            let mut writer = EntryWriter::create(dir.path()).unwrap();
            for piece in bytes.chunks(5000) {
                writer.write(piece).unwrap();
            }
            let dest = dir.path().join(format!("{len}{ENTRY_SUFFIX}"));
            let expected_disk = writer.disk_bytes("file:///r/a.sst");
            let written = writer.publish("file:///r/a.sst", &dest).unwrap();
            assert_eq!(written.disk_bytes(), expected_disk);
            assert_eq!(fs::metadata(&dest).unwrap().len(), expected_disk);
            let meta = open(&dest).unwrap();
            assert_eq!((meta.key.as_str(), meta.len), ("file:///r/a.sst", len as u64));
            assert_eq!(meta.crcs, written.crcs);
            for range in [0..len as u64, len as u64 / 3..len as u64 / 2, len as u64..len as u64] {
                let got = read_range(&File::open(&dest).unwrap(), &meta, range.clone()).unwrap();
                assert_eq!(got, bytes[range.start as usize..range.end as usize]);
            }
        }
        // Nothing temporary is left behind.
        assert!(
            fs::read_dir(dir.path())
                .unwrap()
                .all(|e| { !e.unwrap().file_name().to_string_lossy().starts_with(TEMP_PREFIX) })
        );
    }

    #[test]
    fn damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = data(2 * CHUNK_BYTES as usize);
        let mut writer = EntryWriter::create(dir.path()).unwrap();
        writer.write(&bytes).unwrap();
        let dest = dir.path().join("e.entry");
        writer.publish("k", &dest).unwrap();
        let meta = open(&dest).unwrap();

        // A flipped data byte fails only the reads of its chunk.
        let file = File::options().read(true).write(true).open(&dest).unwrap();
        file.write_all_at(&[bytes[CHUNK_BYTES as usize + 5] ^ 1], CHUNK_BYTES + 5).unwrap();
        assert!(read_range(&file, &meta, 0..100).is_ok());
        assert!(matches!(
            read_range(&file, &meta, CHUNK_BYTES..CHUNK_BYTES + 10),
            Err(ReadFailure::Corrupt { chunk: 1 })
        ));

        // A flipped key byte or a truncation fails the metadata checks.
        let key_at = 2 * CHUNK_BYTES + 8;
        file.write_all_at(b"x", key_at).unwrap();
        assert!(open(&dest).unwrap_err().contains("checksum"));
        file.set_len(key_at).unwrap();
        assert!(open(&dest).is_err());
        // Reading past the end of a truncated entry is an I/O failure, not wrong data.
        file.set_len(CHUNK_BYTES).unwrap();
        assert!(matches!(
            read_range(&file, &meta, CHUNK_BYTES..CHUNK_BYTES + 10),
            Err(ReadFailure::Io(_))
        ));
    }

    #[test]
    fn unpublished_writers_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = EntryWriter::create(&dir.path().join("sub")).unwrap();
        writer.write(b"abc").unwrap();
        drop(writer);
        assert_eq!(fs::read_dir(dir.path().join("sub")).unwrap().count(), 0);
    }
}
