# Sourced by the scripts (benchmarks, the main job, the soak): installs what they need, sets the
# cargo target directory (the cache outside the clone) and JAVA_HOME, and for a benchmark
# (scripts/bench-*) sets up the run's result file (bench-results.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
scripts/install-deps.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/java-17-openjdk-amd64 ]]; then
    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi
if [[ $(basename "$0") == bench-* ]]; then
    source scripts/lib/bench-results.sh
fi
