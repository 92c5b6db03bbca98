//! The column families a batch may name, by the id Java got when it registered each state.
//! An id that was never registered is bad input (an error), never a guess.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::lsm::ColumnFamily;
use crate::lsm::locks::Recover;

#[derive(Debug, Default)]
pub struct FamilyRegistry {
    by_id: RwLock<HashMap<u32, ColumnFamily>>,
}

impl FamilyRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `cf` addressable in batches by `cf.id()`.
    pub fn register(&self, cf: ColumnFamily) -> u32 {
        let id = cf.id();
        self.by_id.write().recover().insert(id, cf);
        id
    }

    pub fn get(&self, id: u32) -> Option<ColumnFamily> {
        self.by_id.read().recover().get(&id).cloned()
    }
}
