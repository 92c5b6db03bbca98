package org.forstrs.flink.snapshot;

import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import java.util.Iterator;
import java.util.function.Supplier;

/**
 * One state of a canonical savepoint: its meta info and its entries in key order (so in
 * key-group order). A column family of the DB and a heap timer queue are both just this, so a
 * store-backed timer queue (a column family of timer keys with empty values) needs nothing else.
 */
public record CanonicalState(
        StateMetaInfoSnapshot metaInfo, Supplier<Iterator<? extends StateEntry>> entries) {}
