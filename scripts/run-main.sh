#!/usr/bin/env bash
# The main job: FLIP-423's word count as a real Flink 2.3 job on a local MiniCluster, with async
# State V2 on the ForSt-RS backend loaded from the packaged jar, state in a local directory standing
# in for the DFS, checkpointed every second. Prints records/s, where the state files are and what
# the checkpoints cost.
# Sizes: RECORDS, KEYS, PARALLELISM; state directory: STATE_DIR (checkpoints, every CHECKPOINT_INTERVAL_MS, 0 = off, go to STATE_DIR-checkpoints).
source "$(dirname "$0")/lib/env.sh"

echo "==> building forstjni jar (native library included)" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/main-classpath.txt

jar=$(ls java/target/forstjni-*.jar | head -1)
state_dir=${STATE_DIR:-${TMPDIR:-/tmp}/forst-rs-main-state}
exec java -cp "$jar:java/target/test-classes:$(cat java/target/main-classpath.txt)" \
    org.forstrs.flink.bench.WordCountJob \
    --records "${RECORDS:-2000000}" --keys "${KEYS:-100000}" --parallelism "${PARALLELISM:-2}" \
    --dir "$state_dir" --checkpoint-interval-ms "${CHECKPOINT_INTERVAL_MS:-1000}"
