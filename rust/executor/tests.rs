use super::wire::{Op, RequestEncoder, Response, decode_responses};
use super::*;
use crate::lsm::DbOptions;
use crate::storage::{StorageOptions, open_storage};

fn open(name: &str) -> (Db, FamilyRegistry, u32, u32) {
    let storage =
        open_storage(&format!("memory://executor-{name}"), &StorageOptions::default()).unwrap();
    let db = Db::open_with_storage(storage, DbOptions::default()).unwrap();
    let families = FamilyRegistry::new();
    let values = families.register(db.create_cf("values").unwrap());
    let maps = families.register(db.create_cf("maps").unwrap());
    (db, families, values, maps)
}

fn run(db: &Db, families: &FamilyRegistry, enc: &RequestEncoder, ops: &[Op]) -> Vec<Response> {
    let mut response = vec![0u8; 1 << 20];
    let n = execute_batch(db, families, &enc.finish(), &mut response).unwrap();
    assert!(n > 0);
    decode_responses(&response[..n as usize], ops).unwrap()
}

#[test]
fn reads_see_the_state_before_the_batch_and_writes_land_together() {
    let (db, families, values, maps) = open("basic");
    let mut enc = RequestEncoder::new();
    let ops = [Op::Put, Op::Merge, Op::Merge, Op::Put, Op::Get];
    enc.push(ops[0], values, b"a", Some(b"1"))
        .push(ops[1], values, b"list", Some(b"x"))
        .push(ops[2], values, b"list", Some(b"y"))
        .push(ops[3], maps, b"m\x00k1", Some(b"v1"))
        .push(ops[4], values, b"a", None);
    let r = run(&db, &families, &enc, &ops);
    assert_eq!(r[4], Response::Value(None), "a read does not see writes of its own batch");

    let mut enc = RequestEncoder::new();
    let ops = [
        Op::Get,
        Op::Get,
        Op::Get,
        Op::PrefixExists,
        Op::PrefixExists,
        Op::Delete,
        Op::DeletePrefix,
    ];
    enc.push(ops[0], values, b"a", None)
        .push(ops[1], values, b"list", None)
        .push(ops[2], values, b"missing", None)
        .push(ops[3], maps, b"m\x00", None)
        .push(ops[4], maps, b"n\x00", None)
        .push(ops[5], values, b"a", None)
        .push(ops[6], maps, b"m\x00", None);
    let r = run(&db, &families, &enc, &ops);
    assert_eq!(r[0], Response::Value(Some(b"1".to_vec())));
    assert_eq!(r[1], Response::Value(Some(b"x,y".to_vec())));
    assert_eq!(r[2], Response::Value(None));
    assert_eq!(r[3], Response::Exists(true));
    assert_eq!(r[4], Response::Exists(false));
    let vals = db.cf("values").unwrap();
    assert_eq!(db.get(&vals, b"a").unwrap(), None);
    assert!(!db.iter_prefix(&db.cf("maps").unwrap(), b"m\x00").unwrap().valid());
}

#[test]
fn a_large_map_is_scanned_in_chunks_with_a_resume_key() {
    let (db, families, _, maps) = open("scan");
    let cf = families.get(maps).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..12_345u32 {
        batch.put(&cf, format!("user\x00{i:08}").as_bytes(), &i.to_le_bytes());
    }
    batch.put(&cf, b"other\x00x", b"not mine");
    db.write(&batch).unwrap();
    db.flush().unwrap();

    let mut seen = Vec::new();
    let mut resume: Option<Vec<u8>> = None;
    let mut calls = 0;
    loop {
        let op = Op::Scan { limit: 1000 };
        let mut enc = RequestEncoder::new();
        enc.push(op, maps, b"user\x00", resume.as_deref());
        let Response::Scan { entries, has_more } = run(&db, &families, &enc, &[op]).remove(0)
        else {
            panic!("not a scan response")
        };
        calls += 1;
        resume = entries.last().map(|(k, _)| k.clone());
        seen.extend(entries);
        if !has_more {
            break;
        }
    }
    assert_eq!(calls, 13);
    assert_eq!(seen.len(), 12_345);
    for (i, (k, v)) in seen.iter().enumerate() {
        assert_eq!(k, format!("user\x00{i:08}").as_bytes());
        assert_eq!(v, &(i as u32).to_le_bytes());
    }
}

#[test]
fn a_too_small_response_buffer_applies_nothing() {
    let (db, families, values, _) = open("small");
    db.put(&families.get(values).unwrap(), b"k", &[7u8; 100]).unwrap();
    let mut enc = RequestEncoder::new();
    enc.push(Op::Get, values, b"k", None).push(Op::Put, values, b"new", Some(b"v"));
    let mut tiny = vec![0u8; 16];
    let needed = execute_batch(&db, &families, &enc.finish(), &mut tiny).unwrap();
    assert!(needed < -100, "{needed}");
    assert_eq!(db.get(&families.get(values).unwrap(), b"new").unwrap(), None);
    let mut enough = vec![0u8; (-needed) as usize];
    assert_eq!(execute_batch(&db, &families, &enc.finish(), &mut enough).unwrap(), -needed);
    assert_eq!(db.get(&families.get(values).unwrap(), b"new").unwrap().unwrap(), "v");
}

#[test]
fn malformed_batches_are_refused_without_side_effects() {
    let (db, families, values, _) = open("malformed");
    let mut enc = RequestEncoder::new();
    enc.push(Op::Put, values, b"k", Some(b"v")).push(Op::Get, values, b"k", None);
    let good = enc.finish();
    let mut response = vec![0u8; 1024];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("bad magic", [&[0u8; 4][..], &good[4..]].concat()),
        ("truncated", good[..good.len() - 3].to_vec()),
        ("trailing", [&good[..], &[0u8]].concat()),
        ("huge count", [&good[..4], &u32::MAX.to_le_bytes()[..], &good[8..]].concat()),
        ("unknown cf", RequestEncoder::new().push(Op::Get, 999, b"k", None).finish()),
        ("put without value", RequestEncoder::new().push(Op::Put, values, b"k", None).finish()),
        ("unknown op", {
            let mut b = good.clone();
            b[8] = 42;
            b
        }),
    ];
    for (what, buf) in cases {
        let err = execute_batch(&db, &families, &buf, &mut response).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err}");
    }
    assert_eq!(db.get(&families.get(values).unwrap(), b"k").unwrap(), None, "nothing applied");
    assert!(execute_batch(&db, &families, &good, &mut response).unwrap() > 0);
}
