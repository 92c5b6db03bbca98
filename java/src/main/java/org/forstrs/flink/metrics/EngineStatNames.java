package org.forstrs.flink.metrics;

import org.forstrs.jni.ForStNative;

import java.util.List;

/**
 * The names of the engine's statistics, read once from the native table ({@link
 * ForStNative#statNames}), the one place they are defined; {@link ForStNative#stats} fills its
 * values in this order.
 */
final class EngineStatNames {

    private EngineStatNames() {}

    /** Every name, in the order of the values. */
    static List<String> all() {
        return Holder.NAMES;
    }

    /** The position of {@code name} among the values. */
    static int indexOf(String name) {
        int index = Holder.NAMES.indexOf(name);
        if (index < 0) {
            throw new IllegalStateException(
                    "The engine exports no statistic '" + name + "' (it has " + Holder.NAMES + ")");
        }
        return index;
    }

    /** Read on first use, so the native library loads only where metrics are used. */
    private static final class Holder {
        private static final List<String> NAMES = List.of(ForStNative.statNames());
    }
}
