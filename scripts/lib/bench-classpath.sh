# Sourced by the cargo benches that start a JVM (bench-checkpoint, bench-fs-proxy): compiles the
# Java classes and exports FORST_BENCH_CLASSPATH (the bridge classes, the test classes, Flink and
# Hadoop with their test dependencies), which those benches read.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
mvn -B -ntp -q -f java/pom.xml test-compile
mvn -B -ntp -q -f java/pom.xml dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$PWD/java/target/bench-classpath.txt"
export FORST_BENCH_CLASSPATH="$PWD/java/target/classes:$PWD/java/target/test-classes:$(cat java/target/bench-classpath.txt)"
