#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/, docs/FUZZING.md) with nightly and runs each for a bounded time,
# one after the other; fails if any crashes, hangs past -timeout or runs out of memory.
#   scripts/fuzz.sh [seconds-per-target] [target...]     (default: 30 s, every target)
# Each target starts from its kept regressions (fuzz/regressions/<target>) and from inputs made
# from real encodings by tests/fuzz_regressions.rs; new inputs land in fuzz/corpus/<target>
# (not committed), crashers in fuzz/artifacts/<target>.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
if (($# > 0)); then
    targets=("$@")
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

step() { echo "==> $*" >&2; }

export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
# Nightly builds apart from the stable target dir, which it would otherwise rebuild over.
fuzz_target_dir=${FUZZ_TARGET_DIR:-$HOME/.cache/forst-rs/fuzz-target}

if ! rustup toolchain list | grep -q '^nightly'; then
    step "install nightly toolchain"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    step "install cargo-fuzz (cached in ~/.cargo/bin)"
    cargo install cargo-fuzz --locked
fi

step "fuzz seeds from real encodings"
FORST_FUZZ_SEEDS="$PWD/fuzz/corpus" cargo test --release -q --test fuzz_regressions \
    inputs_made_from_real_encodings_decode

# Debug assertions and overflow checks on: an overflow in a decoder is a finding too.
fuzz_flags=(--debug-assertions --target-dir "$fuzz_target_dir")
step "cargo fuzz build"
started=$SECONDS
(cd fuzz && cargo +nightly fuzz build "${fuzz_flags[@]}")
echo "nightly fuzz build took $((SECONDS - started)) s" >&2

# The binaries run directly: `cargo fuzz run` would check (and in a git worktree, where build.rs's
# .git/HEAD is missing, rebuild) the crate before every target.
bin_dir="$fuzz_target_dir/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"
failed=()
for target in "${targets[@]}"; do
    step "fuzz $target for ${seconds}s"
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    log="fuzz/artifacts/$target/last-run.log"
    if "$bin_dir/$target" "fuzz/corpus/$target" "fuzz/regressions/$target" \
        -artifact_prefix="fuzz/artifacts/$target/" -max_total_time="$seconds" \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        grep -E "^stat::number_of_executed_units" "$log" >&2 || true
    else
        tail -n 60 "$log" >&2
        failed+=("$target")
    fi
done

if ((${#failed[@]} > 0)); then
    echo "fuzz targets failed: ${failed[*]} (inputs in fuzz/artifacts/<target>/; minimize with" \
        "'cd fuzz && cargo +nightly fuzz tmin <target> <input>', keep in fuzz/regressions/<target>/)" >&2
    exit 1
fi
echo "fuzzing passed: ${targets[*]} (${seconds}s each)" >&2
