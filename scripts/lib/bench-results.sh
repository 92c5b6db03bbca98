# Sourced by env.sh: the scratch file a run's parameters and measurements gather in (the Rust
# benches find it through BENCH_MEASUREMENTS), and the shell's way to scripts/lib/bench_results.py,
# which writes them to bench-results/<benchmark>/ with the date, commit and machine.
# Scratch files and directories of the run go in bench_scratch: removed on exit.
BENCH_MEASUREMENTS=$(mktemp "${TMPDIR:-/tmp}/forst-rs-bench-measurements.XXXXXX")
export BENCH_MEASUREMENTS
bench_scratch=("$BENCH_MEASUREMENTS")
trap 'rm -rf "${bench_scratch[@]}"' EXIT
bench_command="scripts/$(basename "$0")"

# bench_param KEY=VALUE...: the run's parameters
bench_param() {
    python3 scripts/lib/bench_results.py param "$BENCH_MEASUREMENTS" "$@"
}

# bench_measure --name N --unit U --better higher|lower [...]: one measurement (see bench_results.py)
bench_measure() {
    python3 scripts/lib/bench_results.py measure "$BENCH_MEASUREMENTS" "$@"
}

# bench_write <benchmark>: writes what was gathered to bench-results/<benchmark>/ and starts over
# (BENCH_NOTES, when set, goes into the file's "notes")
bench_write() {
    python3 scripts/lib/bench_results.py write "$1" "$BENCH_MEASUREMENTS" --command "$bench_command"
    : >"$BENCH_MEASUREMENTS"
}
