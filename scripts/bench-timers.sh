#!/usr/bin/env bash
# Timer registration and firing throughput as a real Flink job on a local MiniCluster
# (TimerBenchJob): one event-time timer per record, all registered, then all fired by the
# end-of-input watermark. Three timer services: ours in the store (timer-service.factory:
# ForStDB, the default), ours on the heap (HEAP), and Flink's EmbeddedRocksDBStateBackend with
# RocksDB timers (flink-statebackend-rocksdb 2.3.0, the baseline). State on a local directory,
# checkpoints off, the same managed memory. Builds the jar once, runs the three in turn in
# separate JVMs for ROUNDS rounds (the order rotated every round, so all see the same machine
# load), and prints each run's registrations/s and firings/s, the medians and the ratios to
# RocksDB measured in the same run (> 1: faster than RocksDB).
# Sizes: ROUNDS (3), PARALLELISM (2), TIMERS (2000000), TIMER_KEYS (20000), MANAGED_MEMORY (128m).
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
timers=${TIMERS:-2000000}
keys=${TIMER_KEYS:-20000}
managed=${MANAGED_MEMORY:-128m}
backends=(forst forst-heap rocksdb)

echo "==> building the jar, the job classes and the class path" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt
classpath=$(cat java/target/bench-classpath.txt)
jar=$(ls java/target/forstjni-*.jar | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-timers.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.txt

# run <backend>: appends "<backend> <registrations/s> <firings/s>" to the results
run() {
    local backend=$1 out register fire
    out=$("$java" -cp "$jar:java/target/test-classes:$classpath" org.forstrs.flink.bench.TimerBenchJob \
        --backend "$backend" --timers "$timers" --keys "$keys" --parallelism "$parallelism" \
        --managed-memory "$managed" --dir "$work/state" 2>&1) || {
        echo "$out" >&2
        echo "bench-timers: the $backend run failed" >&2
        exit 1
    }
    rm -rf "$work/state"
    register=$(awk '/^register\/s:/ {print $2}' <<<"$out")
    fire=$(awk '/^fire\/s:/ {print $2}' <<<"$out")
    [[ -n $register && -n $fire ]] || { echo "$out" >&2; echo "bench-timers: no rates from $backend" >&2; exit 1; }
    printf '%-10s register/s %10s   fire/s %10s\n' "$backend" "$register" "$fire" >&2
    echo "$backend $register $fire" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    echo "==> round $round of $rounds" >&2
    for ((i = 0; i < ${#backends[@]}; i++)); do
        run "${backends[(i + round - 1) % ${#backends[@]}]}"
    done
done

# median <backend> <column>
median() {
    local values n
    values=$(awk -v b="$1" -v c="$2" '$1 == b {print $c}' "$results" | sort -n)
    n=$(wc -l <<<"$values")
    sed -n "$(((n + 1) / 2))p" <<<"$values"
}
echo
echo "timers/s, median of $rounds rounds ($timers timers over $keys keys, parallelism $parallelism," \
    "managed memory $managed, checkpoints off)"
printf '%-10s %12s %12s %18s %18s\n' backend register/s fire/s "register vs RocksDB" "fire vs RocksDB"
for backend in "${backends[@]}"; do
    awk -v b="$backend" -v r="$(median "$backend" 2)" -v f="$(median "$backend" 3)" \
        -v rr="$(median rocksdb 2)" -v rf="$(median rocksdb 3)" \
        'BEGIN {printf "%-10s %12s %12s %18.2f %18.2f\n", b, r, f, r / rr, f / rf}'
done
