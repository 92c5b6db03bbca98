package org.forstrs.flink;

import org.apache.flink.types.Row;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Applies a changelog to a multiset of rows: +I and +U add a row, -U and -D remove one that
 * must be there. Or, for a changelog in upsert form ({@link #upsert}: +U without -U), +I and +U
 * replace the row of their key and -U and -D remove it. Plain Java, fed by {@link InJvmRowSink}
 * (parallelism 1).
 */
final class MaterializedTable implements Consumer<Row> {
    private final Map<List<Object>, Integer> rows = new HashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final int[] upsertKey;
    private final Map<List<Object>, List<Object>> rowsByKey = new HashMap<>();
    private long changes;

    MaterializedTable() {
        this(null);
    }

    private MaterializedTable(int[] upsertKey) {
        this.upsertKey = upsertKey;
    }

    /** A table whose rows are identified by the fields at {@code key}. */
    static MaterializedTable upsert(int... key) {
        return new MaterializedTable(key);
    }

    @Override
    public synchronized void accept(Row row) {
        changes++;
        List<Object> fields = new ArrayList<>(row.getArity());
        for (int f = 0; f < row.getArity(); f++) {
            fields.add(row.getField(f));
        }
        if (upsertKey != null) {
            upsert(row, fields);
            return;
        }
        switch (row.getKind()) {
            case INSERT:
            case UPDATE_AFTER:
                rows.merge(fields, 1, Integer::sum);
                break;
            default:
                Integer count = rows.get(fields);
                if (count == null) {
                    if (violations.size() < 10) {
                        violations.add(row.getKind().shortString() + " of absent " + fields);
                    }
                } else if (count == 1) {
                    rows.remove(fields);
                } else {
                    rows.put(fields, count - 1);
                }
        }
    }

    private void upsert(Row row, List<Object> fields) {
        List<Object> key = new ArrayList<>(upsertKey.length);
        for (int f : upsertKey) {
            key.add(fields.get(f));
        }
        switch (row.getKind()) {
            case INSERT, UPDATE_AFTER -> rowsByKey.put(key, fields);
            default -> {
                if (rowsByKey.remove(key) == null && violations.size() < 10) {
                    violations.add(row.getKind().shortString() + " of absent key " + key);
                }
            }
        }
    }

    synchronized Map<List<Object>, Integer> rows() {
        if (upsertKey != null) {
            Map<List<Object>, Integer> byRow = new HashMap<>();
            rowsByKey.values().forEach(fields -> byRow.merge(fields, 1, Integer::sum));
            return byRow;
        }
        return new HashMap<>(rows);
    }

    synchronized List<String> violations() {
        return new ArrayList<>(violations);
    }

    synchronized long changes() {
        return changes;
    }
}
