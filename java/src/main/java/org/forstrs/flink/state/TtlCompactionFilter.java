package org.forstrs.flink.state;

import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.ttl.TtlUtils;
import org.apache.flink.runtime.state.ttl.TtlValue;

import javax.annotation.Nullable;

import java.io.IOException;

/**
 * Makes the engine's compaction drop a state's expired TTL entries, as Flink's RocksDB and ForSt
 * backends do with {@code FlinkCompactionFilter} ({@code RocksDbTtlCompactFiltersManager}): set
 * when a state with TTL and the compaction-filter cleanup (Flink's default) is registered, also
 * after a restore, since Flink registers every state again. The engine finds the last-access
 * timestamp of Flink's {@code TtlValue} at offset 0 of a value, after the null flag of a map
 * value, and at each element of a list: fixed-length elements natively, others by calling {@link
 * ListElementFilter} from its compaction thread. Time is the engine's wall clock for Flink's
 * default time provider; any other provider (tests' manual ones) is called back.
 */
public final class TtlCompactionFilter {

    /** Layout codes of {@code ForStNative.setTtlCompactionFilter}. */
    private static final int NO_FILTER = 0;

    private static final int VALUE = 1;
    private static final int FIXED_LENGTH_LIST = 2;
    private static final int ELEMENT_FILTER_LIST = 3;

    /** Null flag before the {@code TtlValue} of a map value. */
    private static final int MAP_TIMESTAMP_OFFSET = 1;

    /**
     * Flink's default of {@code queryTimeAfterNumEntries} (its backends' {@code
     * compaction.filter.query-time-after-num-entries}).
     */
    private static final long DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES = 1000;

    private TtlCompactionFilter() {}

    /** For a synchronous (V1) state; {@code stateSerializer} as registered. */
    public static void configure(
            NativeDb db,
            int cf,
            org.apache.flink.api.common.state.StateDescriptor<?, ?> stateDesc,
            TypeSerializer<?> stateSerializer,
            TtlTimeProvider timeProvider) {
        switch (stateDesc.getType()) {
            case LIST:
                TypeSerializer<?> elements =
                        stateSerializer instanceof ListSerializer
                                ? ((ListSerializer<?>) stateSerializer).getElementSerializer()
                                : null;
                configure(db, cf, stateDesc.getTtlConfig(), false, elements, timeProvider);
                break;
            case MAP:
                configure(db, cf, stateDesc.getTtlConfig(), true, null, timeProvider);
                break;
            default:
                configure(db, cf, stateDesc.getTtlConfig(), false, null, timeProvider);
        }
    }

    /** For an asynchronous (State V2) state; a list's serializer is its element serializer. */
    public static void configure(
            NativeDb db,
            int cf,
            org.apache.flink.api.common.state.v2.StateDescriptor<?> stateDesc,
            TtlTimeProvider timeProvider) {
        switch (stateDesc.getType()) {
            case LIST:
                configure(
                        db,
                        cf,
                        stateDesc.getTtlConfig(),
                        false,
                        stateDesc.getSerializer(),
                        timeProvider);
                break;
            case MAP:
                configure(db, cf, stateDesc.getTtlConfig(), true, null, timeProvider);
                break;
            default:
                configure(db, cf, stateDesc.getTtlConfig(), false, null, timeProvider);
        }
    }

    private static void configure(
            NativeDb db,
            int cf,
            StateTtlConfig ttlConfig,
            boolean map,
            @Nullable TypeSerializer<?> listElements,
            TtlTimeProvider timeProvider) {
        if (!ttlConfig.isEnabled() || !ttlConfig.getCleanupStrategies().inRocksdbCompactFilter()) {
            // A state registered again without TTL must not keep the filter of its TTL values.
            db.setTtlCompactionFilter(cf, NO_FILTER, 0, 0, 0, null, null);
            return;
        }
        StateTtlConfig.RocksdbCompactFilterCleanupStrategy strategy =
                ttlConfig.getCleanupStrategies().getRocksdbCompactFilterCleanupStrategy();
        long queryTimeAfterNumEntries =
                strategy == null
                        ? DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
                        : strategy.getQueryTimeAfterNumEntries();
        long ttl = ttlConfig.getTimeToLive().toMillis();
        TtlTimeProvider clock = timeProvider == TtlTimeProvider.DEFAULT ? null : timeProvider;
        if (listElements == null) {
            db.setTtlCompactionFilter(
                    cf,
                    VALUE,
                    map ? MAP_TIMESTAMP_OFFSET : 0,
                    ttl,
                    queryTimeAfterNumEntries,
                    clock,
                    null);
        } else if (listElements.getLength() > 0) {
            db.setTtlCompactionFilter(
                    cf,
                    FIXED_LENGTH_LIST,
                    listElements.getLength(),
                    ttl,
                    queryTimeAfterNumEntries,
                    clock,
                    null);
        } else {
            db.setTtlCompactionFilter(
                    cf,
                    ELEMENT_FILTER_LIST,
                    0,
                    ttl,
                    queryTimeAfterNumEntries,
                    clock,
                    new ListElementFilter(listElements.duplicate()));
        }
    }

    /**
     * Where the unexpired part of a list of variable-length {@code TtlValue}s begins; called by
     * the engine's compaction (Flink's {@code FlinkCompactionFilter.ListElementFilter}).
     */
    static final class ListElementFilter {
        private final TypeSerializer<?> elementSerializer;

        /** User code's, where a serializer (Kryo) may need to load user classes. */
        private final ClassLoader classLoader = Thread.currentThread().getContextClassLoader();

        private final DataInputDeserializer input = new DataInputDeserializer();

        ListElementFilter(TypeSerializer<?> elementSerializer) {
            this.elementSerializer = elementSerializer;
        }

        /**
         * The offset just after the {@code ','} before the first element not expired at {@code
         * currentTimestamp}: 0 if the first is not expired, the list's length if none is left.
         * Synchronized: the engine runs one compaction at a time, but on different threads (its
         * worker, a caller of {@code compact}).
         */
        synchronized int nextUnexpiredOffset(byte[] list, long ttl, long currentTimestamp)
                throws IOException {
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            thread.setContextClassLoader(classLoader);
            try {
                input.setBuffer(list);
                int offset = 0;
                while (input.available() > 0) {
                    TtlValue<?> element = (TtlValue<?>) elementSerializer.deserialize(input);
                    if (!TtlUtils.expired(element.getLastAccessTimestamp(), ttl, currentTimestamp)) {
                        break;
                    }
                    if (input.available() > 0) {
                        input.skipBytesToRead(1); // the delimiter
                    }
                    offset = input.getPosition();
                }
                return offset;
            } finally {
                thread.setContextClassLoader(previous);
            }
        }
    }
}
