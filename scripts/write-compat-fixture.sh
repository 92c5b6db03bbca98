#!/usr/bin/env bash
# Writes this version's compatibility fixtures: a native savepoint of the test job ToolStateJob at
# half its input, into java/src/test/resources/compat/<version>/, and a database the engine wrote,
# into tests/fixtures/compat/<version>/db (see docs/operations.md, "Which checkpoints a version
# reads"). Run once per release and commit both; a fixture is never rewritten, and
# CompatibilityITCase and tests/format_compat.rs (in the test command) read every one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/forst-rs/target}
version=$(sed -n 's:^    <version>\(.*\)</version>$:\1:p' java/pom.xml | head -1)
fixture=src/test/resources/compat/$version
if [[ -e java/$fixture ]]; then
    echo "java/$fixture exists: a fixture is never rewritten" >&2
    exit 1
fi
mvn -B -ntp -f java/pom.xml verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
    -Dit.test='CompatibilityITCase#write*' -Dforst.compat.fixture="$fixture"
FORST_WRITE_COMPAT_FIXTURE=1 cargo test --test format_compat -- --ignored write_this_versions_fixture
echo "wrote java/$fixture and tests/fixtures/compat/$version/db"
