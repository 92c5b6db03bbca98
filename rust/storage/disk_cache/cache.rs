//! The index of one cache directory: which remote files it holds, how many bytes they take, and
//! which to evict (least recently used first) when a new one needs room.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use once_cell::sync::Lazy;

use super::entry::{self, ENTRY_SUFFIX, EntryMeta, EntryWriter, TEMP_PREFIX};
use super::space::available_bytes;
use super::{DiskCacheOptions, DiskCacheStats};
use crate::{Error, Result};

/// Misses on one file after which it is downloaded into the cache: a file read once (a
/// compaction input, a table opened for one lookup) is not worth a whole-file transfer, a file
/// read again and again is (Flink's ForSt also reloads only files accessed repeatedly).
pub(super) const FILL_AFTER_MISSES: u32 = 3;

/// Files whose misses are counted at once; the counts restart when it is exceeded.
const MISS_COUNTS: usize = 4096;

/// Entries whose file stays open between reads (a read then costs one `pread`, not an open and a
/// close); reads of the others open their file each time. Bounds the descriptors the cache holds.
const MAX_OPEN_FILES: usize = 1024;

#[derive(Debug)]
pub struct DiskCache {
    root: PathBuf,
    options: DiskCacheOptions,
    state: Mutex<State>,
    clock: AtomicU64,
    counters: Counters,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Slot>,
    /// Disk bytes of `entries` plus those promised to entries being published.
    used: u64,
    misses: HashMap<String, u32>,
    /// Keys being downloaded, so concurrent misses start one download.
    filling: HashSet<String>,
    /// Slots holding an open file.
    open_files: usize,
}

impl State {
    /// Removes the entry of `key` from the index (its file stays for the caller to delete).
    fn take(&mut self, key: &str) -> Option<Slot> {
        let slot = self.entries.remove(key)?;
        self.used = self.used.saturating_sub(slot.meta.disk_bytes());
        if slot.file.is_some() {
            self.open_files -= 1;
        }
        Some(slot)
    }
}

#[derive(Debug)]
struct Slot {
    meta: Arc<EntryMeta>,
    path: PathBuf,
    last_use: u64,
    /// The entry's file, open, once read (see [`MAX_OPEN_FILES`]). An open file outlives its
    /// name: reads through it stay right when the entry is removed meanwhile.
    file: Option<Arc<File>>,
}

#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    downloads: AtomicU64,
    evictions: AtomicU64,
    rejected: AtomicU64,
    corrupt: AtomicU64,
    lost: AtomicU64,
}

/// Caches by directory, so every database of the process sharing a directory shares one bound.
static CACHES: Lazy<Mutex<HashMap<PathBuf, Weak<DiskCache>>>> = Lazy::new(Default::default);

/// Room promised to one entry; given back unless the entry is published.
pub(super) struct Reservation<'a> {
    cache: &'a DiskCache,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.cache.lock();
        state.used = state.used.saturating_sub(self.bytes);
    }
}

impl DiskCache {
    /// The cache of `options.dir`, shared with every other open database using that directory;
    /// the first open rebuilds its index from the directory.
    pub fn open(options: &DiskCacheOptions) -> Result<Arc<DiskCache>> {
        let mut caches = CACHES.lock().unwrap_or_else(|e| e.into_inner());
        caches.retain(|_, cache| cache.strong_count() > 0);
        if let Some(cache) = caches.get(&options.dir).and_then(Weak::upgrade) {
            return Ok(cache);
        }
        let cache = Arc::new(Self::new(options.clone())?);
        caches.insert(options.dir.clone(), Arc::downgrade(&cache));
        Ok(cache)
    }

    /// A cache of its own on `options.dir` (tests; databases use [`DiskCache::open`]). Rebuilds
    /// the index from the entries found there: whole, consistent entries are kept (their data
    /// chunks are checked when read), anything else is deleted, and the least recently written
    /// go first if they exceed the bound.
    pub fn new(options: DiskCacheOptions) -> Result<DiskCache> {
        let root = options.dir.clone();
        let url = root.display().to_string();
        fs::create_dir_all(&root)
            .map_err(|e| Error::from_io(&url, "cannot create cache dir", e))?;
        let listing = fs::read_dir(&root).map_err(|e| Error::from_io(&url, "cannot list", e))?;
        let mut found = Vec::new();
        for item in listing.flatten() {
            let path = item.path();
            let name = item.file_name().to_string_lossy().into_owned();
            let modified = item.metadata().and_then(|m| m.modified()).ok();
            match entry::open(&path) {
                Ok(meta) if name.ends_with(ENTRY_SUFFIX) => found.push((modified, path, meta)),
                Ok(_) => {}
                Err(why) => {
                    if name.starts_with(TEMP_PREFIX) || name.ends_with(ENTRY_SUFFIX) {
                        tracing::info!("disk cache: dropping {}: {why}", path.display());
                        let _ = fs::remove_file(&path);
                    }
                }
            }
        }
        found.sort_by_key(|(modified, ..)| *modified);
        let cache = DiskCache {
            root,
            options,
            state: Mutex::default(),
            clock: AtomicU64::new(0),
            counters: Counters::default(),
        };
        {
            let mut state = cache.lock();
            for (_, path, meta) in found {
                state.used += meta.disk_bytes();
                let last_use = cache.tick();
                let key = meta.key.clone();
                state
                    .entries
                    .insert(key, Slot { meta: Arc::new(meta), path, last_use, file: None });
            }
            let capacity = cache.capacity(&state);
            cache.evict_to(&mut state, capacity);
        }
        Ok(cache)
    }

    pub fn stats(&self) -> DiskCacheStats {
        let c = &self.counters;
        let state = self.lock();
        DiskCacheStats {
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            inserts: c.inserts.load(Ordering::Relaxed),
            downloads: c.downloads.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            corrupt: c.corrupt.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            entries: state.entries.len() as u64,
            used_bytes: state.used,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// The entry of `key`, marked as just used, with its file if it is kept open; counts a hit or
    /// a miss.
    pub(super) fn lookup(&self, key: &str) -> Option<(PathBuf, Arc<EntryMeta>, Option<Arc<File>>)> {
        let tick = self.tick();
        let mut state = self.lock();
        match state.entries.get_mut(key) {
            Some(slot) => {
                slot.last_use = tick;
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                Some((slot.path.clone(), slot.meta.clone(), slot.file.clone()))
            }
            None => {
                self.counters.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Keeps `file`, just opened for the entry `meta` of `key`, open for later reads, if that
    /// entry is still the one of `key` and fewer than [`MAX_OPEN_FILES`] are kept.
    pub(super) fn keep_open(&self, key: &str, meta: &Arc<EntryMeta>, file: Arc<File>) {
        let mut state = self.lock();
        let room = state.open_files < MAX_OPEN_FILES;
        if let Some(slot) = state.entries.get_mut(key)
            && room
            && slot.file.is_none()
            && Arc::ptr_eq(&slot.meta, meta)
        {
            slot.file = Some(file);
            state.open_files += 1;
        }
    }

    /// The length of the cached file of `key`, without marking it used.
    pub(super) fn cached_len(&self, key: &str) -> Option<u64> {
        self.lock().entries.get(key).map(|slot| slot.meta.len)
    }

    /// Counts a miss of `key` that went to the remote file; true when the file should now be
    /// downloaded (it has missed often enough and no download of it runs).
    pub(super) fn note_miss(&self, key: &str) -> bool {
        let mut state = self.lock();
        if state.filling.contains(key) {
            return false;
        }
        if state.misses.len() >= MISS_COUNTS {
            state.misses.clear();
        }
        let count = state.misses.entry(key.to_string()).or_default();
        *count += 1;
        if *count < FILL_AFTER_MISSES {
            return false;
        }
        state.misses.remove(key);
        state.filling.insert(key.to_string());
        true
    }

    /// Ends the download of `key` started after [`DiskCache::note_miss`] or
    /// [`DiskCache::start_fill`]; `loaded`: it became an entry.
    pub(super) fn fill_done(&self, key: &str, loaded: bool) {
        self.lock().filling.remove(key);
        if loaded {
            self.counters.downloads.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Starts a download of `key` now, unless one runs (replacing a damaged entry).
    pub(super) fn start_fill(&self, key: &str) -> bool {
        self.lock().filling.insert(key.to_string())
    }

    /// Room for an entry of `bytes`, evicting the least recently used entries for it; `None`
    /// if it cannot fit even in an empty cache.
    pub(super) fn reserve(&self, bytes: u64) -> Option<Reservation<'_>> {
        let _ = fs::create_dir_all(&self.root);
        let mut state = self.lock();
        let capacity = self.capacity(&state);
        if bytes > capacity {
            self.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.evict_to(&mut state, capacity - bytes);
        if state.used + bytes > capacity {
            self.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        state.used += bytes;
        Some(Reservation { cache: self, bytes })
    }

    /// A writer for a new entry in the cache directory (recreated if it was deleted).
    pub(super) fn writer(&self) -> std::io::Result<EntryWriter> {
        EntryWriter::create(&self.root)
    }

    /// Publishes `writer` as the entry of `key` within `reservation`, replacing any entry of
    /// `key`. Failures only mean the file is not cached.
    /// Makes `writer` the entry of `key`; false if it could not be (then nothing changed).
    pub(super) fn publish(
        &self,
        key: &str,
        writer: EntryWriter,
        reservation: Reservation<'_>,
    ) -> bool {
        let path = self.root.join(format!("{:016x}{ENTRY_SUFFIX}", name_hash(key)));
        let meta = match writer.publish(key, &path) {
            Ok(meta) => meta,
            Err(e) => {
                tracing::debug!("disk cache: cannot publish {key}: {e}");
                return false;
            }
        };
        let tick = self.tick();
        let mut state = self.lock();
        // The reservation becomes the entry's bytes.
        state.used += meta.disk_bytes();
        state.take(key);
        let slot = Slot { meta: Arc::new(meta), path, last_use: tick, file: None };
        state.entries.insert(key.to_string(), slot);
        drop(state);
        self.counters.inserts.fetch_add(1, Ordering::Relaxed);
        drop(reservation);
        true
    }

    /// Forgets the entry of `key` and deletes its file (the remote file went or changed).
    pub(super) fn remove(&self, key: &str) {
        let slot = {
            let mut state = self.lock();
            state.misses.remove(key);
            state.take(key)
        };
        if let Some(slot) = slot {
            let _ = fs::remove_file(slot.path);
        }
    }

    /// Forgets every entry whose key starts with `prefix`.
    pub(super) fn remove_prefix(&self, prefix: &str) {
        let keys: Vec<String> =
            self.lock().entries.keys().filter(|k| k.starts_with(prefix)).cloned().collect();
        keys.iter().for_each(|key| self.remove(key));
    }

    /// An entry that failed its checksum: counted and removed.
    pub(super) fn corrupt(&self, key: &str) {
        self.counters.corrupt.fetch_add(1, Ordering::Relaxed);
        self.remove(key);
    }

    /// An entry whose file could not be read (deleted under us): counted and forgotten.
    pub(super) fn lost(&self, key: &str) {
        self.counters.lost.fetch_add(1, Ordering::Relaxed);
        self.remove(key);
    }

    /// The most bytes the cache may hold now: the size limit, and what leaves the reserve free.
    fn capacity(&self, state: &State) -> u64 {
        let mut capacity = match self.options.size_limit {
            0 => u64::MAX,
            limit => limit,
        };
        if self.options.reserve > 0
            && let Some(free) = available_bytes(&self.root)
        {
            capacity = capacity.min((state.used + free).saturating_sub(self.options.reserve));
        }
        capacity
    }

    /// Evicts least recently used entries until at most `target` bytes are used.
    fn evict_to(&self, state: &mut State, target: u64) {
        while state.used > target {
            let Some(victim) =
                state.entries.iter().min_by_key(|(_, slot)| slot.last_use).map(|(k, _)| k.clone())
            else {
                return;
            };
            let slot = state.take(&victim).expect("victim is an entry");
            // Reads that already found this entry keep reading it (an open file outlives its
            // name) or fall back to the remote file.
            let _ = fs::remove_file(&slot.path);
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The entry file name of a key. Collisions are harmless: the newer entry replaces the file, and
/// the older key's checksums then fail and it falls back to the remote file.
fn name_hash(key: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}
