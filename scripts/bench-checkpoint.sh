#!/usr/bin/env bash
# Checkpoint, restore and 2 -> 3 rescale cost at two state sizes 10x apart (engine level):
# synchronous phase, asynchronous phase (flush + hand-over), bytes written by checkpoints,
# restore and rescale times (restore by reference), each with the ratio large/small, on a local
# directory, on a latency-injected "DFS", and on HDFS (a MiniDFSCluster in the bench's JVM)
# through the Flink file-system proxy.
# Sizes: CP_KEYS (small; large = CP_SCALE x CP_KEYS), CP_ROUNDS, CP_LATENCY_US.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/java-17-openjdk-amd64 ]]; then
    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi

# The bridge classes, HdfsCluster (test classes), Flink and Hadoop on the JVM's class path.
mvn -B -ntp -q -f java/pom.xml test-compile
cp_file=java/target/bench-classpath.txt
mvn -B -ntp -q -f java/pom.xml dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$PWD/$cp_file"
export FORST_BENCH_CLASSPATH="$PWD/java/target/classes:$PWD/java/target/test-classes:$(cat "$cp_file")"

cargo bench --bench checkpoint
