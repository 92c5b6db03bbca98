package org.forstrs.flink.nexmark;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;

import java.util.List;
import java.util.Set;

/**
 * The {@code 'connector' = 'nexmark'} table: {@link NexmarkSource} under the schema of {@code
 * nexmark/tables.sql}. Options: {@code events} (how many), {@code seed} (0) and {@code
 * events-per-second} of event time (1000).
 */
public final class NexmarkTableFactory implements DynamicTableSourceFactory {

    static final ConfigOption<Long> EVENTS =
            ConfigOptions.key("events").longType().noDefaultValue();
    static final ConfigOption<Long> SEED = ConfigOptions.key("seed").longType().defaultValue(0L);
    static final ConfigOption<Integer> EVENTS_PER_SECOND =
            ConfigOptions.key("events-per-second").intType().defaultValue(1000);

    private static final List<String> COLUMNS = List.of("event_type", "person", "auction", "bid");

    @Override
    public String factoryIdentifier() {
        return "nexmark";
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(EVENTS);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(SEED, EVENTS_PER_SECOND);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        List<String> columns =
                LogicalTypeChecks.getFieldNames(
                        context.getPhysicalRowDataType().getLogicalType());
        if (!columns.equals(COLUMNS)) {
            throw new ValidationException(
                    "the nexmark connector produces the columns " + COLUMNS + ", not " + columns);
        }
        ReadableConfig options = helper.getOptions();
        return new Table(
                new NexmarkGenerator(options.get(SEED), options.get(EVENTS_PER_SECOND)),
                options.get(EVENTS));
    }

    private record Table(NexmarkGenerator generator, long events) implements ScanTableSource {

        @Override
        public ChangelogMode getChangelogMode() {
            return ChangelogMode.insertOnly();
        }

        @Override
        public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
            return SourceProvider.of(new NexmarkSource(generator, events));
        }

        @Override
        public DynamicTableSource copy() {
            return new Table(generator, events);
        }

        @Override
        public String asSummaryString() {
            return "nexmark(" + events + " events)";
        }
    }
}
