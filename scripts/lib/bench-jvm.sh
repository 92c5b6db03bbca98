# Sourced by the Flink-level benchmark scripts (bench-flink-forst, bench-sync, bench-timers):
# installs what they need, builds our jar and the bench jobs once, and offers the helpers every
# script shares. After sourcing: $java, $classpath (test class path), $jar (forstjni), $work (a
# temporary directory removed on exit) and $results (a file of result rows, one per run).
#   source scripts/lib/bench-jvm.sh <name>
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

echo "==> building the jar, the job classes and the class path" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt
classpath=$(cat java/target/bench-classpath.txt)
jar=$(ls java/target/forstjni-*.jar | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-$1.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.txt

# median <column> <key>...: the median of a results column over the rows whose first fields are
# the keys
median() {
    local column=$1 values n
    shift
    values=$(awk -v c="$column" -v k="$*" '{
        n = split(k, keys, " ")
        for (i = 1; i <= n; i++) if ($i != keys[i]) next
        print $c
    }' "$results" | sort -g)
    n=$(wc -l <<<"$values")
    sed -n "$(((n + 1) / 2))p" <<<"$values"
}
