#!/usr/bin/env bash
# Writes this version's compatibility fixture: a native savepoint of the test job ToolStateJob at
# half its input, into java/src/test/resources/compat/<version>/ (see docs/operations.md,
# "Which checkpoints a version reads"). Run once per release and commit the directory; a fixture
# is never rewritten, and CompatibilityITCase (in the test command) restores every one of them.
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
    -Dit.test='CompatibilityITCase#writeFixture' -Dforst.compat.fixture="$fixture"
echo "wrote java/$fixture"
