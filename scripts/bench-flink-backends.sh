#!/usr/bin/env bash
# ForSt-RS vs the backends Flink users run today, as real Flink jobs on a local MiniCluster with the
# same managed memory: Flink's RocksDB (EmbeddedRocksDBStateBackend, local disk) and the HashMap
# (heap) backend, and Flink's own ForSt. One of two jobs (JOB): "wordcount", the word count
# with async ValueState (CompareForStJob: one read and one write per record), or "window", a keyed
# tumbling event-time window sum with async state. Each run is its own JVM; rounds are interleaved
# (the order reversed every other round). Subjects (SUBJECTS, in this order by default):
#   ours-local       ForSt-RS, primary dir on a local directory, no disk cache
#   ours-threads     ours-local with executor.inline-coordinator: false (batches on executor
#                    threads)
#   ours-no-write-behind  ours-local with executor.write-behind: false (every write a round trip)
#   ours-batched     ours-local with executor.run-at-issue: false (every request batched)
#   ours-slow-cache  ForSt-RS on slowfs:// (SLOW_OPEN_US per open, SLOW_READ_US per read) with the
#                    local disk cache (CACHE_SIZE)
#   rocksdb          Flink's RocksDB on local disk: the baseline of every ratio
#   hashmap          Flink's heap backend (needs the state to fit in the JVM's heap)
#   forst-local      Flink's ForSt (C++, 2.3.0) on a local directory, no disk cache
# Prints each run, then per subject the medians of records/s, CPU seconds and peak RSS of the JVM
# and their ratios to RocksDB (records/s: > 1 is faster; CPU and RSS: < 1 is less); ours-local's
# records/s also against the heap backend's and Flink's ForSt's.
# Sizes: SIZES, each keys:managed memory:records ("1000000:32m:3000000 10000000:64m:6000000": state
# about 1x and 10x the managed memory), ROUNDS (3), PARALLELISM (2), CACHE_SIZE (1gb),
# SLOW_OPEN_US (1500), SLOW_READ_US (1500), HEAP and HASHMAP_HEAP (each JVM's fixed heap, as a
# TaskManager's: lib/bench-jvm.sh heap_args).
# Results: bench-results/flink-backends-<JOB>/ (records/s, CPU seconds and peak RSS per round).
source "$(dirname "$0")/lib/bench-jvm.sh" flink-backends
rounds=${ROUNDS:-3}
read -r -a sizes <<<"${SIZES:-1000000:32m:3000000 10000000:64m:6000000}"
parallelism=${PARALLELISM:-2}
cache_size=${CACHE_SIZE:-1gb}
slow_open=${SLOW_OPEN_US:-1500}
slow_read=${SLOW_READ_US:-1500}
job=${JOB:-wordcount}
read -r -a subjects <<<"${SUBJECTS:-ours-local ours-slow-cache rocksdb hashmap forst-local}"
case $job in
wordcount) job_name="word count, async ValueState" ;;
window) job_name="tumbling event-time window sum, async state (10 windows)" ;;
*) echo "bench-flink-backends: JOB must be wordcount or window, not $job" >&2; exit 1 ;;
esac

# run <keys> <managed> <records> <subject>: appends "<subject> <keys> <records/s> <cpu s> <rss MiB>"
# to the results
run() {
    local keys=$1 managed=$2 records=$3 subject=$4 cp="java/target/test-classes:$classpath" args=() out
    rm -rf "$work/state" "$work/local" "$work/cache"
    mkdir -p "$work/state"
    local no_cache=(--state.backend.forst.cache.size-based-limit 0
        --state.backend.forst.cache.reserve-size 0)
    case $subject in
    ours-local) cp="$jar:$cp" args=(--dir "file://$work/state" "${no_cache[@]}") ;;
    ours-threads)
        cp="$jar:$cp"
        args=(--dir "file://$work/state" "${no_cache[@]}"
            --state.backend.forst.executor.inline-coordinator false)
        ;;
    ours-no-write-behind)
        cp="$jar:$cp"
        args=(--dir "file://$work/state" "${no_cache[@]}"
            --state.backend.forst.executor.write-behind false)
        ;;
    ours-batched)
        cp="$jar:$cp"
        args=(--dir "file://$work/state" "${no_cache[@]}"
            --state.backend.forst.executor.run-at-issue false)
        ;;
    ours-slow-cache)
        cp="$jar:$cp"
        args=(--dir "slowfs://$work/state" --state.backend.forst.cache.dir "$work/cache"
            --state.backend.forst.cache.size-based-limit "$cache_size")
        ;;
    rocksdb) args=(--backend rocksdb) ;;
    hashmap) args=(--backend hashmap) ;;
    forst-local) args=(--dir "file://$work/state" "${no_cache[@]}") ;;
    *) echo "bench-flink-backends: unknown subject $subject" >&2; exit 1 ;;
    esac
    # shellcheck disable=SC2046 # heap_args prints two JVM options
    out=$("$java" $(heap_args "$subject") -Dslowfs.open-delay-us="$slow_open" \
        -Dslowfs.read-delay-us="$slow_read" -cp "$cp" org.forstrs.flink.bench.CompareForStJob \
        --job "$job" "${args[@]}" \
        --local-dir "$work/local" --keys "$keys" --records "$records" \
        --parallelism "$parallelism" --managed-memory "$managed" 2>&1) || {
        echo "$out" | tail -50 >&2
        echo "bench-flink-backends: $subject failed" >&2
        exit 1
    }
    local rate cpu rss
    rate=$(value 'records/s' "$out")
    cpu=$(value 'cpu seconds' "$out")
    rss=$(value 'peak rss MiB' "$out")
    [[ -n $rate ]] || { echo "$out" | tail -50 >&2; echo "bench-flink-backends: no records/s" >&2; exit 1; }
    printf '%9s keys  %-16s %9s rec/s  cpu %6s s  rss %5s MiB\n' "$keys" "$subject" "$rate" \
        "$cpu" "$rss" >&2
    echo "$subject $keys $rate $cpu $rss" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    mapfile -t order < <(round_order "$round" "${subjects[@]}")
    echo "==> round $round of $rounds" >&2
    for size in "${sizes[@]}"; do
        IFS=: read -r keys managed records <<<"$size"
        for subject in "${order[@]}"; do
            run "$keys" "$managed" "$records" "$subject"
        done
    done
done

echo
echo "$job_name, parallelism $parallelism; slowfs $slow_open us per open, $slow_read us per read;" \
    "disk cache $cache_size; medians of $rounds rounds"
echo
echo "| keys | managed | subject | records/s | / RocksDB | CPU s | / RocksDB | peak RSS MiB | / RocksDB |"
echo "|---:|---|---|---:|---:|---:|---:|---:|---:|"
for size in "${sizes[@]}"; do
    IFS=: read -r keys managed records <<<"$size"
    for subject in "${subjects[@]}"; do
        rate=$(median 3 "$subject" "$keys") cpu=$(median 4 "$subject" "$keys")
        rss=$(median 5 "$subject" "$keys")
        echo "| $keys | $managed | $subject | $rate | $(ratio "$rate" "$(median 3 rocksdb "$keys")") |" \
            "$cpu | $(ratio "$cpu" "$(median 4 rocksdb "$keys")") | $rss |" \
            "$(ratio "$rss" "$(median 5 rocksdb "$keys")") |"
    done
done

bench_param job="$job" sizes="${sizes[*]}" parallelism="$parallelism" cache_size="$cache_size" \
    heap="$heap" hashmap_heap="$hashmap_heap" \
    slow_open_us="$slow_open" slow_read_us="$slow_read" rounds="$rounds" subjects="${subjects[*]}"
for size in "${sizes[@]}"; do
    IFS=: read -r keys managed records <<<"$size"
    for subject in "${subjects[@]}"; do
        [[ $subject == rocksdb ]] && continue
        labels=(--label keys="$keys" --label managed="$managed" --label records="$records")
        for measure in "records/s:records/s:higher:3" "CPU seconds:s:lower:4" "peak RSS:MiB:lower:5"; do
            IFS=: read -r name unit better column <<<"$measure"
            measure_rounds "$subject: $name" "$unit" "$better" "$column" \
                "Flink's RocksDB, local disk" "$subject" "$keys" -- rocksdb "$keys" -- "${labels[@]}"
        done
        if [[ $subject == ours-* && " ${subjects[*]} " == *" hashmap "* ]]; then
            measure_rounds "$subject: records/s against the heap" records/s higher 3 \
                "Flink's HashMap (heap)" "$subject" "$keys" -- hashmap "$keys" -- "${labels[@]}"
        fi
        if [[ $subject == ours-local && " ${subjects[*]} " == *" forst-local "* ]]; then
            measure_rounds "$subject: records/s against Flink's ForSt" records/s higher 3 \
                "Flink's ForSt, local directory" "$subject" "$keys" -- forst-local "$keys" -- \
                "${labels[@]}"
        fi
    done
done
bench_write "flink-backends-$job"
