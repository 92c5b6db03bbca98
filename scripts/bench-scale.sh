#!/usr/bin/env bash
# The engine at scale vs rust-rocksdb on the same data in a local directory (benches/scale.rs):
# load/s, get/s, multi_get/s, space and write amplification, peak RSS (one child process per row)
# against the memory budget, at 1M and 4M keys by default.
# Env: SCALE_KEYS (e.g. "1000000 4000000 16000000"), SCALE_READS, SCALE_DIR (where the databases
# go; default the temp directory), SCALE_ROW_TIMEOUT_S (a row running longer is killed).
# Results: bench-results/scale/ (bench-results/scale-turns/ for SCALE_TURNS=1 SCALE_ENGINES="").
source "$(dirname "$0")/lib/env.sh"
cargo bench --bench scale
# a run of turns alone (SCALE_ENGINES="") is a benchmark of its own: it has no scale rows
if [[ -n ${SCALE_ENGINES-x} ]]; then bench_write scale; else bench_write scale-turns; fi
