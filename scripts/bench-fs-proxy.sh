#!/usr/bin/env bash
# Positional-read throughput through the Flink file-system proxy (JNI) vs native storage
# (LocalStorage, object_store's LocalFileSystem) and vs a plain Java loop over Flink's file
# system, on the same local file: 4 KiB and 64 KiB reads, 1 and 8 threads, with ratios.
# Env: FSB_FILE_MIB (file size, default 256), FSB_MILLIS (per cell, default 2000).
# Results: bench-results/fs-proxy/.
source "$(dirname "$0")/lib/bench-classpath.sh"

cargo bench --bench fs_proxy
bench_write fs-proxy
