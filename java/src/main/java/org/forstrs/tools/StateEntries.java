package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

/**
 * Reads one state of one operator decoded ({@link EntryDecoder}), database by database in
 * subtask order and in key order within each, optionally only one key's entries or those whose
 * key text starts with a prefix, and optionally from a {@link Cursor} on: {@code dump} reads all
 * of them, the web monitor a page at a time.
 */
final class StateEntries {

    /** A decoded entry, with where it lies: the database's position and the raw key. */
    record Found(int database, int subtask, byte[] rawKey, EntryDecoder.Entry entry) {
        /** The cursor that continues after this entry. */
        Cursor cursor() {
            return new Cursor(database, rawKey);
        }
    }

    /** Continues a read after the raw key {@code rawKey} of the database at {@code database}. */
    record Cursor(int database, byte[] rawKey) {

        /** {@code <database>:<hex of the raw key>}. */
        String text() {
            return database + ":" + HexFormat.of().formatHex(rawKey);
        }

        /** A cursor's text read back; IllegalArgumentException if it is not one. */
        static Cursor parse(String text) {
            int colon = text.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("not a cursor: " + text);
            }
            int database = Integer.parseInt(text.substring(0, colon));
            if (database < 0) {
                throw new IllegalArgumentException("not a cursor: " + text);
            }
            return new Cursor(database, HexFormat.of().parseHex(text.substring(colon + 1)));
        }
    }

    /** Takes each entry; false stops the read. */
    interface Visitor {
        boolean accept(Found found);
    }

    private StateEntries() {}

    /**
     * Visits the entries of {@code state} of {@code operator} that match {@code key} (the key's
     * text equals it) and {@code keyPrefix} (the key's text starts with it), after {@code after};
     * null filters match everything. Returns false if no database the read reaches has the state.
     * With {@code damage}, a database that cannot be read to the end (a damaged or missing file)
     * is reported to it, with the subtask's index, after the entries read before, and the next
     * database is read; without, such a database fails the whole read.
     */
    static boolean read(
            CheckpointContents contents,
            CheckpointContents.Operator operator,
            String state,
            @Nullable String key,
            @Nullable String keyPrefix,
            @Nullable Cursor after,
            Visitor visitor,
            @Nullable BiConsumer<Integer, Exception> damage)
            throws Exception {
        boolean found = false;
        for (int database = 0; database < operator.subtasks().size(); database++) {
            CheckpointContents.Subtask subtask = operator.subtasks().get(database);
            if (after != null && database < after.database()) {
                continue; // read on an earlier page
            }
            try {
                Boolean done = readDatabase(
                        contents, operator, subtask, database, state, key, keyPrefix, after,
                        visitor);
                if (done == null) {
                    continue;
                }
                found = true;
                if (done) {
                    return true;
                }
            } catch (UndecodedMeta e) {
                throw e;
            } catch (Exception e) { // native errors arrive unchecked too
                if (damage == null) {
                    throw e;
                }
                found = true;
                damage.accept(subtask.index(), e);
            }
        }
        return found;
    }

    /** A database's meta info needs classes this JVM lacks: no database of it decodes. */
    private static final class UndecodedMeta extends IOException {
        private static final long serialVersionUID = 1L;

        UndecodedMeta(String message) {
            super(message);
        }
    }

    /**
     * Visits one database's entries; null if it has no such state or none in range, true if the
     * visitor wanted no more, false if it was read to its end.
     */
    @Nullable
    private static Boolean readDatabase(
            CheckpointContents contents,
            CheckpointContents.Operator operator,
            CheckpointContents.Subtask subtask,
            int database,
            String state,
            @Nullable String key,
            @Nullable String keyPrefix,
            @Nullable Cursor after,
            Visitor visitor)
            throws Exception {
        try (SubtaskReader reader = contents.open(operator, subtask)) {
            if (reader.metaProblem() != null) {
                throw new UndecodedMeta(
                        String.format(
                                "the state meta info of operator %s subtask %d does not"
                                        + " decode here: %s (add the job's jar:"
                                        + " --classpath <jar>)",
                                operator.label(), subtask.index(), reader.metaProblem()));
            }
            if (!has(reader, state)) {
                return null;
            }
            StateMetaInfoSnapshot snapshot = reader.states().get(state);
            TypeSerializer<?> keySerializer = Inspect.keySerializer(reader);
            EntryDecoder decoder =
                    new EntryDecoder(
                            StateDescription.of(snapshot),
                            keySerializer,
                            reader.keyGroupPrefixBytes());
            KeyPrefix.Range range =
                    key == null
                            ? null
                            : KeyPrefix.of(
                                    key,
                                    keySerializer,
                                    operator.state().getMaxParallelism(),
                                    reader.keyGroupPrefixBytes());
            if (range != null
                    && !subtask.handle().getKeyGroupRange().contains(range.keyGroup())) {
                return false;
            }
            byte[] from = range == null ? null : range.from();
            byte[] to = range == null ? null : range.to();
            if (after != null && database == after.database()) {
                byte[] next = Arrays.copyOf(after.rawKey(), after.rawKey().length + 1);
                from = from == null || Arrays.compareUnsigned(next, from) > 0 ? next : from;
                if (to != null && Arrays.compareUnsigned(from, to) >= 0) {
                    return false;
                }
            }
            try (Stream<byte[][]> scan = reader.scan(state, from, to)) {
                Iterator<byte[][]> entries = scan.iterator();
                while (entries.hasNext()) {
                    byte[][] raw = entries.next();
                    EntryDecoder.Entry entry = decoder.decode(raw[0], raw[1]);
                    if ((key != null && !entry.keyText().equals(key))
                            || (keyPrefix != null
                                    && !entry.keyText().startsWith(keyPrefix))) {
                        continue;
                    }
                    if (!visitor.accept(
                            new Found(database, subtask.index(), raw[0], entry))) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static boolean has(SubtaskReader reader, String state) {
        return reader.states().get(state) != null && reader.families().contains(state);
    }
}
