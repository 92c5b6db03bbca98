#!/usr/bin/env bash
# Synchronous (State V1) state access as a real Flink job on a local MiniCluster: FLIP-423's
# two-stage word count with a V1 ValueState<Long> (SyncWordCountJob), on our backend vs Flink's
# EmbeddedRocksDBStateBackend (flink-statebackend-rocksdb), state on a local directory,
# checkpoints off, the same managed memory. Builds the jar once, then runs the two backends
# alternately in separate JVMs for ROUNDS rounds (the order reversed every other round, so both
# see the same machine load), and prints each run's stage-2 records/s, the medians and the ratio
# ours / RocksDB (> 1: ours is faster).
# Sizes: ROUNDS (3), PARALLELISM (2), SYNC_KEYS (1000000, stage 1), SYNC_RECORDS (2000000,
# stage 2), MANAGED_MEMORY (128m). Results: bench-results/sync/.
source "$(dirname "$0")/lib/bench-jvm.sh" sync
rounds=${ROUNDS:-3}
parallelism=${PARALLELISM:-2}
keys=${SYNC_KEYS:-1000000}
records=${SYNC_RECORDS:-2000000}
managed=${MANAGED_MEMORY:-128m}

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

echo
echo "stage-2 records/s, median of $rounds rounds ($keys keys, $records stage-2 records, parallelism" \
    "$parallelism, managed memory $managed, checkpoints off)"
for backend in forst rocksdb; do
    printf '%-8s %10s   all rounds: %s\n' "$backend" "$(median 2 "$backend")" \
        "$(awk -v b="$backend" '$1 == b {printf "%s ", $2}' "$results")"
done
ours=$(median 2 forst)
theirs=$(median 2 rocksdb)
awk -v o="$ours" -v t="$theirs" 'BEGIN {printf "ratio ours / RocksDB: %.2f\n", o / t}'

bench_param keys="$keys" records="$records" parallelism="$parallelism" managed_memory="$managed" \
    rounds="$rounds"
measure_rounds "stage-2 records/s" records/s higher 2 "Flink's EmbeddedRocksDBStateBackend" \
    forst -- rocksdb
bench_write sync
