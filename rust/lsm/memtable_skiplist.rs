//! The memtable's ordered map: an insert-only skiplist whose nodes live in an arena of large
//! chunks, written by one writer at a time (a mutex) and read by any number of readers without
//! locks.
//!
//! Why ours and not a general concurrent map: a node here holds its key and value inline after a
//! 24-byte header and its links (1.33 on average), about 46 bytes per entry beyond key and value
//! with padding, where a crossbeam-skiplist node with `Bytes` handles took about 160. Memtables
//! of the same memory then hold several times the entries, so flushes write fewer, larger files.
//! Nothing is ever removed, so readers need no epochs or reference counts, and the whole list is
//! freed as a few chunks when its last owner (a memtable, an iterator) drops it.
//!
//! Order: user key ascending, then trailer (`seq << 8 | kind`) descending, newest version first.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cmp::Ordering as Order;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Enough for 4^12 (16M) entries at the expected heights; a memtable holds far fewer.
const MAX_HEIGHT: usize = 12;
const ALIGN: usize = 8;
/// Chunks grow from small (a tiny memtable holds little) to this, so that a large memtable holds
/// at most this much unused.
const FIRST_CHUNK: usize = 1 << 10;
const MAX_CHUNK: usize = 256 << 10;

/// A node's header; `height` links (`AtomicPtr<Node>`), the key and the value follow it in the
/// arena.
#[repr(C)]
struct Node {
    trailer: u64,
    key_len: u32,
    value_len: u32,
    height: u32,
}

const HEADER: usize = size_of::<Node>();
const LINK: usize = size_of::<AtomicPtr<Node>>();

// Accessors of a node by raw pointer: the links and bytes lie past `size_of::<Node>()`, so they
// are reached from the arena pointer's provenance, never through a `&Node`.
//
// SAFETY (all four): `node` points at a node `SkipList::insert` initialised (or the head), in an
// arena that outlives `'a`. A reader reaches a node only through an Acquire load of a link the
// writer stored with Release after writing the node, so its header and bytes are visible; they
// never change afterwards, and the links are atomics.
unsafe fn link<'a>(node: *const Node, level: usize) -> &'a AtomicPtr<Node> {
    unsafe { &*node.cast::<u8>().add(HEADER + level * LINK).cast::<AtomicPtr<Node>>() }
}

unsafe fn key<'a>(node: *const Node) -> &'a [u8] {
    unsafe {
        let height = (*node).height as usize;
        let start = node.cast::<u8>().add(HEADER + height * LINK);
        std::slice::from_raw_parts(start, (*node).key_len as usize)
    }
}

unsafe fn value<'a>(node: *const Node) -> &'a [u8] {
    unsafe {
        let n = &*node;
        let start = node.cast::<u8>().add(HEADER + n.height as usize * LINK + n.key_len as usize);
        std::slice::from_raw_parts(start, n.value_len as usize)
    }
}

/// Where `node` sorts against the target (`key`, `trailer`).
unsafe fn compare(node: *const Node, target_key: &[u8], target_trailer: u64) -> Order {
    // SAFETY: as the accessors'.
    unsafe { key(node).cmp(target_key).then_with(|| target_trailer.cmp(&(*node).trailer)) }
}

/// Bump allocation in chunks that are freed only with the arena.
struct Arena {
    chunks: Vec<(NonNull<u8>, Layout)>,
    next: *mut u8,
    left: usize,
    next_chunk: usize,
    chunk_bytes: usize,
}

// SAFETY: the arena owns its chunks alone; nothing in it is tied to the thread that made it. The
// list shares it between threads soundly because only the writer (holding the list's mutex)
// allocates and writes in it; a published node is never written again except its links, which
// are atomics; and chunks are freed only when the list drops, when no reader can hold a reference
// into it (readers borrow the list or own an `Arc` of it).
unsafe impl Send for Arena {}

impl Arena {
    fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            next: ptr::null_mut(),
            left: 0,
            next_chunk: FIRST_CHUNK,
            chunk_bytes: 0,
        }
    }

    /// `size` bytes aligned to 8.
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let size = size.next_multiple_of(ALIGN);
        if size <= self.left {
            let at = self.next;
            // SAFETY: `size <= left`, so `at + size` stays within the current chunk.
            self.next = unsafe { at.add(size) };
            self.left -= size;
            return at;
        }
        // A node larger than half a chunk gets its own allocation: the chunk's rest stays usable.
        if size > self.next_chunk / 2 {
            return self.new_chunk(size);
        }
        let chunk = self.next_chunk;
        self.next_chunk = (chunk * 2).min(MAX_CHUNK);
        let at = self.new_chunk(chunk);
        // SAFETY: `size <= chunk / 2`, within the chunk just allocated.
        self.next = unsafe { at.add(size) };
        self.left = chunk - size;
        at
    }

    fn new_chunk(&mut self, size: usize) -> *mut u8 {
        let layout = Layout::from_size_align(size, ALIGN).expect("arena chunk layout");
        // SAFETY: `layout` has a non-zero size (every node has a header).
        let Some(chunk) = NonNull::new(unsafe { alloc(layout) }) else {
            handle_alloc_error(layout)
        };
        self.chunks.push((chunk, layout));
        self.chunk_bytes += size;
        chunk.as_ptr()
    }

    /// Heap held: the chunks and the vector listing them.
    fn held(&self) -> usize {
        self.chunk_bytes + self.chunks.capacity() * size_of::<(NonNull<u8>, Layout)>()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (chunk, layout) in self.chunks.drain(..) {
            // SAFETY: allocated by `new_chunk` with this layout, freed once.
            unsafe { dealloc(chunk.as_ptr(), layout) }
        }
    }
}

struct Writer {
    arena: Arena,
    /// xorshift state for node heights.
    rng: u64,
}

impl Writer {
    /// 1 + the number of times a 1-in-4 chance came up, as RocksDB's (1.33 links on average).
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if self.rng & 3 != 0 {
                break;
            }
            height += 1;
        }
        height
    }
}

/// The list's first node: `MAX_HEIGHT` links laid out as a node's, and no key. Outside the arena,
/// so that an empty memtable holds no chunk.
#[repr(C)]
struct Head {
    node: Node,
    links: [AtomicPtr<Node>; MAX_HEIGHT],
}

const _: () = assert!(std::mem::offset_of!(Head, links) == HEADER);

pub struct SkipList {
    head: Box<Head>,
    /// Levels in use; only the writer raises it. A reader that sees a stale value searches fewer
    /// levels (still correct); one that sees a new value finds the head's new links empty or set.
    height: AtomicUsize,
    writer: Mutex<Writer>,
    len: AtomicU64,
    allocated: AtomicU64,
}

impl Default for SkipList {
    fn default() -> Self {
        let head = Box::new(Head {
            node: Node { trailer: 0, key_len: 0, value_len: 0, height: MAX_HEIGHT as u32 },
            links: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        });
        SkipList {
            head,
            height: AtomicUsize::new(1),
            len: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            writer: Mutex::new(Writer { arena: Arena::new(), rng: 0x2545_f491_4f6c_dd1d }),
        }
    }
}

/// The uninitialised slot of a fresh node's link, for its first write.
///
/// SAFETY: `node` is arena memory of at least `HEADER + (level + 1) * LINK` bytes.
unsafe fn link_slot(node: *mut Node, level: usize) -> *mut AtomicPtr<Node> {
    unsafe { node.cast::<u8>().add(HEADER + level * LINK).cast() }
}

impl SkipList {
    fn head(&self) -> *const Node {
        (&raw const *self.head).cast()
    }

    /// Adds a version; `key` + `value` must fit in u32 lengths (the engine caps an entry at 1
    /// GiB). Versions are unique by (key, trailer): the sequence number is.
    pub fn insert(&self, key: &[u8], trailer: u64, value: &[u8]) {
        let key_len = u32::try_from(key.len()).expect("key under 4 GiB");
        let value_len = u32::try_from(value.len()).expect("value under 4 GiB");
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let height = writer.random_height();
        let top = self.height.load(Ordering::Relaxed);
        // The last node before the new one at each level (the head above `top`).
        let mut before = [self.head(); MAX_HEIGHT];
        self.search(key, trailer, &mut before);
        let size = HEADER + height * LINK + key.len() + value.len();
        let memory = writer.arena.alloc(size);
        let node = memory.cast::<Node>();
        // SAFETY: `node` is fresh arena memory of `size` bytes, aligned to 8, that no reader can
        // reach until the Release stores below publish it.
        unsafe {
            node.write(Node { trailer, key_len, value_len, height: height as u32 });
            for (level, &prev) in before.iter().enumerate().take(height) {
                let next = link(prev, level).load(Ordering::Relaxed);
                link_slot(node, level).write(AtomicPtr::new(next));
            }
            let bytes = memory.add(HEADER + height * LINK);
            ptr::copy_nonoverlapping(key.as_ptr(), bytes, key.len());
            ptr::copy_nonoverlapping(value.as_ptr(), bytes.add(key.len()), value.len());
        }
        if height > top {
            self.height.store(height, Ordering::Relaxed);
        }
        // Bottom level first: a reader that finds the node at any level finds it at level 0.
        for (level, &prev) in before.iter().enumerate().take(height) {
            // SAFETY: `prev` is a node of this list.
            unsafe { link(prev, level).store(node, Ordering::Release) };
        }
        self.len.fetch_add(1, Ordering::Relaxed);
        self.allocated.store(writer.arena.held() as u64, Ordering::Relaxed);
    }

    /// Entries (versions) in the list.
    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        // SAFETY: the head is a node of this list.
        unsafe { link(self.head(), 0).load(Ordering::Acquire).is_null() }
    }

    /// Heap the list holds: its arena's chunks.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Descends to (`key`, `trailer`): fills `before` with the last node before it at each level
    /// in use, and returns the first node at or after it (null if none).
    fn search(
        &self,
        key: &[u8],
        trailer: u64,
        before: &mut [*const Node; MAX_HEIGHT],
    ) -> *const Node {
        let mut at = self.head();
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        loop {
            // SAFETY: `at` and its successors are nodes of this list.
            let next = unsafe { link(at, level).load(Ordering::Acquire) };
            // SAFETY: as above.
            if !next.is_null() && unsafe { compare(next, key, trailer) } == Order::Less {
                at = next;
                continue;
            }
            before[level] = at;
            if level == 0 {
                // The node just compared, not a second load of the link: a node the writer
                // linked after `at` meanwhile may sort before the target.
                return next;
            }
            level -= 1;
        }
    }

    /// The first node at or after (`key`, `trailer`), or null.
    fn seek_node(&self, key: &[u8], trailer: u64) -> *const Node {
        self.search(key, trailer, &mut [ptr::null(); MAX_HEIGHT])
    }

    /// Entries from (`key`, `trailer`) on, in order.
    pub fn range_from<'a>(&'a self, key: &[u8], trailer: u64) -> Entries<'a> {
        Entries { node: self.seek_node(key, trailer), list: PhantomData }
    }
}

/// One version in a list, borrowed from it.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    node: NonNull<Node>,
    list: PhantomData<&'a SkipList>,
}

impl<'a> Entry<'a> {
    pub fn key(&self) -> &'a [u8] {
        // SAFETY: `node` is a node of the list borrowed for 'a.
        unsafe { key(self.node.as_ptr()) }
    }

    pub fn trailer(&self) -> u64 {
        // SAFETY: as in `key`.
        unsafe { (*self.node.as_ptr()).trailer }
    }

    pub fn value(&self) -> &'a [u8] {
        // SAFETY: as in `key`.
        unsafe { value(self.node.as_ptr()) }
    }
}

pub struct Entries<'a> {
    node: *const Node,
    list: PhantomData<&'a SkipList>,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        let node = NonNull::new(self.node.cast_mut())?;
        // SAFETY: `node` is a node of the list borrowed for 'a.
        self.node = unsafe { link(node.as_ptr(), 0).load(Ordering::Acquire) };
        Some(Entry { node, list: PhantomData })
    }
}

/// A position in a list that owns a reference to it, for iterators that outlive any borrow.
/// Entries written after it are seen when it reaches them.
pub struct Cursor {
    list: Arc<SkipList>,
    node: *const Node,
}

// SAFETY: `node` points into the arena of `list`, which the cursor keeps alive; what it reads
// there is immutable or atomic (see `SkipList`).
unsafe impl Send for Cursor {}
// SAFETY: as for `Send`.
unsafe impl Sync for Cursor {}

impl Cursor {
    /// A cursor before the first entry (not valid until a seek).
    pub fn new(list: Arc<SkipList>) -> Self {
        Cursor { list, node: ptr::null() }
    }

    pub fn seek(&mut self, key: &[u8], trailer: u64) {
        self.node = self.list.seek_node(key, trailer);
    }

    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    pub fn entry(&self) -> Option<Entry<'_>> {
        NonNull::new(self.node.cast_mut()).map(|node| Entry { node, list: PhantomData })
    }

    pub fn next(&mut self) {
        if let Some(node) = NonNull::new(self.node.cast_mut()) {
            // SAFETY: `node` is a node of `self.list`.
            self.node = unsafe { link(node.as_ptr(), 0).load(Ordering::Acquire) };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::thread;

    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn collect(list: &SkipList) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
        list.range_from(&[], u64::MAX)
            .map(|e| (e.key().to_vec(), e.trailer(), e.value().to_vec()))
            .collect()
    }

    #[test]
    fn entries_come_out_in_key_order_newest_first_with_their_bytes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut expected = Vec::new();
        for i in 0..5000u32 {
            // Keys of 0 to 40 bytes, values up to 3 KiB (some larger than a first chunk's half).
            let key: Vec<u8> =
                (0..rng.random_range(0..40)).map(|_| rng.random_range(0..4)).collect();
            let value = vec![i as u8; rng.random_range(0..3000)];
            expected.push((key, u64::from(i) << 8 | 1, value));
        }
        let list = SkipList::default();
        let mut shuffled = expected.clone();
        shuffled.shuffle(&mut rng);
        for (key, trailer, value) in &shuffled {
            list.insert(key, *trailer, value);
        }
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        assert_eq!(collect(&list), expected);
        assert_eq!(list.len(), 5000);
        let bytes: usize = expected.iter().map(|(k, _, v)| k.len() + v.len()).sum();
        assert!(list.allocated_bytes() >= bytes as u64);

        // A seek lands on the first version at or after the target.
        let (key, trailer, _) = &expected[2500];
        let first = list.range_from(key, *trailer).next().unwrap();
        assert_eq!((first.key(), first.trailer()), (&key[..], *trailer));
        let newest_of_key = expected.iter().position(|e| &e.0 == key).unwrap();
        assert_eq!(
            list.range_from(key, u64::MAX).next().unwrap().trailer(),
            expected[newest_of_key].1
        );
    }

    /// A seek racing an insert right in front of its target must still land on the target (the
    /// new node sorts before it). Readers aim at the key after the one being written.
    #[test]
    fn seeks_racing_the_writer_land_on_their_key() {
        const N: u32 = 200_000;
        let list = Arc::new(SkipList::default());
        for k in (0..=2 * N).step_by(2) {
            list.insert(&k.to_be_bytes(), 1 << 8, &[]);
        }
        let written = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (list, written) = (list.clone(), written.clone());
                thread::spawn(move || {
                    loop {
                        let i = written.load(Ordering::Acquire) as u32;
                        if i == N {
                            break;
                        }
                        let target = (2 * i + 2).to_be_bytes();
                        let found = list.range_from(&target, u64::MAX).next().map(|e| e.key());
                        assert_eq!(found, Some(&target[..]), "seek next to the writer");
                    }
                })
            })
            .collect();
        for i in 0..N {
            list.insert(&(2 * i + 1).to_be_bytes(), 1 << 8, &[]);
            written.store(u64::from(i) + 1, Ordering::Release);
        }
        for reader in readers {
            reader.join().unwrap();
        }
    }

    #[test]
    fn readers_racing_the_writer_see_every_published_entry_in_order() {
        let list = Arc::new(SkipList::default());
        let published = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (list, published, done) = (list.clone(), published.clone(), done.clone());
                thread::spawn(move || {
                    let mut rounds = 0;
                    while !done.load(Ordering::Acquire) || rounds == 0 {
                        rounds += 1;
                        let at_least = published.load(Ordering::Acquire);
                        let mut cursor = Cursor::new(list.clone());
                        cursor.seek(&[], u64::MAX);
                        let (mut seen, mut last): (u64, Option<Vec<u8>>) = (0, None);
                        while let Some(entry) = cursor.entry() {
                            assert_eq!(entry.value(), entry.key(), "bytes intact");
                            if let Some(last) = &last {
                                assert!(last.as_slice() < entry.key(), "in order, no repeats");
                            }
                            last = Some(entry.key().to_vec());
                            seen += 1;
                            cursor.next();
                        }
                        assert!(seen >= at_least, "saw {seen} of {at_least} published");
                    }
                })
            })
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let mut keys: Vec<u32> = (0..20_000).collect();
        keys.shuffle(&mut rng);
        for (i, k) in keys.iter().enumerate() {
            let key = k.wrapping_mul(2_654_435_761).to_be_bytes();
            list.insert(&key, 1 << 8, &key);
            published.store(i as u64 + 1, Ordering::Release);
        }
        done.store(true, Ordering::Release);
        for reader in readers {
            reader.join().unwrap();
        }
    }
}
