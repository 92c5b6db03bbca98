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
# Results: bench-results/timers/.
source "$(dirname "$0")/lib/bench-jvm.sh" timers
rounds=${ROUNDS:-3}
parallelism=${PARALLELISM:-2}
timers=${TIMERS:-2000000}
keys=${TIMER_KEYS:-20000}
managed=${MANAGED_MEMORY:-128m}
backends=(forst forst-heap rocksdb)

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

echo
echo "timers/s, median of $rounds rounds ($timers timers over $keys keys, parallelism $parallelism," \
    "managed memory $managed, checkpoints off)"
printf '%-10s %12s %12s %18s %18s\n' backend register/s fire/s "register vs RocksDB" "fire vs RocksDB"
for backend in "${backends[@]}"; do
    awk -v b="$backend" -v r="$(median 2 "$backend")" -v f="$(median 3 "$backend")" \
        -v rr="$(median 2 rocksdb)" -v rf="$(median 3 rocksdb)" \
        'BEGIN {printf "%-10s %12s %12s %18.2f %18.2f\n", b, r, f, r / rr, f / rf}'
done

bench_param timers="$timers" keys="$keys" parallelism="$parallelism" managed_memory="$managed" \
    rounds="$rounds"
for backend in forst forst-heap; do
    measure_rounds "$backend: registrations/s" timers/s higher 2 "Flink's RocksDB timers" \
        "$backend" -- rocksdb -- --label phase=register
    measure_rounds "$backend: firings/s" timers/s higher 3 "Flink's RocksDB timers" \
        "$backend" -- rocksdb -- --label phase=fire
done
bench_write timers
