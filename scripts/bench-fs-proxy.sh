#!/usr/bin/env bash
# Positional-read throughput through the Flink file-system proxy (JNI) vs native storage
# (LocalStorage, object_store's LocalFileSystem) and vs a plain Java loop over Flink's file
# system, on the same local file: 4 KiB and 64 KiB reads, 1 and 8 threads, with ratios.
# Env: FSB_FILE_MIB (file size, default 256), FSB_MILLIS (per cell, default 2000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/java-17-openjdk-amd64 ]]; then
    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi

# The bridge classes, the Java baseline (test classes) and Flink on the JVM's class path.
mvn -B -ntp -q -f java/pom.xml test-compile
cp_file=java/target/bench-classpath.txt
mvn -B -ntp -q -f java/pom.xml dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$PWD/$cp_file"
export FORST_BENCH_CLASSPATH="$PWD/java/target/classes:$PWD/java/target/test-classes:$(cat "$cp_file")"

cargo bench --bench fs_proxy
