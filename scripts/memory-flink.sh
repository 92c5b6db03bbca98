#!/usr/bin/env bash
# Where one Flink-level benchmark run's memory goes (CompareForStJob: the async word count or the
# window job): the process's resident memory split into the Java heap and everything else (the
# engine's native memory, the JVM's own, libraries) at its peak, sampled from /proc/<pid>/smaps,
# and what the heap holds after each young collection (G1's log): the live data and the garbage
# promoted to the old generation that the heap's resident part grows with.
#   scripts/memory-flink.sh [subject]    subject: ours-local (default), rocksdb, hashmap
# Extra job arguments after the subject. Sizes: KEYS (1000000), RECORDS (3000000), PARALLELISM
# (2), MANAGED_MEMORY (32m), JOB (wordcount), HEAP (lib/bench-jvm.sh heap_args).
source "$(dirname "$0")/lib/bench-jvm.sh" memory
subject=${1:-ours-local}
extra_args=("${@:2}")

cp="java/target/test-classes:$classpath"
case $subject in
ours-local)
    cp="$jar:$cp"
    args=(--dir "file://$work/state" --state.backend.forst.cache.size-based-limit 0
        --state.backend.forst.cache.reserve-size 0)
    ;;
rocksdb | hashmap) args=(--backend "$subject") ;;
*) echo "memory-flink: subject is ours-local, rocksdb or hashmap, not $subject" >&2; exit 1 ;;
esac
heap_option=$(heap_args "$subject")
heap_size=${heap_option##*-Xmx}
case ${heap_size: -1} in
g | G) heap_mib=$((${heap_size%?} * 1024)) ;;
m | M) heap_mib=${heap_size%?} ;;
*) echo "memory-flink: heap size $heap_size is not in m or g" >&2; exit 1 ;;
esac
mkdir -p "$work/state"
# shellcheck disable=SC2086 # heap_option holds two JVM options
"$java" $heap_option -Xlog:gc:file="$work/gc.log" -cp "$cp" \
    org.forstrs.flink.bench.CompareForStJob --job "${JOB:-wordcount}" --keys "${KEYS:-1000000}" \
    --records "${RECORDS:-3000000}" "${args[@]}" --local-dir "$work/local" \
    --parallelism "${PARALLELISM:-2}" --managed-memory "${MANAGED_MEMORY:-32m}" \
    "${extra_args[@]}" >"$work/run.txt" 2>&1 &
pid=$!
peak=
while kill -0 "$pid" 2>/dev/null; do
    sample=$(python3 scripts/lib/smaps_split.py "$pid" "$heap_mib" 2>/dev/null) || true
    if [[ -n $sample && ${sample%% *} -gt ${peak%% *} ]]; then peak=$sample; fi
    sleep 1
done
wait "$pid" || { tail -50 "$work/run.txt" >&2; echo "memory-flink: the job failed" >&2; exit 1; }
grep -E '^(records/s|cpu seconds|peak rss)' "$work/run.txt"
read -r total heap other <<<"$peak"
echo "resident at the sampled peak, MiB: $total (Java heap $heap, everything else $other)"
python3 - "$work/gc.log" <<'EOF'
import re, statistics, sys
after = []
cycles = 0
for line in open(sys.argv[1]):
    if "Concurrent Mark Cycle" in line and "ms" in line:
        cycles += 1
    m = re.search(r"Pause Young.* (\d+)M->(\d+)M\(\d+M\)", line)
    if m:
        after.append(int(m.group(2)))
# The second half of the run: past start-up, with state at its working size.
steady = after[len(after) // 2:] or [0]
print(f"young collections: {len(after)}, concurrent cycles: {cycles}")
print(f"heap after young collections (second half), MiB: median {statistics.median(steady):.0f}, "
      f"max {max(steady)}")
EOF
