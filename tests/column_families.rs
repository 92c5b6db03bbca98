//! Column family handles are checked on every use: a handle of a dropped family stays refused
//! (also once a family of the same name exists again), and a handle of one database is refused
//! by another, even where both have a family of that name (same id, as ids derive from names).

mod support;

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::{Error, ErrorKind};

fn open(tag: &str) -> Db {
    Db::open_with_storage(support::fresh_memory(tag), DbOptions::default()).unwrap()
}

/// Every way of using `cf` with `db` fails with an error of `kind` naming the family.
fn assert_refused(db: &Db, cf: &ColumnFamily, kind: ErrorKind) {
    let mut batch = WriteBatch::new();
    batch.put(cf, b"k", b"batch");
    let errors: Vec<Error> = vec![
        db.put(cf, b"k", b"v").unwrap_err(),
        db.merge(cf, b"k", b"v").unwrap_err(),
        db.delete(cf, b"k").unwrap_err(),
        db.delete_range(cf, b"a", b"z").unwrap_err(),
        db.write(&batch).unwrap_err(),
        db.get(cf, b"k").unwrap_err(),
        db.multi_get(&[(cf, b"k".as_slice())]).unwrap_err(),
        db.iter(cf, None, None).err().expect("scan refused"),
        db.iter_prefix(cf, b"k").err().expect("prefix scan refused"),
        db.drop_cf(cf).unwrap_err(),
    ];
    for err in errors {
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.to_string().contains(cf.name()), "{err}");
    }
}

#[test]
fn a_dropped_family_stays_refused_after_its_name_is_reused() {
    let db = open("cf-drop");
    let old = db.create_cf("s").unwrap();
    db.put(&old, b"k", b"before").unwrap();
    let copy = db.cf("s").unwrap();
    assert_eq!(copy, old);
    db.drop_cf(&old).unwrap();
    assert_refused(&db, &old, ErrorKind::Closed);
    assert_refused(&db, &copy, ErrorKind::Closed);

    let new = db.create_cf("s").unwrap();
    assert_eq!(new.id(), old.id(), "ids derive from names");
    assert_ne!(new, old);
    assert_refused(&db, &old, ErrorKind::Closed);
    assert_eq!(db.get(&new, b"k").unwrap(), None, "nothing of the old family is visible");
    db.put(&new, b"k", b"after").unwrap();
    assert_eq!(db.get(&new, b"k").unwrap().unwrap(), "after");
    // A batch with one refused handle applies nothing.
    let mut batch = WriteBatch::new();
    batch.put(&new, b"k2", b"v");
    batch.put(&old, b"k3", b"v");
    assert_eq!(db.write(&batch).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.get(&new, b"k2").unwrap(), None);
    assert_eq!(db.get(&new, b"k3").unwrap(), None);
}

#[test]
fn a_handle_of_another_database_is_refused() {
    let (first, second) = (open("cf-first"), open("cf-second"));
    let mine = first.create_cf("s").unwrap();
    let theirs = second.create_cf("s").unwrap();
    assert_eq!(mine.id(), theirs.id());
    assert_ne!(mine, theirs);
    first.put(&mine, b"k", b"first").unwrap();
    assert_refused(&second, &mine, ErrorKind::InvalidArgument);
    assert_eq!(second.get(&theirs, b"k").unwrap(), None, "nothing written into the other");
    assert_eq!(first.get(&mine, b"k").unwrap().unwrap(), "first");
}

#[test]
fn handles_do_not_survive_a_reopen() {
    let storage = support::fresh_memory("cf-reopen");
    let db = Db::open_with_storage(storage.clone(), DbOptions::default()).unwrap();
    let before = db.create_cf("s").unwrap();
    db.put(&before, b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open_with_storage(storage, DbOptions::default()).unwrap();
    assert_refused(&db, &before, ErrorKind::InvalidArgument);
    assert_eq!(db.get(&db.cf("s").unwrap(), b"k").unwrap().unwrap(), "v");
}
