#!/usr/bin/env bash
# The main job. Until the Flink state backend lands (JNI + Java shim), this is FLIP-423's two-stage
# word count at engine level: state filled, then read-and-update records, on a local directory
# behind 1.5 ms per request ("DFS"), compared with RocksDB on local disk in the same run.
# Sizes: WC_KEYS (words in state), WC_RECORDS (stage-2 records), WC_LATENCY_US.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
export WC_KEYS=${WC_KEYS:-200000} WC_RECORDS=${WC_RECORDS:-100000}
exec cargo bench --bench wordcount
