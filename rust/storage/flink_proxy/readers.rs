//! Open `FlinkFsReader`s by relative path, so a file's pooled input streams outlive one read.
//! Bounded; a path that is deleted, renamed or rewritten is forgotten, and a reader opened while
//! its path changed is used once but never cached (the generation check).
//!
//! A reader is closed (its streams released) when its last user lets go of it, so evicting one
//! never breaks a read still running on it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ::jni::objects::JObject;

use super::java::{self, JavaRef, VOID};

/// One Java `FlinkFsReader`; closed on drop (a JNI call: drop it on a blocking-pool thread).
pub(super) struct Reader {
    object: JavaRef,
    url: String,
}

impl Reader {
    pub fn new(object: JavaRef, url: String) -> Self {
        Reader { object, url }
    }

    pub fn as_obj(&self) -> &JObject<'static> {
        self.object.as_obj()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let object = self.object.as_obj();
        // SAFETY: reader_close is FlinkFsReader.close()V and `object` is a FlinkFsReader.
        let closed = java::call(&self.url, "close reader", |env, c| unsafe {
            env.call_method_unchecked(object, c.reader_close, VOID, &[]).map(|_| ())
        });
        if let Err(e) = closed {
            tracing::debug!("closing the reader of {}: {e}", self.url);
        }
    }
}

/// Files with cached readers. Each reader keeps at most a few open streams (more only while
/// reads of it run concurrently), so this bounds open streams well below descriptor limits.
const CAPACITY: usize = 256;

#[derive(Default)]
pub(super) struct Readers {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    readers: HashMap<String, Arc<Reader>>,
    generation: u64,
}

/// What `insert` pushed out; the caller closes it (a JNI call) outside the lock.
pub(super) type Evicted = Option<Arc<Reader>>;

impl Readers {
    /// The cached reader of `rel` and the generation to pass to `insert` if there is none.
    pub fn get(&self, rel: &str) -> (Option<Arc<Reader>>, u64) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.readers.get(rel).cloned(), state.generation)
    }

    /// Caches `reader` for `rel` unless the path changed since `generation` (then the reader
    /// is returned as evicted, to be closed after its one use) or another thread cached one first.
    pub fn insert(&self, rel: &str, reader: &Arc<Reader>, generation: u64) -> Evicted {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.generation != generation || state.readers.contains_key(rel) {
            return Some(reader.clone());
        }
        let mut evicted = None;
        if state.readers.len() >= CAPACITY {
            // Any victim will do: readers reopen on demand, and an LRU would write on every hit.
            if let Some(victim) = state.readers.keys().next().cloned() {
                evicted = state.readers.remove(&victim);
            }
        }
        state.readers.insert(rel.to_string(), reader.clone());
        evicted
    }

    /// Forgets the reader of a path whose file was deleted or replaced; returns it for closing.
    pub fn invalidate(&self, rel: &str) -> Evicted {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
        state.readers.remove(rel)
    }

    /// Forgets every reader; returns them for closing.
    pub fn drain(&self) -> Vec<Arc<Reader>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
        state.readers.drain().map(|(_, r)| r).collect()
    }
}
