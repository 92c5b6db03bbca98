package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.StateFuture;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.state.StateFutureUtils;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record's State V2 requests issued one after the other WITHOUT chaining them (no thenCompose
 * between them) must take effect in the order they were issued, like a synchronous backend would
 * run them: a read sees every earlier write of the same record, the later of two writes wins, a
 * clear removes what was put before it and nothing put after it. Each record reports what its
 * reads returned; the ForSt-RS backend (default executor settings) must report exactly what
 * Flink's HashMap backend reports for the same input, and both what a plain Java model predicts.
 * Each record ends with writes issued when none of its requests is in flight, which ours lets
 * complete at once and go with the next batch (executor.write-behind), then a read of them.
 */
class UnchainedRequestsITCase {

    private static final int PARALLELISM = 2;
    private static final long RECORDS = 100_000;
    private static final int KEYS = 1_000;

    /** What each record reads, in the order of the slots of one observation line. */
    private static final String[] OBSERVED = {
        "value-before", // value() before this record's update: the previous record's value
        "value-after", // value() right after update(i)
        "latest", // value() of a state updated twice by the previous record
        "list", // get() after [clear()] add(i)
        "contains-put", // contains(i) right after put(i, 3i)
        "contains-removed", // contains(i - KEYS) right after remove(i - KEYS)
        "get-put", // get(i) after put(i, 3i)
        "empty", // isEmpty() after put(i) [and clear()], in rounds EMPTY_PUT and EMPTY_CLEAR
        "entries", // entries() after put(i), put(i + 1), clear(), put(i + 2), in round ENTRIES
        "behind-before", // value() of the state the previous record wrote after all its reads
        "behind-after" // value() after update(-i) then update(i) [clear() every third round]
    };

    /*
     * Rounds (mod 10) with a scan or a clear. Every map clear() adds a range tombstone that every
     * later iterator copies, so clears in every record made the job take minutes.
     */
    private static final long EMPTY_PUT = 4;
    private static final long EMPTY_CLEAR = 9;
    private static final long ENTRIES = 7;

    /** What a record that does not issue an observation's requests reports for it. */
    private static final String NOT_ISSUED = "-";

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    /** Record {@code i} belongs to key {@code i % KEYS}; its round is {@code i / KEYS}. */
    static int keyOf(long i) {
        return (int) (i % KEYS);
    }

    /** Issues all requests of a record up front and emits one line of what its reads returned. */
    static final class UnchainedRequests extends KeyedProcessFunction<Integer, Long, String> {
        private static final long serialVersionUID = 1L;

        private transient ValueState<Long> value;
        private transient ValueState<Long> latest;
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;
        private transient MapState<Long, Long> scratch;
        private transient ValueState<Long> behind;

        @Override
        public void open(OpenContext openContext) {
            value = getRuntimeContext().getState(new ValueStateDescriptor<>("value", Types.LONG));
            latest = getRuntimeContext().getState(new ValueStateDescriptor<>("latest", Types.LONG));
            list = getRuntimeContext().getListState(new ListStateDescriptor<>("list", Types.LONG));
            map =
                    getRuntimeContext()
                            .getMapState(new MapStateDescriptor<>("map", Types.LONG, Types.LONG));
            scratch =
                    getRuntimeContext()
                            .getMapState(
                                    new MapStateDescriptor<>("scratch", Types.LONG, Types.LONG));
            behind = getRuntimeContext().getState(new ValueStateDescriptor<>("behind", Types.LONG));
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<String> out) {
            long round = i / KEYS;
            String[] seen = new String[OBSERVED.length];
            List<StateFuture<Void>> reads = new ArrayList<>();
            // value: read, update, read again
            reads.add(value.asyncValue().thenAccept(v -> seen[0] = String.valueOf(v)));
            value.asyncUpdate(i);
            reads.add(value.asyncValue().thenAccept(v -> seen[1] = String.valueOf(v)));
            // two updates: the later one is what the next record of the key reads
            reads.add(latest.asyncValue().thenAccept(v -> seen[2] = String.valueOf(v)));
            latest.asyncUpdate(-i - 1);
            latest.asyncUpdate(i);
            // list: [clear] add then get
            if (round % 5 == 0) {
                list.asyncClear();
            }
            list.asyncAdd(i);
            StringJoiner elements = new StringJoiner(",", "[", "]");
            reads.add(
                    list.asyncGet()
                            .thenCompose(it -> it.onNext(x -> {
                                elements.add(String.valueOf(x));
                            }))
                            .thenAccept(v -> seen[3] = elements.toString()));
            // map: put then contains, remove then contains, put then get, [clear] then isEmpty
            map.asyncPut(i, 3 * i);
            reads.add(map.asyncContains(i).thenAccept(c -> seen[4] = String.valueOf(c)));
            map.asyncRemove(i - KEYS);
            reads.add(map.asyncContains(i - KEYS).thenAccept(c -> seen[5] = String.valueOf(c)));
            reads.add(map.asyncGet(i).thenAccept(v -> seen[6] = String.valueOf(v)));
            if (round % 10 == EMPTY_CLEAR) {
                map.asyncClear();
            }
            if (round % 10 == EMPTY_CLEAR || round % 10 == EMPTY_PUT) {
                reads.add(map.asyncIsEmpty().thenAccept(e -> seen[7] = String.valueOf(e)));
            } else {
                seen[7] = NOT_ISSUED;
            }
            if (round % 10 == ENTRIES) {
                // puts, clear, put, then iterate: exactly the entry put after the clear
                scratch.asyncPut(i, 1L);
                scratch.asyncPut(i + 1, 2L);
                scratch.asyncClear();
                scratch.asyncPut(i + 2, 3L);
                Map<Long, Long> entries = new TreeMap<>();
                reads.add(
                        scratch.asyncEntries()
                                .thenCompose(it -> it.onNext(e -> {
                                    entries.put(e.getKey(), e.getValue());
                                }))
                                .thenAccept(v -> seen[8] = entries.toString()));
            } else {
                seen[8] = NOT_ISSUED;
            }
            reads.add(behind.asyncValue().thenAccept(v -> seen[9] = String.valueOf(v)));
            // Once every read is answered nothing of the record is in flight: these writes
            // complete when issued (executor.write-behind), and the read after them must see them.
            StateFutureUtils.combineAll(reads)
                    .thenCompose(
                            all -> {
                                behind.asyncUpdate(-i);
                                if (round % 3 == 0) {
                                    behind.asyncClear();
                                } else {
                                    behind.asyncUpdate(i);
                                }
                                return behind.asyncValue();
                            })
                    .thenAccept(
                            v -> {
                                seen[10] = String.valueOf(v);
                                out.collect(line(i, seen));
                            });
        }
    }

    static String line(long i, String[] seen) {
        StringJoiner line = new StringJoiner(" ", i + " ", "");
        for (int s = 0; s < seen.length; s++) {
            line.add(OBSERVED[s] + "=" + seen[s]);
        }
        return line.toString();
    }

    /** The observations in program order, computed without Flink. */
    static Map<Long, String> model() {
        Map<Long, String> lines = new HashMap<>();
        Map<Integer, Long> value = new HashMap<>();
        Map<Integer, Long> latest = new HashMap<>();
        Map<Integer, List<Long>> list = new HashMap<>();
        Map<Integer, Map<Long, Long>> map = new HashMap<>();
        Map<Integer, Long> behind = new HashMap<>();
        for (long i = 0; i < RECORDS; i++) {
            int key = keyOf(i);
            long round = i / KEYS;
            String[] seen = new String[OBSERVED.length];
            seen[0] = String.valueOf(value.get(key));
            value.put(key, i);
            seen[1] = String.valueOf(value.get(key));
            seen[2] = String.valueOf(latest.get(key));
            latest.put(key, i);
            List<Long> elements = list.computeIfAbsent(key, k -> new ArrayList<>());
            if (round % 5 == 0) {
                elements.clear();
            }
            elements.add(i);
            StringJoiner shown = new StringJoiner(",", "[", "]");
            elements.forEach(x -> shown.add(String.valueOf(x)));
            seen[3] = shown.toString();
            Map<Long, Long> entries = map.computeIfAbsent(key, k -> new HashMap<>());
            entries.put(i, 3 * i);
            seen[4] = String.valueOf(entries.containsKey(i));
            entries.remove(i - KEYS);
            seen[5] = String.valueOf(entries.containsKey(i - KEYS));
            seen[6] = String.valueOf(entries.get(i));
            if (round % 10 == EMPTY_CLEAR) {
                entries.clear();
            }
            seen[7] =
                    round % 10 == EMPTY_CLEAR || round % 10 == EMPTY_PUT
                            ? String.valueOf(entries.isEmpty())
                            : NOT_ISSUED;
            seen[8] = round % 10 == ENTRIES ? new TreeMap<>(Map.of(i + 2, 3L)).toString() : NOT_ISSUED;
            seen[9] = String.valueOf(behind.get(key));
            if (round % 3 == 0) {
                behind.remove(key);
            } else {
                behind.put(key, i);
            }
            seen[10] = String.valueOf(behind.get(key));
            lines.put(i, line(i, seen));
        }
        return lines;
    }

    /** Runs the job on the backend {@code type} and returns each record's line by record id. */
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    private static Map<Long, String> observe(String type, Path primary) throws Exception {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, type);
        config.setString("state.backend.forst.primary-dir", primary.toUri().toString());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        Map<Long, String> lines = new HashMap<>();
        long started = System.nanoTime();
        try (CloseableIterator<String> results =
                env.fromSequence(0, RECORDS - 1)
                        .setParallelism(1) // one ordered stream: each key's records in order
                        .keyBy(UnchainedRequestsITCase::keyOf, Types.INT)
                        .enableAsyncState()
                        .process(new UnchainedRequests())
                        .returns(Types.STRING)
                        .executeAndCollect("unchained requests on " + type)) {
            while (results.hasNext()) {
                String line = results.next();
                long id = Long.parseLong(line.substring(0, line.indexOf(' ')));
                assertThat(lines.put(id, line)).as("record %d reported twice", id).isNull();
            }
        }
        System.out.printf("%s backend: %.1f s%n", type, (System.nanoTime() - started) / 1e9);
        return lines;
    }

    /** Records whose lines differ, counted per observation, with a few examples. */
    static final class Differences {
        long records;
        final Map<String, Integer> perObservation = new LinkedHashMap<>();
        final List<String> examples = new ArrayList<>();

        Differences(Map<Long, String> expected, Map<Long, String> actual) {
            for (Map.Entry<Long, String> e : expected.entrySet()) {
                String got = actual.get(e.getKey());
                if (e.getValue().equals(got)) {
                    continue;
                }
                records++;
                if (examples.size() < 5) {
                    examples.add("expected " + e.getValue() + "\n       got " + got);
                }
                if (got == null) {
                    perObservation.merge("missing", 1, Integer::sum);
                    continue;
                }
                String[] want = e.getValue().split(" ");
                String[] have = got.split(" ");
                for (int s = 1; s < want.length && s < have.length; s++) {
                    if (!want[s].equals(have[s])) {
                        perObservation.merge(OBSERVED[s - 1], 1, Integer::sum);
                    }
                }
            }
            records += actual.keySet().stream().filter(id -> !expected.containsKey(id)).count();
        }

        @Override
        public String toString() {
            return records
                    + " records differ "
                    + perObservation
                    + (examples.isEmpty() ? "" : "\n  " + String.join("\n  ", examples));
        }
    }

    @Test
    void issueOrderIsKeptAsOnTheHashMapBackend(@TempDir Path tmp) throws Exception {
        Map<Long, String> model = model();
        Map<Long, String> hashMap = observe("hashmap", tmp.resolve("hashmap"));
        Map<Long, String> forst = observe("forst", tmp.resolve("forst"));
        Differences control = new Differences(model, hashMap);
        Differences ours = new Differences(hashMap, forst);
        System.out.println("HashMap backend vs model: " + control);
        System.out.println("ForSt-RS backend vs HashMap backend: " + ours);
        // the control first: if Flink's own backend disagrees with the model, the model is wrong
        assertThat(hashMap).hasSize((int) RECORDS);
        assertThat(control.records).as("HashMap backend vs model: %s", control).isZero();
        assertThat(ours.records).as("ForSt-RS vs HashMap backend: %s", ours).isZero();
    }
}
