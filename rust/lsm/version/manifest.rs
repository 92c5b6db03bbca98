//! The manifest: a full snapshot of the database's durable state (files per level, range
//! tombstones, column families, counters), written as a new file `MANIFEST-<n>` on every change
//! with put-if-absent. The highest-numbered manifest is the database; there is no log to replay
//! and no rename, which object stores do not have atomically. Layout:
//! `magic u64 | format u32 | body | crc32c(body) u32`, integers little-endian.
//!
//! Format 3 added file ownership: a flags byte per file (bit 0: external, i.e. handed over to a
//! checkpoint or restored by reference, which the database must never delete; bit 1: a location
//! follows, the file's URI outside the database's directory) and, after the files, the released
//! files (see `ManifestData::released`). Format 2 manifests still open: their files read as owned.
//!
//! Format 4 added visible bounds with an exclusive end (bounds flag 2, see `version::Bounds`);
//! format 3 manifests read unchanged.
//!
//! Format 5 added, after the released files, the hand-over records (see
//! `ManifestData::hand_overs`); older manifests read with none.
//!
//! Format 6 added tombstone files (`lsm::tombstone_files`), listed among the files at level
//! `TOMBSTONE_LEVEL`; the manifest lists range tombstones itself only when no such file holds
//! them yet (read from an older manifest). Older manifests, whose tombstones are all inline, read
//! unchanged.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::lsm::column_family::ColumnFamilyId;
use crate::lsm::key::SeqNo;
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::sst::TableProperties;
use crate::lsm::tombstone_files::TOMBSTONE_LEVEL;
use crate::lsm::version::{Bounds, TableFile};
use crate::storage::{Storage, WriteMode};
use crate::{Error, Result};

const MAGIC: u64 = 0x464f_5253_544d_4e46; // "FORSTMNF"
const FORMAT_VERSION: u32 = 6;
/// The oldest format `decode` reads (without ownership: every file owned).
const OLDEST_FORMAT_VERSION: u32 = 2;
const FLAG_EXTERNAL: u8 = 1;
const FLAG_LOCATION: u8 = 2;
const NO_BOUNDS: u8 = 0;
const BOUNDS_INCLUSIVE: u8 = 1;
/// Format 4 on.
const BOUNDS_END_EXCLUSIVE: u8 = 2;
const PREFIX: &str = "MANIFEST-";

#[derive(Debug, Clone, PartialEq)]
pub struct FileRecord {
    pub level: u8,
    pub number: u64,
    pub path: String,
    pub size: u64,
    pub props: TableProperties,
    pub tombstones_applied_through: SeqNo,
    /// See `TableFile::bounds`.
    pub bounds: Option<Bounds>,
    /// Whether the database deletes the file once no version lists it. An external file (handed
    /// over to a checkpoint, or a checkpoint's file restored by reference) belongs to its
    /// checkpoints.
    pub owned: bool,
    /// The file's URI when it lives outside the database's directory (a checkpoint's file
    /// restored by reference); `path` is then only its name in this database.
    pub location: Option<String>,
}

impl FileRecord {
    /// What the database sees of the file (see `TableFile::bounds`): its bounds, or all of it.
    pub fn visible(&self) -> Bounds {
        self.bounds.clone().unwrap_or_else(|| {
            Bounds::inclusive(self.props.smallest_key.clone(), self.props.largest_key.clone())
        })
    }

    /// The record of a live file at `level`.
    pub fn of(level: usize, file: &TableFile) -> Self {
        FileRecord {
            level: level as u8,
            number: file.number,
            path: file.path.clone(),
            size: file.size,
            props: file.props().clone(),
            tombstones_applied_through: file.tombstones_applied_through,
            bounds: file.bounds.clone(),
            owned: file.is_owned(),
            location: file.location(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManifestData {
    /// Every sequence number in the files is <= this; a reopened database continues after it.
    pub last_seq: SeqNo,
    pub next_file_number: u64,
    pub column_families: Vec<(String, u32)>,
    /// The range tombstones the manifest lists itself: all of them up to format 5, since then
    /// only those no tombstone file holds yet (`Version::unfiled_tombstones`). Written as
    /// fragments; a manifest of an older release may list overlapping tombstones, which are
    /// fragmented when read.
    pub tombstones: Arc<FragmentedTombstones>,
    pub files: Vec<FileRecord>,
    /// Files in the database's directory that no version lists any more and that the database
    /// gave away (handed over to a checkpoint) before it dropped them: open must not collect them
    /// as orphans. Names leave the list once the file is gone (its new owner deleted it).
    pub released: Vec<String>,
    /// Per file handed over in place and not taken back (listed as external, or released): the
    /// first checkpoint that handed it over. A process that collects the directory of a database
    /// whose task manager died uses it to tell files of checkpoints that were aborted at the
    /// failover from files a retained checkpoint may reference (see `lsm::delete_database`).
    pub hand_overs: Vec<(String, u64)>,
}

pub fn manifest_path(number: u64) -> String {
    format!("{PREFIX}{number:012}")
}

/// The directory URL and the file name of a file URI (`FileRecord::location`).
pub fn split_location(uri: &str) -> Option<(&str, &str)> {
    uri.rsplit_once('/').filter(|(dir, name)| !dir.is_empty() && !name.is_empty())
}

/// Whether `path` (relative to a database's directory) is one of its manifests.
pub fn is_manifest(path: &str) -> bool {
    manifest_number(path).is_some()
}

fn manifest_number(path: &str) -> Option<u64> {
    path.strip_prefix(PREFIX)?.parse().ok()
}

/// Writes manifest `number`; fails if it exists (another writer got there first).
pub async fn write_manifest(storage: &dyn Storage, number: u64, data: &ManifestData) -> Result<()> {
    storage.put(&manifest_path(number), encode(data), WriteMode::CreateNew).await
}

/// The newest manifest and its number, or None for an empty directory.
pub async fn read_latest_manifest(storage: &dyn Storage) -> Result<Option<(u64, ManifestData)>> {
    let newest = storage
        .list("")
        .await?
        .iter()
        .filter(|f| !f.path.contains('/'))
        .filter_map(|f| manifest_number(&f.path))
        .max();
    let Some(number) = newest else {
        return Ok(None);
    };
    let path = manifest_path(number);
    let bytes = storage.read(&path).await?;
    Ok(Some((number, decode(&path, bytes)?)))
}

/// Deletes manifests older than `keep_from`.
pub async fn delete_manifests_before(storage: &dyn Storage, keep_from: u64) -> Result<()> {
    for file in storage.list("").await? {
        if manifest_number(&file.path).is_some_and(|n| n < keep_from) {
            storage.delete(&file.path).await?;
        }
    }
    Ok(())
}

pub fn encode(data: &ManifestData) -> Bytes {
    let mut body = BytesMut::new();
    body.put_u64_le(data.last_seq);
    body.put_u64_le(data.next_file_number);
    body.put_u32_le(data.column_families.len() as u32);
    for (name, id) in &data.column_families {
        put_bytes(&mut body, name.as_bytes());
        body.put_u32_le(*id);
    }
    body.put_u32_le(data.tombstones.len() as u32);
    for t in data.tombstones.iter() {
        put_bytes(&mut body, t.start);
        put_bytes(&mut body, t.end);
        body.put_u64_le(t.seq);
    }
    body.put_u32_le(data.files.len() as u32);
    for f in &data.files {
        body.put_u8(f.level);
        body.put_u64_le(f.number);
        put_bytes(&mut body, f.path.as_bytes());
        body.put_u64_le(f.size);
        put_bytes(&mut body, &f.props.smallest_key);
        put_bytes(&mut body, &f.props.largest_key);
        body.put_u64_le(f.props.min_seq);
        body.put_u64_le(f.props.max_seq);
        body.put_u64_le(f.props.entries);
        body.put_u64_le(f.props.size);
        body.put_u64_le(f.tombstones_applied_through);
        match &f.bounds {
            None => body.put_u8(NO_BOUNDS),
            Some(bounds) => {
                body.put_u8(match bounds.end_exclusive {
                    true => BOUNDS_END_EXCLUSIVE,
                    false => BOUNDS_INCLUSIVE,
                });
                put_bytes(&mut body, &bounds.smallest);
                put_bytes(&mut body, &bounds.end);
            }
        }
        let external = if f.owned { 0 } else { FLAG_EXTERNAL };
        match &f.location {
            None => body.put_u8(external),
            Some(location) => {
                body.put_u8(external | FLAG_LOCATION);
                put_bytes(&mut body, location.as_bytes());
            }
        }
    }
    body.put_u32_le(data.released.len() as u32);
    for name in &data.released {
        put_bytes(&mut body, name.as_bytes());
    }
    body.put_u32_le(data.hand_overs.len() as u32);
    for (name, checkpoint) in &data.hand_overs {
        put_bytes(&mut body, name.as_bytes());
        body.put_u64_le(*checkpoint);
    }
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.put_u64_le(MAGIC);
    out.put_u32_le(FORMAT_VERSION);
    out.put_slice(&body);
    out.put_u32_le(crc32c::crc32c(&body));
    out.freeze()
}

pub fn decode(path: &str, bytes: Bytes) -> Result<ManifestData> {
    let bad = |offset: usize, msg: &str| Error::corruption(path, offset as u64, msg);
    if bytes.len() < 16 {
        return Err(bad(0, "manifest too short"));
    }
    let mut header = &bytes[..12];
    if header.get_u64_le() != MAGIC {
        return Err(bad(0, "bad manifest magic"));
    }
    let version = header.get_u32_le();
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(bad(8, &format!("unsupported manifest format {version}")));
    }
    let body = &bytes[12..bytes.len() - 4];
    let stored_crc = (&bytes[bytes.len() - 4..]).get_u32_le();
    if crc32c::crc32c(body) != stored_crc {
        return Err(bad(bytes.len() - 4, "manifest checksum mismatch"));
    }
    let mut r = Reader { buf: body, path };
    let mut data =
        ManifestData { last_seq: r.u64()?, next_file_number: r.u64()?, ..Default::default() };
    for _ in 0..r.u32()? {
        let name = r.string()?;
        let id = r.u32()?;
        // No family gets the last id (`id_for_name`): every family's keys end before a successor.
        if id == ColumnFamilyId::MAX {
            return Err(bad(12, "column family id out of range"));
        }
        data.column_families.push((name, id));
    }
    let mut tombstones = Vec::new();
    for _ in 0..r.u32()? {
        let (start, end) = (r.bytes()?, r.bytes()?);
        let seq = r.u64()?;
        // Reads take `last_seq` as their snapshot: a newer tombstone or file is corruption.
        if seq > data.last_seq {
            return Err(bad(12, "range tombstone newer than the manifest's last sequence number"));
        }
        tombstones.push(RangeTombstone { start, end, seq });
    }
    data.tombstones = Arc::new(FragmentedTombstones::new(tombstones));
    for _ in 0..r.u32()? {
        let level = r.u8()?;
        if level == TOMBSTONE_LEVEL && version < 6 {
            return Err(bad(12, "tombstone file in a manifest older than format 6"));
        }
        let number = r.u64()?;
        let path = r.string()?;
        let size = r.u64()?;
        let props = TableProperties {
            smallest_key: r.bytes()?,
            largest_key: r.bytes()?,
            min_seq: r.u64()?,
            max_seq: r.u64()?,
            entries: r.u64()?,
            size: r.u64()?,
        };
        if props.max_seq > data.last_seq {
            return Err(bad(12, "file newer than the manifest's last sequence number"));
        }
        let tombstones_applied_through = r.u64()?;
        let bounds = match r.u8()? {
            NO_BOUNDS => None,
            BOUNDS_INCLUSIVE => Some(Bounds::inclusive(r.bytes()?, r.bytes()?)),
            BOUNDS_END_EXCLUSIVE if version >= 4 => {
                Some(Bounds { smallest: r.bytes()?, end: r.bytes()?, end_exclusive: true })
            }
            _ => return Err(bad(12, "bad bounds flag in manifest")),
        };
        let flags = if version == 2 { 0 } else { r.u8()? };
        if flags & !(FLAG_EXTERNAL | FLAG_LOCATION) != 0 {
            return Err(bad(12, "bad file flags in manifest"));
        }
        let location = match flags & FLAG_LOCATION {
            0 => None,
            _ => Some(r.string()?),
        };
        data.files.push(FileRecord {
            level,
            number,
            path,
            size,
            props,
            tombstones_applied_through,
            bounds,
            owned: flags & FLAG_EXTERNAL == 0,
            location,
        });
    }
    if version >= 3 {
        for _ in 0..r.u32()? {
            data.released.push(r.string()?);
        }
    }
    if version >= 5 {
        for _ in 0..r.u32()? {
            let name = r.string()?;
            data.hand_overs.push((name, r.u64()?));
        }
    }
    if !r.buf.is_empty() {
        return Err(bad(12, "trailing bytes in manifest body"));
    }
    Ok(data)
}

fn put_bytes(out: &mut BytesMut, bytes: &[u8]) {
    out.put_u32_le(bytes.len() as u32);
    out.put_slice(bytes);
}

/// Bounds-checked reads: a manifest that lies about lengths is corruption, never a panic.
struct Reader<'a> {
    buf: &'a [u8],
    path: &'a str,
}

impl Reader<'_> {
    fn need(&self, n: usize) -> Result<()> {
        if self.buf.len() < n {
            return Err(Error::corruption(self.path, 0, "manifest body truncated"));
        }
        Ok(())
    }

    fn u8(&mut self) -> Result<u8> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }

    fn u32(&mut self) -> Result<u32> {
        self.need(4)?;
        Ok(self.buf.get_u32_le())
    }

    fn u64(&mut self) -> Result<u64> {
        self.need(8)?;
        Ok(self.buf.get_u64_le())
    }

    fn bytes(&mut self) -> Result<Bytes> {
        let len = self.u32()? as usize;
        self.need(len)?;
        let out = Bytes::copy_from_slice(&self.buf[..len]);
        self.buf.advance(len);
        Ok(out)
    }

    fn string(&mut self) -> Result<String> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::corruption(self.path, 0, "manifest string is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, bounds: Bounds) -> FileRecord {
        FileRecord {
            level: 1,
            number,
            path: format!("{number:06}-ab.sst"),
            size: 1234,
            props: TableProperties {
                smallest_key: "k1".into(),
                largest_key: "k9".into(),
                min_seq: 1,
                max_seq: 40,
                entries: 10,
                size: 1234,
            },
            tombstones_applied_through: 9,
            bounds: Some(bounds),
            owned: false,
            location: Some(format!("file:///checkpoints/shared/{number}.sst")),
        }
    }

    fn sample() -> ManifestData {
        ManifestData {
            last_seq: 42,
            next_file_number: 7,
            column_families: vec![("default".into(), 0), ("counts".into(), 2)],
            tombstones: Arc::new(FragmentedTombstones::new([RangeTombstone {
                start: "a".into(),
                end: "b".into(),
                seq: 9,
            }])),
            files: vec![file(5, Bounds::inclusive("k2".into(), "k8".into())), {
                let clipped =
                    Bounds { smallest: "k2".into(), end: "k3".into(), end_exclusive: true };
                file(6, clipped)
            }],
            released: vec!["000003-ab.sst".into()],
            hand_overs: vec![("000003-ab.sst".into(), 4)],
        }
    }

    #[test]
    fn roundtrip() {
        let data = sample();
        assert_eq!(decode("m", encode(&data)).unwrap(), data);
    }

    /// Manifests (and checkpoints) written before tombstones were fragmented list them as
    /// written, overlapping; they read as fragments.
    #[test]
    fn overlapping_tombstones_of_older_manifests_read_as_fragments() {
        let mut body = BytesMut::new();
        body.put_u64_le(42); // last sequence number
        body.put_u64_le(7); // next file number
        body.put_u32_le(0); // column families
        body.put_u32_le(2);
        for (start, end, seq) in [("a", "m", 5u64), ("f", "z", 3)] {
            put_bytes(&mut body, start.as_bytes());
            put_bytes(&mut body, end.as_bytes());
            body.put_u64_le(seq);
        }
        body.put_u32_le(0); // files
        let mut bytes = BytesMut::new();
        bytes.put_u64_le(MAGIC);
        bytes.put_u32_le(2);
        bytes.put_slice(&body);
        bytes.put_u32_le(crc32c::crc32c(&body));
        let data = decode("m", bytes.freeze()).unwrap();
        let fragment = |start: &'static str, end: &'static str, seq| RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        };
        assert_eq!(data.tombstones.to_tombstones(), [fragment("a", "m", 5), fragment("m", "z", 3)]);
    }

    /// The body of an old-format manifest holding one file at level 1, up to its bounds flag.
    fn one_file_body_up_to_bounds() -> BytesMut {
        let mut body = BytesMut::new();
        body.put_u64_le(42); // last sequence number
        body.put_u64_le(7); // next file number
        body.put_u32_le(0); // column families
        body.put_u32_le(0); // tombstones
        body.put_u32_le(1); // files
        body.put_u8(1); // level
        body.put_u64_le(5);
        put_bytes(&mut body, b"000005-ab.sst");
        body.put_u64_le(1234);
        put_bytes(&mut body, b"k1");
        put_bytes(&mut body, b"k9");
        for value in [1u64, 40, 10, 1234, 9] {
            body.put_u64_le(value); // min seq, max seq, entries, size, tombstones applied
        }
        body
    }

    /// A manifest of format `version` around `body`.
    fn framed(version: u32, body: &[u8]) -> Bytes {
        let mut bytes = BytesMut::new();
        bytes.put_u64_le(MAGIC);
        bytes.put_u32_le(version);
        bytes.put_slice(body);
        bytes.put_u32_le(crc32c::crc32c(body));
        bytes.freeze()
    }

    /// A format 2 manifest (before ownership) opens, and every file in it is the database's own.
    #[test]
    fn format_2_manifests_read_with_every_file_owned() {
        let mut body = one_file_body_up_to_bounds();
        body.put_u8(0); // no bounds
        let data = decode("m", framed(2, &body)).unwrap();
        assert_eq!(data.files.len(), 1);
        assert!(data.files[0].owned);
        assert_eq!(data.files[0].path, "000005-ab.sst");
        assert!(data.released.is_empty());
    }

    /// A format 3 manifest (before exclusive ends) opens with its bounds inclusive, as written;
    /// an exclusive end, which format 3 did not have, is corruption there.
    #[test]
    fn format_3_manifests_read_with_inclusive_bounds_only() {
        let manifest = |bounds_flag: u8| {
            let mut body = one_file_body_up_to_bounds();
            body.put_u8(bounds_flag);
            put_bytes(&mut body, b"k2");
            put_bytes(&mut body, b"k8");
            body.put_u8(FLAG_EXTERNAL);
            body.put_u32_le(0); // released
            framed(3, &body)
        };
        let data = decode("m", manifest(BOUNDS_INCLUSIVE)).unwrap();
        assert_eq!(data.files[0].bounds, Some(Bounds::inclusive("k2".into(), "k8".into())));
        assert!(!data.files[0].owned);
        assert!(decode("m", manifest(BOUNDS_END_EXCLUSIVE)).is_err());
    }

    /// A tombstone file (format 6) reads back at its level; in an older manifest that level is
    /// corruption, as no older release wrote it.
    #[test]
    fn tombstone_files_read_from_format_6_only() {
        let mut data = sample();
        data.files[0].level = TOMBSTONE_LEVEL;
        assert_eq!(decode("m", encode(&data)).unwrap(), data);
        let manifest = |version: u32| {
            let mut body = one_file_body_up_to_bounds();
            body[28] = TOMBSTONE_LEVEL; // the file's level, after the counters and counts
            body.put_u8(NO_BOUNDS);
            body.put_u8(0); // flags
            body.put_u32_le(0); // released
            body.put_u32_le(0); // hand-overs
            framed(version, &body)
        };
        assert_eq!(decode("m", manifest(6)).unwrap().files[0].level, TOMBSTONE_LEVEL);
        assert!(decode("m", manifest(5)).is_err());
    }

    #[test]
    fn every_flipped_byte_and_truncation_is_detected() {
        let bytes = encode(&sample());
        for i in 0..bytes.len() {
            let mut bad = bytes.to_vec();
            bad[i] ^= 0x40;
            assert!(decode("m", bad.into()).is_err(), "flip at {i} not detected");
        }
        for len in 0..bytes.len() {
            assert!(decode("m", bytes.slice(..len)).is_err(), "truncation to {len} not detected");
        }
    }
}
