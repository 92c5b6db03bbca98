package org.forstrs.flink.state;

import org.apache.flink.runtime.state.StreamStateHandle;

import java.util.Map;

/**
 * The checkpoint files a DB was restored from and references where they are, by the name the DB
 * knows each by, with the handle Flink's SharedStateRegistry tracks it under: the DB's later
 * checkpoints reference them by placeholder, which keeps them alive as long as the DB needs them.
 *
 * @param checkpointId the newest checkpoint the DB was restored from
 */
public record ReferencedFiles(long checkpointId, Map<String, StreamStateHandle> files) {

    public static final ReferencedFiles NONE = new ReferencedFiles(-1, Map.of());
}
