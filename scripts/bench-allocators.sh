#!/usr/bin/env bash
# The native library's global allocator: glibc's malloc (what the jar ships) against mimalloc and
# jemalloc (cargo features `mimalloc`, `jemalloc`), on the Flink word count with async ValueState
# (CompareForStJob) on a local directory, the same managed memory and a TaskManager's fixed heap
# (lib/bench-jvm.sh heap_args). Each allocator's library is built into its own target directory
# (CARGO_TARGET_DIR-alloc-<allocator>) and loaded through -Dforstrs.native.library; each run is its
# own JVM; rounds are interleaved (the order reversed every other round). Prints each run, then the
# medians of records/s, CPU seconds and peak RSS and their ratios to glibc.
# SUBJECTS (glibc mimalloc mimalloc-purge0 jemalloc; mimalloc-purge0 is mimalloc returning freed
# memory at once, MIMALLOC_PURGE_DELAY=0), KEYS (1000000), RECORDS (3000000), MANAGED (32m),
# PARALLELISM (2), ROUNDS (3), HEAP (512m).
# Results: bench-results/allocators/ (each allocator against glibc).
source "$(dirname "$0")/lib/bench-jvm.sh" allocators
rounds=${ROUNDS:-3}
keys=${KEYS:-1000000}
records=${RECORDS:-3000000}
managed=${MANAGED:-32m}
parallelism=${PARALLELISM:-2}
read -r -a subjects <<<"${SUBJECTS:-glibc mimalloc mimalloc-purge0 jemalloc}"
target=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}

# library <allocator>: builds the library with that allocator (glibc: none) and prints its path
library() {
    local allocator=$1 dir=$target
    if [[ $allocator != glibc ]]; then
        dir=$target-alloc-$allocator
        CARGO_TARGET_DIR=$dir cargo build -q --release --lib --features "$allocator" >&2
    else
        cargo build -q --release --lib >&2
    fi
    cp "$dir/release/libforst.so" "$work/libforst-$allocator.so"
    echo "$work/libforst-$allocator.so"
}

declare -A libraries
for subject in "${subjects[@]}"; do
    allocator=${subject%-purge0}
    [[ -n ${libraries[$allocator]:-} ]] || libraries[$allocator]=$(library "$allocator")
done

# run <subject>: appends "<subject> <records/s> <cpu s> <rss MiB>" to the results
run() {
    local subject=$1 env=() out
    [[ $subject == *-purge0 ]] && env=(MIMALLOC_PURGE_DELAY=0)
    rm -rf "$work/state" "$work/local"
    mkdir -p "$work/state"
    # shellcheck disable=SC2046 # heap_args prints two JVM options
    out=$(env "${env[@]}" "$java" $(heap_args "$subject") \
        -Dforstrs.native.library="${libraries[${subject%-purge0}]}" \
        -cp "$jar:java/target/test-classes:$classpath" \
        org.forstrs.flink.bench.CompareForStJob --job wordcount --dir "file://$work/state" \
        --state.backend.forst.cache.size-based-limit 0 --state.backend.forst.cache.reserve-size 0 \
        --local-dir "$work/local" --keys "$keys" --records "$records" \
        --parallelism "$parallelism" --managed-memory "$managed" 2>&1) || {
        echo "$out" | tail -50 >&2
        echo "bench-allocators: $subject failed" >&2
        exit 1
    }
    local rate cpu rss
    rate=$(value 'records/s' "$out")
    cpu=$(value 'cpu seconds' "$out")
    rss=$(value 'peak rss MiB' "$out")
    [[ -n $rate ]] || { echo "$out" | tail -50 >&2; echo "bench-allocators: no records/s" >&2; exit 1; }
    printf '%-16s %9s rec/s  cpu %6s s  rss %5s MiB\n' "$subject" "$rate" "$cpu" "$rss" >&2
    echo "$subject $rate $cpu $rss" >>"$results"
}

for ((round = 1; round <= rounds; round++)); do
    echo "==> round $round of $rounds" >&2
    while read -r subject; do
        run "$subject"
    done < <(round_order "$round" "${subjects[@]}")
done

echo
echo "word count at $keys keys, $managed managed, parallelism $parallelism; medians of $rounds rounds"
echo
echo "| allocator | records/s | / glibc | CPU s | / glibc | peak RSS MiB | / glibc |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for subject in "${subjects[@]}"; do
    rate=$(median 2 "$subject") cpu=$(median 3 "$subject") rss=$(median 4 "$subject")
    echo "| $subject | $rate | $(ratio "$rate" "$(median 2 glibc)") | $cpu |" \
        "$(ratio "$cpu" "$(median 3 glibc)") | $rss | $(ratio "$rss" "$(median 4 glibc)") |"
done

bench_param keys="$keys" records="$records" managed="$managed" parallelism="$parallelism" \
    rounds="$rounds" subjects="${subjects[*]}" heap="$heap"
for subject in "${subjects[@]}"; do
    [[ $subject == glibc ]] && continue
    for measure in "records/s:records/s:higher:2" "CPU seconds:s:lower:3" "peak RSS:MiB:lower:4"; do
        IFS=: read -r name unit better column <<<"$measure"
        measure_rounds "$subject: $name" "$unit" "$better" "$column" "glibc's malloc" \
            "$subject" -- glibc
    done
done
bench_write allocators
