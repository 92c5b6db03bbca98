#!/usr/bin/env bash
# Synchronous (State V1) state access as a real Flink job on a local MiniCluster: FLIP-423's
# two-stage word count with a V1 ValueState<Long> (SyncWordCountJob), on our backend vs Flink's
# EmbeddedRocksDBStateBackend (flink-statebackend-rocksdb), state on a local directory,
# checkpoints off, the same managed memory. Builds the jar once, then runs the two backends
# alternately in separate JVMs for ROUNDS rounds (the order reversed every other round, so both
# see the same machine load), and prints each run's stage-2 records/s, the medians and the ratio
# ours / RocksDB (> 1: ours is faster).
# Sizes: ROUNDS (3), PARALLELISM (2), SYNC_KEYS (1000000, stage 1), SYNC_RECORDS (2000000,
# stage 2), MANAGED_MEMORY (128m).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/java-17-openjdk-amd64 ]]; then
    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
rounds=${ROUNDS:-3}
parallelism=${PARALLELISM:-2}
keys=${SYNC_KEYS:-1000000}
records=${SYNC_RECORDS:-2000000}
managed=${MANAGED_MEMORY:-128m}

echo "==> building the jar, the job classes and the class path" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt
classpath=$(cat java/target/bench-classpath.txt)
jar=$(ls java/target/forstjni-*.jar | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-sync.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.txt

# run <backend>: appends "<backend> <records/s>" to the results
run() {
    local backend=$1 out rate
    out=$("$java" -cp "$jar:java/target/test-classes:$classpath" org.forstrs.flink.bench.SyncWordCountJob \
        --backend "$backend" --keys "$keys" --records "$records" --parallelism "$parallelism" \
        --managed-memory "$managed" --dir "$work/state" 2>&1) || {
        echo "$out" >&2
        echo "bench-sync: the $backend run failed" >&2
        exit 1
    }
    rm -rf "$work/state"
    rate=$(awk '/^records\/s:/ {print $2}' <<<"$out")
    [[ -n $rate ]] || { echo "$out" >&2; echo "bench-sync: no records/s from $backend" >&2; exit 1; }
    printf '%-8s %10s   (%s; %s)\n' "$backend" "$rate" \
        "$(grep '^stage 1 records/s:' <<<"$out")" "$(grep '^job run time:' <<<"$out")" >&2
    echo "$backend $rate" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    order=(forst rocksdb)
    ((round % 2)) || order=(rocksdb forst)
    echo "==> round $round of $rounds" >&2
    for backend in "${order[@]}"; do
        run "$backend"
    done
done

median() {
    local values n
    values=$(awk -v b="$1" '$1 == b {print $2}' "$results" | sort -n)
    n=$(wc -l <<<"$values")
    sed -n "$(((n + 1) / 2))p" <<<"$values"
}
echo
echo "stage-2 records/s, median of $rounds rounds ($keys keys, $records stage-2 records, parallelism" \
    "$parallelism, managed memory $managed, checkpoints off)"
for backend in forst rocksdb; do
    printf '%-8s %10s   all rounds: %s\n' "$backend" "$(median "$backend")" \
        "$(awk -v b="$backend" '$1 == b {printf "%s ", $2}' "$results")"
done
ours=$(median forst)
theirs=$(median rocksdb)
awk -v o="$ours" -v t="$theirs" 'BEGIN {printf "ratio ours / RocksDB: %.2f\n", o / t}'
