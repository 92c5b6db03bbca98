#!/usr/bin/env bash
# Run by Maven (exec-maven-plugin): builds libforst.so from the crate and copies it, without its
# debug info, to the platform folder of the jar's resources (generate-resources) or, with cargo
# features, to a test-only folder (the failpoints build the failpoint tests load).
#   build-native.sh <crate dir> <destination dir> [cargo features]
# CARGO_TARGET_DIR defaults to $HOME/.cache/forst-rs/target (shared with scripts/test.sh).
set -euo pipefail
crate_dir=$1
dest_dir=$2
features=${3:-}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if ! command -v cargo >/dev/null 2>&1 && [[ -x $HOME/.cargo/bin/cargo ]]; then
    export PATH=$HOME/.cargo/bin:$PATH
fi

echo "build-native: cargo build --release --lib ${features:+--features $features }in $crate_dir (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)" >&2
cargo build --release --lib ${features:+--features "$features"} --manifest-path "$crate_dir/Cargo.toml"

mkdir -p "$dest_dir"
lib=$CARGO_TARGET_DIR/release/libforst.so
if command -v objcopy >/dev/null 2>&1; then
    objcopy --strip-debug "$lib" "$dest_dir/libforst.so.tmp"
else
    cp "$lib" "$dest_dir/libforst.so.tmp"
fi
mv -f "$dest_dir/libforst.so.tmp" "$dest_dir/libforst.so"
echo "build-native: $(stat -c %s "$dest_dir/libforst.so") bytes -> $dest_dir/libforst.so" >&2
