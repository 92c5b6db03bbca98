#!/usr/bin/env bash
# Range-delete benchmark (benches/range_deletes.rs): gets/s and map scans/s on a 200k-key database
# with 0 / 1,000 / 10,000 / 50,000 live range deletes, and the files and tombstones left after
# background-style and full compactions.
#
#   scripts/bench-range-deletes.sh         # the working tree
#   scripts/bench-range-deletes.sh <rev>   # <rev>'s engine first (e.g. 0ca89ac), then the working tree
#
# A revision is built from `git archive` in a temporary directory with the working tree's bench
# file; an engine that does not count tombstones (`DbStats::range_tombstones`) prints "n/a" for
# them. Env: RD_COUNTS, RD_SECONDS, RD_COMPACT (see the bench).
# The working tree's run goes to bench-results/range-deletes/ (a revision's run is printed only).
source "$(dirname "$0")/lib/env.sh"
if (($#)); then
    sha=$(git rev-parse --verify "$1^{commit}")
    src=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-range-deletes.XXXXXX")
    bench_scratch+=("$src")
    git archive --format=tar "$sha" | tar -x -C "$src"
    mkdir -p "$src/benches/support"
    cp benches/range_deletes.rs "$src/benches/"
    cp benches/support/results.rs "$src/benches/support/"
    grep -q 'name = "range_deletes"' "$src/Cargo.toml" ||
        printf '\n[[bench]]\nname = "range_deletes"\nharness = false\n' >>"$src/Cargo.toml"
    grep -q 'range_tombstones' "$src/rust/lsm/db.rs" ||
        sed -i 's/stats\.range_tombstones/"n\/a"/' "$src/benches/range_deletes.rs"
    echo "==> $1 (${sha:0:10})"
    # own cargo target dir: another revision's libforst.so must not replace the shared one
    (cd "$src" && CARGO_TARGET_DIR=$HOME/.cache/forst-rs/target-bench-range-deletes \
        env -u BENCH_MEASUREMENTS cargo bench --bench range_deletes)
fi
echo "==> working tree"
cargo bench --bench range_deletes
bench_write range-deletes
