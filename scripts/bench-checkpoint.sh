#!/usr/bin/env bash
# Checkpoint, restore and 2 -> 3 rescale cost at two state sizes 10x apart (engine level):
# synchronous phase, asynchronous phase (flush + hand-over), bytes written by checkpoints,
# restore and rescale times (restore by reference), each with the ratio large/small, on a local
# directory, on a latency-injected "DFS", and on HDFS (a MiniDFSCluster in the bench's JVM)
# through the Flink file-system proxy.
# Sizes: CP_KEYS (small; large = CP_SCALE x CP_KEYS), CP_ROUNDS, CP_LATENCY_US.
# Results: bench-results/checkpoint/.
source "$(dirname "$0")/lib/bench-classpath.sh"

cargo bench --bench checkpoint
bench_write checkpoint
