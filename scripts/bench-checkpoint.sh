#!/usr/bin/env bash
# Checkpoint, restore and 2 -> 3 rescale cost at two state sizes 10x apart (engine level, no JVM):
# synchronous phase, asynchronous phase, bytes streamed through the process, restore and rescale
# times, each with the ratio large/small, on a local directory and on a latency-injected "DFS".
# Sizes: CP_KEYS (small; large = CP_SCALE x CP_KEYS), CP_ROUNDS, CP_LATENCY_US.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
cargo bench --bench checkpoint
