#!/usr/bin/env bash
# Nexmark on every backend: each query (java/src/test/resources/nexmark/, NexmarkJob: the repo's
# generator, a blackhole sink) over the same EVENTS events, parallelism PARALLELISM, the same
# managed memory (MANAGED), each run its own JVM, rounds interleaved (the order reversed every
# other round). Subjects (SUBJECTS, in this order by default):
#   ours-local        ForSt-RS, primary dir on a local directory, no disk cache
#   ours-sync         as ours-local, with Flink's synchronous SQL operators (its default,
#                     table.exec.async-state.enabled: false) instead of the async ones
#   ours-slow-cache   ForSt-RS on slowfs:// (SLOW_OPEN_US per open, SLOW_READ_US per read) with the
#                     local disk cache (CACHE_SIZE)
#   rocksdb           Flink's RocksDB on local disk: the baseline of every ratio
#   forst-local       Flink's ForSt (C++, 2.3.0) on a local directory, no disk cache
#   forst-slow-cache  Flink's ForSt on the same slowfs:// with its disk cache (CACHE_SIZE)
#   hashmap           Flink's heap backend (the state must fit in the JVM's heap)
#   ours-no-write-behind  ours-local with executor.write-behind: false (every write a round trip)
#   ours-batched      ours-local with executor.run-at-issue: false (every request batched)
# SQL operators use async state on ForSt-RS (but ours-sync) and Flink's ForSt and synchronous state
# on the others.
# Prints each run, then per query the medians of events/s and each subject's ratio to RocksDB, and
# the geometric means over the stateful queries (every query but q0, the pass-through baseline).
# Defaults: EVENTS (1000000: a round of every query on every subject takes about 35 minutes on 2
# cores), MANAGED (32m), QUERIES (q0 and the 14 stateful ones), ROUNDS (2),
# PARALLELISM (2), CACHE_SIZE (1gb), SLOW_OPEN_US (1500), SLOW_READ_US (1500), HEAP and
# HASHMAP_HEAP (each JVM's fixed heap, as a TaskManager's: lib/bench-jvm.sh heap_args).
# Results: bench-results/nexmark/ (events/s, CPU seconds and peak RSS per round; charts per storage),
# or bench-results/$RESULTS_NAME/ for a run that is not the whole table (nexmark-write-behind).
source "$(dirname "$0")/lib/bench-jvm.sh" nexmark
rounds=${ROUNDS:-2}
events=${EVENTS:-1000000}
managed=${MANAGED:-32m}
parallelism=${PARALLELISM:-2}
cache_size=${CACHE_SIZE:-1gb}
slow_open=${SLOW_OPEN_US:-1500}
slow_read=${SLOW_READ_US:-1500}
read -r -a queries <<<"${QUERIES:-q0 q3 q4 q5 q7 q8 q9 q11 q12 q15 q16 q17 q18 q19 q20}"
read -r -a subjects <<<"${SUBJECTS:-ours-local ours-sync ours-slow-cache rocksdb forst-local forst-slow-cache hashmap}"

# run <query> <subject>: appends "<subject> <query> <events/s> <cpu s> <rss MiB>" to the results
run() {
    local query=$1 subject=$2 cp="java/target/test-classes:$classpath" args=() out
    rm -rf "$work/state" "$work/local" "$work/cache"
    mkdir -p "$work/state"
    local no_cache=(--state.backend.forst.cache.size-based-limit 0
        --state.backend.forst.cache.reserve-size 0)
    local slow_cache=(--dir "slowfs://$work/state" --state.backend.forst.cache.dir "$work/cache"
        --state.backend.forst.cache.size-based-limit "$cache_size")
    case $subject in
    ours-local) cp="$jar:$cp" args=(--dir "file://$work/state" "${no_cache[@]}") ;;
    ours-sync)
        cp="$jar:$cp" args=(--dir "file://$work/state" "${no_cache[@]}" --async-state false)
        ;;
    ours-slow-cache) cp="$jar:$cp" args=("${slow_cache[@]}") ;;
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
    rocksdb) args=(--backend rocksdb) ;;
    forst-local) args=(--dir "file://$work/state" "${no_cache[@]}") ;;
    forst-slow-cache) args=("${slow_cache[@]}") ;;
    hashmap) args=(--backend hashmap) ;;
    *) echo "bench-nexmark: unknown subject $subject" >&2; exit 1 ;;
    esac
    # shellcheck disable=SC2046 # heap_args prints two JVM options
    out=$("$java" $(heap_args "$subject") -Dslowfs.open-delay-us="$slow_open" \
        -Dslowfs.read-delay-us="$slow_read" -cp "$cp" org.forstrs.flink.bench.NexmarkJob \
        --query "$query" "${args[@]}" \
        --local-dir "$work/local" --events "$events" --parallelism "$parallelism" \
        --managed-memory "$managed" 2>&1) || {
        echo "$out" | tail -50 >&2
        echo "bench-nexmark: $query on $subject failed" >&2
        exit 1
    }
    local rate cpu rss
    rate=$(value 'events/s' "$out")
    cpu=$(value 'cpu seconds' "$out")
    rss=$(value 'peak rss MiB' "$out")
    [[ -n $rate ]] || { echo "$out" | tail -50 >&2; echo "bench-nexmark: no events/s" >&2; exit 1; }
    printf '%-4s %-17s %9s events/s  cpu %7s s  rss %5s MiB\n' "$query" "$subject" "$rate" "$cpu" \
        "$rss" >&2
    echo "$subject $query $rate $cpu $rss" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    mapfile -t order < <(round_order "$round" "${subjects[@]}")
    echo "==> round $round of $rounds" >&2
    for query in "${queries[@]}"; do
        for subject in "${order[@]}"; do
            run "$query" "$subject"
        done
    done
done

# geomean_rounds <subject> <baseline subject>: per round, the geometric mean over the stateful
# queries of the subject's events/s over the baseline's
geomean_rounds() {
    local q ours theirs
    for ((round = 1; round <= rounds; round++)); do
        for q in "${queries[@]}"; do
            [[ $q == q0 ]] && continue
            ours=$(rounds 3 "$1" "$q" | sed -n "${round}p")
            theirs=$(rounds 3 "$2" "$q" | sed -n "${round}p")
            echo "$ours $theirs"
        done | awk '{s += log($1 / $2); n++} END {printf "%.4f ", exp(s / n)}'
    done
}

has() { [[ " ${subjects[*]} " == *" $1 "* ]]; }
echo
echo "Nexmark, $events events, parallelism $parallelism, managed memory $managed; slowfs" \
    "$slow_open us per open, $slow_read us per read; disk cache $cache_size; medians of $rounds rounds"
echo
header="| query |" rule="|---|"
for subject in "${subjects[@]}"; do
    header+=" $subject events/s |"
    rule+="---:|"
    [[ $subject == rocksdb ]] || { header+=" / RocksDB |"; rule+="---:|"; }
done
echo "$header"
echo "$rule"
for query in "${queries[@]}"; do
    line="| $query |"
    base=$(median 3 rocksdb "$query")
    for subject in "${subjects[@]}"; do
        rate=$(median 3 "$subject" "$query")
        line+=" $rate |"
        [[ $subject == rocksdb ]] ||
            line+=" $(ratio "$rate" "$base") |"
    done
    echo "$line"
done
echo

bench_param events="$events" managed="$managed" parallelism="$parallelism" cache_size="$cache_size" \
    slow_open_us="$slow_open" slow_read_us="$slow_read" rounds="$rounds" subjects="${subjects[*]}" \
    queries="${queries[*]}" heap="$heap" hashmap_heap="$hashmap_heap"
for query in "${queries[@]}"; do
    for subject in "${subjects[@]}"; do
        [[ $subject == rocksdb ]] && continue
        measure_rounds "$query $subject: events/s" events/s higher 3 "Flink's RocksDB, local disk" \
            "$subject" "$query" -- rocksdb "$query" -- --label query="$query"
        [[ $subject == ours-* ]] || continue
        measure_rounds "$query $subject: CPU seconds" s lower 4 "Flink's RocksDB, local disk" \
            "$subject" "$query" -- rocksdb "$query" -- --label query="$query"
        measure_rounds "$query $subject: peak RSS" MiB lower 5 "Flink's RocksDB, local disk" \
            "$subject" "$query" -- rocksdb "$query" -- --label query="$query"
    done
done
for pair in ours-local:rocksdb ours-sync:rocksdb ours-slow-cache:rocksdb forst-local:rocksdb \
    forst-slow-cache:rocksdb hashmap:rocksdb ours-local:forst-local ours-sync:forst-local \
    ours-slow-cache:forst-slow-cache ours-local:ours-no-write-behind \
    ours-local:ours-batched; do
    IFS=: read -r subject baseline <<<"$pair"
    has "$subject" && has "$baseline" || continue
    ratios=$(geomean_rounds "$subject" "$baseline")
    echo "geometric mean over the stateful queries, $subject / $baseline: $ratios" >&2
    # shellcheck disable=SC2086 # one argument per round
    bench_measure --name "geometric mean, stateful queries: $subject events/s" --subject "$subject" \
        --unit ratio --better higher --baseline "$baseline" --ratio-rounds $ratios \
        --label query=geomean
done
bench_write "${RESULTS_NAME:-nexmark}"
