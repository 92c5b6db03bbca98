package org.forstrs.flink.snapshot;

/**
 * One stored entry of a state as Flink's unified savepoint format holds it: the full key
 * (key-group prefix first) and the value bytes.
 */
public interface StateEntry {

    byte[] key();

    byte[] value();
}
