//! Column families: the registry of names and ids a database holds, persisted in its manifest.
//! Every handle is checked against the database that made it, and a dropped family's handles are
//! refused for good.

use crate::lsm::batch::WriteBatch;
use crate::lsm::column_family::{ColumnFamily, id_for_name};
use crate::lsm::locks::Recover;
use crate::{Error, Result};

use super::DbInner;

impl DbInner {
    /// Creates a column family, or returns the existing one of that name.
    pub(crate) fn create_family(&self, name: &str) -> Result<ColumnFamily> {
        self.check_open()?;
        if let Some(cf) = self.family(name) {
            return Ok(cf);
        }
        let mut meta = self.meta.lock().recover();
        let cf = {
            let mut families = self.families.write().recover();
            if let Some(cf) = families.get(name) {
                return Ok(cf.clone());
            }
            let id = id_for_name(name, |id| families.values().any(|used| used.id == id));
            let cf = ColumnFamily::new(id, name, self.instance);
            families.insert(name.to_string(), cf.clone());
            cf
        };
        let version = self.current().version.clone();
        if let Err(e) = self.persist(&mut meta, &version) {
            self.families.write().recover().remove(name);
            return Err(e);
        }
        Ok(cf)
    }

    /// Drops a column family and all of its data (one range deletion; compaction reclaims space).
    /// Every handle of it is refused from now on, also once a family of the same name exists.
    pub(crate) fn drop_family(&self, cf: &ColumnFamily) -> Result<()> {
        self.check_open()?;
        self.check_family(cf)?;
        if self.family(cf.name()).as_ref() != Some(cf) {
            return Err(Error::invalid(format!("no column family {:?}", cf.name())));
        }
        // Refused first, so that no write through a handle lands after the range deletion.
        cf.mark_dropped();
        let mut batch = WriteBatch::new();
        batch.delete_prefix(cf, &[]);
        self.apply(&batch, false)?;
        let mut meta = self.meta.lock().recover();
        self.families.write().recover().remove(cf.name());
        self.ttl.set(cf.id, None);
        let version = self.current().version.clone();
        self.persist(&mut meta, &version)
    }

    pub(crate) fn family(&self, name: &str) -> Option<ColumnFamily> {
        self.families.read().recover().get(name).cloned()
    }

    pub(crate) fn family_names(&self) -> Vec<String> {
        self.families.read().recover().keys().cloned().collect()
    }

    /// Column families by name, as the manifest stores them.
    pub(crate) fn column_families(&self) -> Vec<(String, u32)> {
        let families = self.families.read().recover();
        families.iter().map(|(name, cf)| (name.clone(), cf.id)).collect()
    }

    /// Fails unless `cf` is a live family of this database.
    pub(crate) fn check_family(&self, cf: &ColumnFamily) -> Result<()> {
        cf.check(self.instance)
    }
}
