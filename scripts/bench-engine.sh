#!/usr/bin/env bash
# Engine-level benchmarks (no JVM): FLIP-423's two-stage word count (rows 1 to 5 of the
# benchmark protocol, row 4 with the local disk cache) and the criterion micro benchmarks vs rust-rocksdb, with their ratios.
# Word count sizes: WC_KEYS, WC_RECORDS, WC_LATENCY_US, WC_ROUNDS.
# Results: bench-results/engine-wordcount/ and bench-results/engine-ops/.
source "$(dirname "$0")/lib/env.sh"
cargo bench --bench wordcount
bench_write engine-wordcount
cargo bench --bench engine_ops -- --noplot
bench_param keys=200000 "value bytes"=100
python3 scripts/bench-ratios.py
bench_write engine-ops
