#!/usr/bin/env bash
# Soak of ForSt-RS on a real cluster of separate processes (docs/soak.md): a standalone Flink 2.3
# cluster (a JobManager and two TaskManagers, each its own JVM started with Flink's entry points,
# Flink's jars from Maven as lib/, our jar first on the class path as if in lib/, the S3 file
# system plugin in plugins/), the S3 test server (moto) on 127.0.0.1 holding the primary
# directory, checkpoints and savepoints (Flink's s3.* keys), and a job with async state (SQL
# GROUP BY, regular join, event-time window) and sync state with timers. For SOAK_DURATION
# seconds: a TaskManager SIGKILLed and restarted every minute or so, a rescale by
# stop-with-savepoint every few minutes, one outage of the S3 server. Then it checks the results
# against an independent computation, lists the bucket against what the retained savepoint
# references, samples TaskManager RSS and counts ERROR lines of org.forstrs.* classes
# (scripts/soak/soak.py does all that).
#
#   scripts/soak.sh            SOAK_DURATION seconds (default 3600)
#   scripts/soak.sh --short    the CI variant: 120 s, 2 kills, 1 rescale, 1 outage (<= 5 minutes)
#
# Environment: SOAK_DURATION, SOAK_RATE (records/s, default 200), SOAK_RESULTS (results dir,
# default target/soak), SOAK_SKIP_BUILD=1 (use java/target/forstjni-*.jar as it is),
# SOAK_STRICT_BUCKET=1 (fail on objects no retained savepoint references), SOAK_SEED.
# Exit status: 0 when the results are exact, no referenced object is missing and no unexpected
# ERROR line appeared.
set -euo pipefail
source "$(dirname "$0")/lib/env.sh"

duration=${SOAK_DURATION:-3600}
driver_args=()
if [[ ${1:-} == --short ]]; then
    duration=120
    driver_args=(--kill-every 45 --rescale-every 70 --outage 20 --outage-at 0.15)
elif [[ -n ${1:-} ]]; then
    echo "usage: scripts/soak.sh [--short]" >&2
    exit 2
fi
results=$(realpath -m "${SOAK_RESULTS:-target/soak}")
job_module=scripts/soak/job
mvn_q=(mvn -B -ntp -q -Dstyle.color=never)

echo "==> soak: building our jar and the job, gathering Flink's jars" >&2
if [[ ${SOAK_SKIP_BUILD:-} != 1 ]]; then
    "${mvn_q[@]}" -f java/pom.xml package -DskipTests
fi
forst_jar=$(ls java/target/forstjni-*.jar | head -1)
"${mvn_q[@]}" -f $job_module/pom.xml package
rm -rf $job_module/target/lib $job_module/target/plugins
"${mvn_q[@]}" -f $job_module/pom.xml dependency:copy-dependencies -DincludeScope=provided \
    -DoutputDirectory=target/lib
# a plugin gets a directory of its own under plugins/, as in a distribution
"${mvn_q[@]}" -f $job_module/pom.xml dependency:copy \
    -Dartifact=org.apache.flink:flink-s3-fs-native:2.3.0 -DoutputDirectory=target/plugins/s3-fs-native

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-soak.XXXXXX")
driver=
cleanup() {
    # the driver's JVMs and moto die with it (PR_SET_PDEATHSIG)
    [[ -n $driver ]] && kill "$driver" 2>/dev/null && wait "$driver" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

rm -rf "$results"
mkdir -p "$results"
echo "==> soak: $duration s, results in $results" >&2
# bounded whatever happens: the soak, the final drain and the checks get 15 minutes more
timeout --signal=TERM --kill-after=30 $((duration + 900)) \
    python3 scripts/soak/soak.py --repo "$PWD" --lib "$PWD/$job_module/target/lib" \
    --plugins "$PWD/$job_module/target/plugins" --forst-jar "$PWD/$forst_jar" \
    --job-jar "$PWD/$job_module/target/forst-soak-job.jar" --work "$work" --results "$results" \
    --duration "$duration" --rate "${SOAK_RATE:-200}" ${SOAK_SEED:+--seed "$SOAK_SEED"} \
    "${driver_args[@]}" &
driver=$!
status=0
wait "$driver" || status=$?
driver=
exit $status
