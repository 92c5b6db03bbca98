#!/usr/bin/env bash
# The state each stateful Nexmark query holds at its end on ForSt-RS (local directory): one run per
# query (NexmarkJob --state-size true: the engine's live SST bytes, compressed, and memtable bytes
# summed over every stateful operator's subtasks, read from its metrics at close). Prints a
# Markdown table for docs/benchmarks.md. EVENTS (1000000), MANAGED (32m), PARALLELISM (2), QUERIES
# (the 14 stateful ones) as in scripts/bench-nexmark.sh.
source "$(dirname "$0")/lib/bench-jvm.sh" nexmark-state
events=${EVENTS:-1000000}
managed=${MANAGED:-32m}
parallelism=${PARALLELISM:-2}
read -r -a queries <<<"${QUERIES:-q3 q4 q5 q7 q8 q9 q11 q12 q15 q16 q17 q18 q19 q20}"

echo "| query | state at the end, MiB (ForSt-RS, $events events) |"
echo "|---|---:|"
for query in "${queries[@]}"; do
    rm -rf "$work/state" "$work/local"
    mkdir -p "$work/state"
    out=$("$java" -cp "$jar:java/target/test-classes:$classpath" org.forstrs.flink.bench.NexmarkJob \
        --query "$query" --dir "file://$work/state" --local-dir "$work/local" --events "$events" \
        --parallelism "$parallelism" --managed-memory "$managed" --state-size true 2>&1) || {
        echo "$out" | tail -50 >&2
        echo "nexmark-state: $query failed" >&2
        exit 1
    }
    echo "| $query | $(value 'state MiB at end' "$out") |"
done
