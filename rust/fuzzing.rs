//! Entry points of the fuzz targets (`fuzz/`, see docs/FUZZING.md), one per family of decoders
//! that read bytes from outside: the batch wire format from Java, SST blocks, meta blocks,
//! filters and whole files, and manifests from storage. The regression test
//! (`tests/fuzz_regressions.rs`) calls the same functions. Each returns whether its input
//! decoded; none may panic, hang or allocate far beyond its input. Not an API.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::executor::wire::{REQUEST_MAGIC, decode_requests};
use crate::executor::{FamilyRegistry, execute_batch};
use crate::lsm::tombstone_files::TOMBSTONE_LEVEL;
use crate::lsm::version::manifest;
use crate::lsm::{Db, DbOptions};
use crate::storage::{
    StorageOptions, StorageRef, WriteMode, block_on, drop_memory_store, open_storage,
};

pub use crate::lsm::sst::fuzzing::{
    filter, seal_table, sst_block, sst_meta, sst_table, table_seeds,
};

/// Largest response buffer a batch may ask for on its retry (Java grows its buffer the same way).
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Names the in-memory stores of the entries that open a database, one per call.
static NEXT_STORE: AtomicU64 = AtomicU64::new(0);

/// A database in a fresh in-memory store, forgotten (files and all) when dropped.
struct ScratchDb {
    db: Db,
    name: String,
}

impl ScratchDb {
    fn open(storage: StorageRef, name: String) -> crate::Result<ScratchDb> {
        let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
        // Files of a manifest that live elsewhere resolve to an empty store: a fuzzed location
        // must never reach a real file system.
        let elsewhere =
            |_: &str| open_storage("memory://forst-fuzz-elsewhere", &Default::default());
        match Db::open_resolving(storage, options, &elsewhere) {
            Ok(db) => Ok(ScratchDb { db, name }),
            Err(e) => {
                drop_memory_store(&name);
                Err(e)
            }
        }
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let _ = self.db.close();
        drop_memory_store(&self.name);
    }
}

fn scratch_store() -> (String, StorageRef) {
    let name = format!("forst-fuzz-{}", NEXT_STORE.fetch_add(1, Ordering::Relaxed));
    let storage = open_storage(&format!("memory://{name}"), &StorageOptions::default())
        .expect("a memory store opens");
    (name, storage)
}

/// A request buffer (docs/BATCH_WIRE_FORMAT.md) decoded, then executed against a database whose
/// families `fuzz-a` and `fuzz-b` (ids `id_for_name`) hold a few keys in SST and memtable, as the
/// JNI layer runs it: retried once with the response size asked for.
pub fn batch_wire(data: &[u8]) -> bool {
    // Cheap rejection first: most mutated inputs never reach a database.
    let families = FamilyRegistry::new();
    if data.len() < 8 || data[..4] != REQUEST_MAGIC.to_le_bytes() {
        return decode_requests(data, &families).is_ok();
    }
    let (name, storage) = scratch_store();
    let Ok(scratch) = ScratchDb::open(storage, name) else {
        return false;
    };
    let db = &scratch.db;
    let filled = (|| {
        for name in ["fuzz-a", "fuzz-b"] {
            let cf = db.create_cf(name)?;
            for i in 0..4u8 {
                db.put(&cf, &[b'k', i], &[b'v', i])?;
            }
            families.register(cf);
        }
        db.flush()?;
        let cf = db.cf("fuzz-a").expect("created above");
        db.put(&cf, b"k\x01", b"memtable")?;
        db.merge(&cf, b"k\x02", b"x")
    })();
    if filled.is_err() {
        return false;
    }
    let mut response = vec![0u8; 1024];
    let mut ran = execute_batch(db, &families, data, &mut response);
    if let Ok(needed) = ran
        && needed < 0
        && needed.unsigned_abs() as usize <= MAX_RESPONSE_BYTES
    {
        response.resize(needed.unsigned_abs() as usize, 0);
        ran = execute_batch(db, &families, data, &mut response);
    }
    ran.is_ok()
}

/// A manifest file decoded as found and sealed (its checksum recomputed, so mutations reach the
/// body's decoder), then a database opened on it: files per level, bounds, tombstones, families.
/// Each family is read once (the files it lists are absent: reads of them fail cleanly).
pub fn manifest(data: &[u8]) -> bool {
    let _ = manifest::decode("fuzz", Bytes::copy_from_slice(data));
    let mut sealed = data.to_vec();
    seal_manifest(&mut sealed);
    let sealed = Bytes::from(sealed);
    let Ok(decoded) = manifest::decode("fuzz", sealed.clone()) else {
        return false;
    };
    // Opening reads the tombstone files a manifest lists, and they are absent here: such a
    // manifest decoded, though the database cannot open.
    let reads_files = decoded.files.iter().any(|f| f.level == TOMBSTONE_LEVEL);
    let (name, storage) = scratch_store();
    let path = manifest::manifest_path(1);
    if block_on(storage.put(&path, sealed, WriteMode::CreateNew)).is_err() {
        drop_memory_store(&name);
        return false;
    }
    let Ok(scratch) = ScratchDb::open(storage, name) else {
        return reads_files;
    };
    let db = &scratch.db;
    for family in db.cf_names() {
        let Some(cf) = db.cf(&family) else { continue };
        let _ = db.get(&cf, b"k1");
        let _ = db.multi_get(&[(&cf, b"k1"), (&cf, b"")]);
        if let Ok(mut it) = db.iter_prefix(&cf, b"k") {
            let _ = it.seek_to_first();
        }
    }
    true
}

/// Recomputes a manifest's checksum (crc32c of the body, its last four bytes).
pub fn seal_manifest(file: &mut [u8]) {
    if file.len() >= 16 {
        let crc_at = file.len() - 4;
        let crc = crc32c::crc32c(&file[12..crc_at]);
        file[crc_at..].copy_from_slice(&crc.to_le_bytes());
    }
}
