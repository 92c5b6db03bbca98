//! The writes of one batch, indexed so that every read of the batch sees exactly the writes issued
//! before it, as if the requests ran one by one, while the writes themselves still reach the store
//! together, as one atomic write batch after all reads.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;

use crate::lsm::merge::merge_values;
use crate::{Error, Result};

use super::wire::{Op, Request};

#[derive(Debug, Clone, Copy)]
enum Effect<'a> {
    Put(&'a [u8]),
    Merge(&'a [u8]),
    /// A delete of the key itself or of a prefix covering it.
    Delete,
}

/// What the writes issued before a read make of one key.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Seen<'a> {
    /// A put or delete of the batch decided the value (merges after it are folded in).
    Decided(Option<Bytes>),
    /// The store's value, followed by these merge operands (none: the store's value as it is).
    OnStore(Vec<&'a [u8]>),
}

impl Seen<'_> {
    /// The value a read sees, given the store's value of the key.
    pub(super) fn over(self, store: Option<&[u8]>) -> Option<Bytes> {
        match self {
            Seen::Decided(value) => value,
            Seen::OnStore(operands) if operands.is_empty() => store.map(Bytes::copy_from_slice),
            Seen::OnStore(operands) => Some(merge_values(store, &operands)),
        }
    }
}

/// The writes of one key: position in the batch and effect, in issue order.
type KeyWrites<'a> = Vec<(usize, Effect<'a>)>;

/// A batch's writes by family and key.
#[derive(Debug, Default)]
pub(super) struct BatchWrites<'a> {
    by_key: BTreeMap<u32, BTreeMap<&'a [u8], KeyWrites<'a>>>,
    /// Prefix deletes in issue order: position, family id, prefix.
    prefix_deletes: Vec<(usize, u32, &'a [u8])>,
}

impl<'a> BatchWrites<'a> {
    /// Indexes the writes of `requests`; a write without a value is bad input. A batch without
    /// reads (writes behind, a lone write) has nothing to serve from the index: its writes are
    /// only checked.
    pub(super) fn new(requests: &[Request<'a>]) -> Result<Self> {
        let mut writes = BatchWrites::default();
        if !requests.iter().any(|r| r.op.reads()) {
            for request in requests.iter().filter(|r| matches!(r.op, Op::Put | Op::Merge)) {
                required_value(request)?;
            }
            return Ok(writes);
        }
        for (at, request) in requests.iter().enumerate() {
            let effect = match request.op {
                Op::Put => Effect::Put(required_value(request)?),
                Op::Merge => Effect::Merge(required_value(request)?),
                Op::Delete => Effect::Delete,
                Op::DeletePrefix => {
                    writes.prefix_deletes.push((at, request.cf.id(), request.key));
                    continue;
                }
                Op::Get | Op::Scan { .. } | Op::PrefixExists => continue,
            };
            let family = writes.by_key.entry(request.cf.id()).or_default();
            family.entry(request.key).or_default().push((at, effect));
        }
        Ok(writes)
    }

    /// What the writes before position `at` make of `key` in family `cf`.
    pub(super) fn seen(&self, cf: u32, key: &[u8], at: usize) -> Seen<'a> {
        let own = self.by_key.get(&cf).and_then(|family| family.get(key));
        let own = own.map_or(&[][..], |writes| {
            let before = writes.partition_point(|(position, _)| *position < at);
            &writes[..before]
        });
        // A prefix delete decides the value of every key it covers; only writes after it count.
        let cleared_at = self.covering_prefix_delete(cf, key, at).map(|(position, _)| position);
        let own = match cleared_at {
            Some(cleared) => &own[own.partition_point(|(position, _)| *position < cleared)..],
            None => own,
        };
        let last_reset = own.iter().rposition(|(_, e)| !matches!(e, Effect::Merge(_)));
        let (base, merges) = match last_reset {
            Some(i) => match own[i].1 {
                Effect::Put(value) => (Some(Some(value)), &own[i + 1..]),
                _ => (Some(None), &own[i + 1..]),
            },
            None if cleared_at.is_some() => (Some(None), own),
            None => (None, own),
        };
        let operands: Vec<&'a [u8]> = merges
            .iter()
            .map(|(_, effect)| match effect {
                Effect::Merge(operand) => *operand,
                _ => unreachable!("only merges follow the last reset"),
            })
            .collect();
        match base {
            None => Seen::OnStore(operands),
            Some(value) if operands.is_empty() => Seen::Decided(value.map(Bytes::copy_from_slice)),
            Some(value) => Seen::Decided(Some(merge_values(value, &operands))),
        }
    }

    /// The latest prefix delete of `cf` before position `at` that covers `key`: its position and
    /// prefix.
    pub(super) fn covering_prefix_delete(
        &self,
        cf: u32,
        key: &[u8],
        at: usize,
    ) -> Option<(usize, &'a [u8])> {
        self.prefix_deletes
            .iter()
            .rev()
            .filter(|(position, family, prefix)| {
                *position < at && *family == cf && key.starts_with(prefix)
            })
            .map(|(position, _, prefix)| (*position, *prefix))
            .next()
    }

    /// Keys of `cf` within the bounds that the batch wrote before position `at`, in key order.
    pub(super) fn keys_written(
        &self,
        cf: u32,
        from: Bound<&[u8]>,
        to: Bound<&[u8]>,
        at: usize,
    ) -> Vec<&'a [u8]> {
        let Some(family) = self.by_key.get(&cf) else { return Vec::new() };
        family
            .range::<[u8], _>((from, to))
            .filter(|(_, writes)| writes.first().is_some_and(|(position, _)| *position < at))
            .map(|(key, _)| *key)
            .collect()
    }
}

fn required_value<'a>(request: &Request<'a>) -> Result<&'a [u8]> {
    request.value.ok_or_else(|| Error::invalid(format!("{:?} request without a value", request.op)))
}
