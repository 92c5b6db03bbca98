#!/usr/bin/env bash
# ForSt-RS vs Flink's own ForSt (org.apache.flink:flink-statebackend-forst 2.3.0, the C++ ForSt
# through JNI) as real Flink jobs on a local MiniCluster, the same managed memory, one of two jobs
# (JOB): "wordcount", the word count with async ValueState (CompareForStJob: one read and one
# write per record), or "window", a keyed tumbling event-time window sum with async state over
# KEYS keys (AsyncWindowAggregate: 10 windows over the input; per record a reducing state read
# and write and a timer, per key and window a firing that reads and clears).
# Each backend runs in its own JVM (our jar shadows Flink's ForStStateBackendFactory, so Flink's
# ForSt runs with our jar off the class path) in five configurations:
#   local-off, local-on   primary dir on a local directory (file://)
#   slow-off, slow-on     primary dir on slowfs:// (org.forstrs.fs.bench.SlowFileSystem: the
#                         local files with SLOW_OPEN_US per open and SLOW_READ_US per read call,
#                         like a DFS)
#   local-cp              local-off with incremental checkpoints every CHECKPOINT_MS to a local
#                         directory
# "off" / "on": without and with the local disk cache (state.backend.forst.cache.dir +
# cache.size-based-limit CACHE_SIZE; "off" sets size-based-limit and reserve-size to 0, which turns
# off both backends' caches). Rounds are interleaved (backend order reversed every other round);
# prints each run, then per configuration the medians of records/s, the ratio ours / Flink's ForSt,
# CPU seconds and peak RSS of the JVM, the calls to slowfs (opens, reads, files created), and with
# checkpoints the checkpoints completed (ours / Flink's).
# Sizes: ROUNDS (3), KEYS (1000000), RECORDS (2000000), PARALLELISM (2), MANAGED_MEMORY (32m),
# CACHE_SIZE (1gb), SLOW_OPEN_US (1500), SLOW_READ_US (1500), CHECKPOINT_MS (2000); CONFIGS
# (default "local-off local-on slow-off slow-on local-cp"); HEAP (each JVM's fixed heap, as a
# TaskManager's: lib/bench-jvm.sh heap_args).
# Results: bench-results/flink-forst-<JOB>/ (records/s, CPU seconds and peak RSS per round).
source "$(dirname "$0")/lib/bench-jvm.sh" flink-forst
rounds=${ROUNDS:-3}
keys=${KEYS:-1000000}
records=${RECORDS:-2000000}
parallelism=${PARALLELISM:-2}
managed=${MANAGED_MEMORY:-32m}
cache_size=${CACHE_SIZE:-1gb}
slow_open=${SLOW_OPEN_US:-1500}
slow_read=${SLOW_READ_US:-1500}
checkpoint_ms=${CHECKPOINT_MS:-2000}
job=${JOB:-wordcount}
read -r -a configs <<<"${CONFIGS:-local-off local-on slow-off slow-on local-cp}"
case $job in
wordcount) job_name="word count, async ValueState" ;;
window) job_name="tumbling event-time window sum, async state (10 windows)" ;;
*) echo "bench-flink-forst: JOB must be wordcount or window, not $job" >&2; exit 1 ;;
esac

grep -q flink-statebackend-forst-2.3.0 <<<"$classpath" || {
    echo "bench-flink-forst: flink-statebackend-forst 2.3.0 is not on the test class path" >&2
    exit 1
}

# run <backend: ours|flink> <config>: appends "<backend> <config> <records/s> <cpu s> <rss MiB>
# <opens> <reads> <creates>" to the results
run() {
    local backend=$1 config=$2 storage=${2%-*} cache=${2#*-} cp out dir checkpoint_args=()
    cp="java/target/test-classes:$classpath"
    [[ $backend == ours ]] && cp="$jar:$cp"
    rm -rf "$work/state" "$work/local" "$work/cache" "$work/checkpoints"
    mkdir -p "$work/state"
    if [[ $cache == cp ]]; then
        cache=off
        checkpoint_args=(--checkpoint-interval "$checkpoint_ms"
            --checkpoint-dir "file://$work/checkpoints")
    fi
    dir="file://$work/state"
    [[ $storage == slow ]] && dir="slowfs://$work/state"
    local cache_args=(--state.backend.forst.cache.size-based-limit 0
        --state.backend.forst.cache.reserve-size 0)
    [[ $cache == on ]] && cache_args=(--state.backend.forst.cache.dir "$work/cache"
        --state.backend.forst.cache.size-based-limit "$cache_size")
    # shellcheck disable=SC2046 # heap_args prints two JVM options
    out=$("$java" $(heap_args "$backend") -Dslowfs.open-delay-us="$slow_open" \
        -Dslowfs.read-delay-us="$slow_read" -cp "$cp" org.forstrs.flink.bench.CompareForStJob \
        --job "$job" "${checkpoint_args[@]}" \
        --dir "$dir" --local-dir "$work/local" --keys "$keys" --records "$records" \
        --parallelism "$parallelism" --managed-memory "$managed" "${cache_args[@]}" 2>&1) || {
        echo "$out" | tail -50 >&2
        echo "bench-flink-forst: $backend $config failed" >&2
        exit 1
    }
    local rate cpu rss opens reads creates checkpoints
    rate=$(value 'records/s' "$out")
    cpu=$(value 'cpu seconds' "$out")
    rss=$(value 'peak rss MiB' "$out")
    opens=$(value 'slowfs opens' "$out")
    reads=$(value 'slowfs reads' "$out")
    creates=$(value 'slowfs creates' "$out")
    checkpoints=$(value 'checkpoints' "$out")
    [[ -n $rate ]] || { echo "$out" | tail -50 >&2; echo "bench-flink-forst: no records/s" >&2; exit 1; }
    printf '%-6s %-9s %9s rec/s  cpu %6s s  rss %5s MiB  checkpoints %3s  %s\n' "$backend" \
        "$config" "$rate" "$cpu" "$rss" "$checkpoints" "$(grep '^slowfs:' <<<"$out")" >&2
    echo "$backend $config $rate $cpu $rss $opens $reads $creates $checkpoints" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    order=(ours flink)
    ((round % 2)) || order=(flink ours)
    echo "==> round $round of $rounds" >&2
    for config in "${configs[@]}"; do
        for backend in "${order[@]}"; do
            run "$backend" "$config"
        done
    done
done

echo
echo "$job_name: $keys keys, $records records, parallelism $parallelism," \
    "managed memory $managed, checkpoints off except local-cp (every $checkpoint_ms ms); slowfs" \
    "$slow_open us per open, $slow_read us per read; disk cache $cache_size when on; medians of" \
    "$rounds rounds"
echo
echo "| storage | disk caches | ours rec/s | Flink's ForSt rec/s | ours / Flink's | CPU s ours / Flink's | peak RSS MiB ours / Flink's | slowfs opens / reads / files created, ours | same, Flink's |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for config in "${configs[@]}"; do
    ours=$(median 3 ours "$config")
    theirs=$(median 3 flink "$config")
    ratio=$(awk -v o="$ours" -v t="$theirs" 'BEGIN {printf "%.2f", o / t}')
    calls() { echo "$(median 6 "$1" "$config") / $(median 7 "$1" "$config") / $(median 8 "$1" "$config")"; }
    caches=${config#*-}
    [[ $caches == cp ]] && caches="off, checkpoints every $((checkpoint_ms / 1000)) s\
 ($(median 9 ours "$config") / $(median 9 flink "$config") completed)"
    echo "| ${config%-*} | $caches | $ours | $theirs | $ratio |" \
        "$(median 4 ours "$config") / $(median 4 flink "$config") |" \
        "$(median 5 ours "$config") / $(median 5 flink "$config") | $(calls ours) | $(calls flink) |"
done
if [[ " ${configs[*]} " == *" slow-on "* && " ${configs[*]} " == *" local-off "* ]]; then
    awk -v s="$(median 3 ours slow-on)" -v l="$(median 3 ours local-off)" \
        'BEGIN {printf "\nours on slowfs with the disk cache / ours on a local directory: %.2f\n", s / l}'
fi

bench_param job="$job" keys="$keys" records="$records" parallelism="$parallelism" \
    managed_memory="$managed" cache_size="$cache_size" slow_open_us="$slow_open" \
    slow_read_us="$slow_read" checkpoint_ms="$checkpoint_ms" rounds="$rounds" heap="$heap"
for config in "${configs[@]}"; do
    labels=(--label config="$config" --label storage="${config%-*}" --label caches="${config#*-}")
    measure_rounds "$config: records/s" records/s higher 3 "Flink's ForSt" ours "$config" -- \
        flink "$config" -- "${labels[@]}"
    measure_rounds "$config: CPU seconds" s lower 4 "Flink's ForSt" ours "$config" -- \
        flink "$config" -- "${labels[@]}"
    measure_rounds "$config: peak RSS" MiB lower 5 "Flink's ForSt" ours "$config" -- \
        flink "$config" -- "${labels[@]}"
done
bench_write "flink-forst-$job"
