#!/usr/bin/env bash
# Profiles one Flink-level benchmark run (CompareForStJob: the async word count or the window job;
# NexmarkJob for JOB=nexmark-<query>, RECORDS events) with async-profiler 2.9 (from Flink's test
# class path, as a JVM agent; CPU time by interval timer, so it needs no perf events): where the
# process's CPU goes, per thread group (task threads, our executor threads, the engine's background
# threads, JIT, GC) and per frame (self and total), Java and native frames together. EVENT=alloc
# profiles the Java heap's allocations instead: bytes per record, by whose code, class and site.
# The collapsed stacks stay in PROFILE_OUT for a flame graph.
#   scripts/profile-flink.sh [subject]    subject: ours-local (default), rocksdb, hashmap
# Extra job arguments (e.g. --state.backend.forst.executor.inline-coordinator false): after the
# subject. Sizes: KEYS (1000000), RECORDS (3000000), PARALLELISM (2), MANAGED_MEMORY (32m), JOB
# (wordcount), INTERVAL_US (1000), TOP (40), CSTACK (dwarf: native frames unwound from .eh_frame;
# the library has no frame pointers), HEAP (lib/bench-jvm.sh heap_args); PROFILE_OUT
# (bench-results/profiles/<subject>-<job>[-alloc].collapsed).
source "$(dirname "$0")/lib/bench-jvm.sh" profile
subject=${1:-ours-local}
EXTRA_ARGS=("${@:2}")
suffix=
[[ ${EVENT:-cpu} == alloc ]] && suffix=-alloc
out=${PROFILE_OUT:-bench-results/profiles/$subject-${JOB:-wordcount}$suffix.collapsed}
mkdir -p "$(dirname "$out")"
out=$(realpath -m "$out")

profiler_jar=$(tr ':' '\n' <<<"$classpath" | grep 'async-profiler-2.9.jar$' | head -1)
[[ -n $profiler_jar ]] || { echo "profile-flink: async-profiler 2.9 is not on the test class path" >&2; exit 1; }
unzip -q -o "$profiler_jar" linux-x64/libasyncProfiler.so -d "$work"

cp="java/target/test-classes:$classpath"
args=()
jvm_args=()
case $subject in
ours-local)
    cp="$jar:$cp"
    # The library the jar was built from, kept on disk (the jar's copy is deleted once loaded):
    # the profiler reads its symbols from the file.
    jvm_args=(-Dforstrs.native.library="${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}/release/libforst.so")
    args=(--dir "file://$work/state" --state.backend.forst.cache.size-based-limit 0
        --state.backend.forst.cache.reserve-size 0)
    ;;
rocksdb | hashmap) args=(--backend "$subject") ;;
*) echo "profile-flink: subject is ours-local, rocksdb or hashmap, not $subject" >&2; exit 1 ;;
esac
mkdir -p "$work/state"
agent="$work/linux-x64/libasyncProfiler.so=start,threads,collapsed,file=$out"
if [[ ${EVENT:-cpu} == alloc ]]; then
    agent+=",event=alloc,total"
else
    agent+=",event=itimer,interval=${INTERVAL_US:-1000}us,cstack=${CSTACK:-dwarf}"
fi
records=${RECORDS:-3000000}
job=${JOB:-wordcount}
if [[ $job == nexmark-* ]]; then
    main=(org.forstrs.flink.bench.NexmarkJob --query "${job#nexmark-}" --events "$records")
else
    main=(org.forstrs.flink.bench.CompareForStJob --job "$job" --keys "${KEYS:-1000000}"
        --records "$records")
fi
# shellcheck disable=SC2046 # heap_args prints two JVM options
run=$("$java" -agentpath:"$agent" $(heap_args "$subject") "${jvm_args[@]}" -cp "$cp" "${main[@]}" "${args[@]}" \
    --local-dir "$work/local" --parallelism "${PARALLELISM:-2}" \
    --managed-memory "${MANAGED_MEMORY:-32m}" "${EXTRA_ARGS[@]}" |
    grep -E '^(records/s|events/s|cpu seconds|peak rss)')
echo "$run"
cpu=$(awk '/^cpu seconds:/ {print $NF}' <<<"$run")
if [[ ${EVENT:-cpu} == alloc ]]; then
    python3 scripts/lib/profile_summary.py --alloc "$out" "${TOP:-40}" "$records"
else
    python3 scripts/lib/profile_summary.py "$out" "${TOP:-40}" "$cpu" "$records"
fi
echo "collapsed stacks: $out"
