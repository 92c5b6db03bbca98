#!/usr/bin/env bash
# Everything CI checks, in order. One cargo profile (release) for clippy and tests so that both
# share one build.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "==> $*" >&2; }

# -Xcheck:jni (on in every JVM the tests start) reports JNI misuse as warnings on stdout, which
# would not fail a test by themselves: the logs that caught a JVM's stdout are searched for them.
fail_on_jni_warnings() {
    if grep -n "WARNING in native method\|WARNING: JNI" "$@" 2>/dev/null; then
        echo "JNI warnings under -Xcheck:jni (above)" >&2
        exit 1
    fi
}

step install-deps
scripts/install-deps.sh

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/java-17-openjdk-amd64 ]]; then
    export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi

step render-charts --check
python3 scripts/render-charts.py --check

step cargo fmt
cargo fmt --all -- --check

step cargo clippy
cargo clippy --all-targets --release -- -D warnings

step cargo test
cargo_log=$(mktemp)
cargo test --release 2>&1 | tee "$cargo_log"
fail_on_jni_warnings "$cargo_log"
rm -f "$cargo_log"

# Every decoder of outside bytes, briefly (docs/FUZZING.md; `scripts/fuzz.sh 600` hunts longer).
step fuzz
scripts/fuzz.sh 15

# ---- Java (JNI bindings, Flink integration) ----
# Builds libforst.so from this crate (same CARGO_TARGET_DIR), packages target/forstjni-<version>.jar
# and runs the Java tests (surefire) and the tests of the packaged jar (failsafe, *ITCase).
# Dependencies are cached in ~/.m2 across runs.
step mvn verify
rm -f java/target/{surefire,failsafe}-reports{,-failpoints}/*.dumpstream
mvn -B -ntp -f java/pom.xml verify
# a forked test JVM's native stdout lands in surefire's and failsafe's .dumpstream files
fail_on_jni_warnings java/target/{surefire,failsafe}-reports{,-failpoints}/*.dumpstream

# ---- Soak (docs/soak.md): the short variant on a real cluster of separate JVMs against moto ----
# Needs the jar mvn verify just packaged; at most 5 minutes.
step soak --short
SOAK_SKIP_BUILD=1 scripts/soak.sh --short
