# Sourced by the Flink-level benchmark scripts (bench-flink-forst, bench-flink-backends, bench-sync,
# bench-timers, profile-flink):
# installs what they need, builds our jar and the bench jobs once, and offers the helpers every
# script shares. After sourcing: $java, $classpath (test class path), $jar (forstjni), $work (a
# temporary directory removed on exit) and $results (a file of result rows, one per run), with
# bench_param, bench_measure and bench_write (bench-results.sh) for the result file, and value,
# heap_args (with $heap and $hashmap_heap), rounds, median, ratio, round_order and measure_rounds
# below.
#   source scripts/lib/bench-jvm.sh <name>
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

echo "==> building the jar, the job classes and the class path" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt
classpath=$(cat java/target/bench-classpath.txt)
jar=$(ls java/target/forstjni-*.jar | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-$1.XXXXXX")
bench_scratch+=("$work")
# bench-results.sh (benchmarks) removes the scratch on exit; the other scripts here do it now
[[ -n ${BENCH_MEASUREMENTS:-} ]] || trap 'rm -rf "${bench_scratch[@]}"' EXIT
results=$work/results.txt

# heap_args <subject>: the run's JVM heap, fixed as a TaskManager's is. Flink starts a TaskManager
# with -Xms = -Xmx from its memory model (512 MiB for its default 1728m process); with the JVM's
# default instead (a quarter of the machine's memory) G1 grows the heap with the allocation rate,
# and peak RSS measures that growth rather than the backend. The heap backend keeps its state on
# the heap, so it gets a heap the state fits in. HEAP (512m), HASHMAP_HEAP (4g).
heap=${HEAP:-512m}
hashmap_heap=${HASHMAP_HEAP:-4g}
heap_args() {
    local size=$heap
    [[ $1 == hashmap ]] && size=$hashmap_heap
    echo "-Xms$size -Xmx$size"
}

# value <name> <output>: the value of "<name>: <value>" in a run's output
value() {
    awk -v k="$1:" 'index($0, k) == 1 {print $NF; exit}' <<<"$2"
}

# rounds <column> <key>...: a results column over the rows whose first fields are the keys, in the
# order of the runs (round i of every backend is the i-th value)
rounds() {
    local column=$1
    shift
    awk -v c="$column" -v k="$*" '{
        n = split(k, keys, " ")
        for (i = 1; i <= n; i++) if ($i != keys[i]) next
        print $c
    }' "$results"
}

# median <column> <key>...: the median of a results column over the rows whose first fields are
# the keys
median() {
    local values n
    values=$(rounds "$@" | sort -g)
    n=$(wc -l <<<"$values")
    sed -n "$(((n + 1) / 2))p" <<<"$values"
}

# ratio <ours> <baseline>: ours / baseline with two decimals ("-" without a baseline)
ratio() {
    awk -v o="$1" -v t="$2" 'BEGIN {if (t > 0) printf "%.2f", o / t; else print "-"}'
}

# round_order <round> <subject>...: the subjects, one per line, in reverse order in even rounds (so
# interleaved rounds do not always run a subject right after the same other one)
round_order() {
    local round=$1
    shift
    if ((round % 2 == 0)); then printf '%s\n' "$@" | tac; else printf '%s\n' "$@"; fi
}

# measure_rounds <name> <unit> <higher|lower> <column> <baseline name> <our keys> -- <baseline keys>
#   [-- <bench_measure options>]: records a column's rounds of our rows against the baseline's
#   (skipped when a run printed no value for it)
measure_rounds() {
    local name=$1 unit=$2 better=$3 column=$4 baseline=$5 ours=() theirs=() extra=()
    shift 5
    while (($#)) && [[ $1 != -- ]]; do ours+=("$1"); shift; done
    shift
    while (($#)) && [[ $1 != -- ]]; do theirs+=("$1"); shift; done
    (($#)) && shift && extra=("$@")
    local our_rounds their_rounds
    our_rounds=$(rounds "$column" "${ours[@]}" | tr '\n' ' ')
    their_rounds=$(rounds "$column" "${theirs[@]}" | tr '\n' ' ')
    [[ -n ${our_rounds// /} && -n ${their_rounds// /} ]] || return 0
    # shellcheck disable=SC2086 # the rounds are numbers, one argument each
    bench_measure --name "$name" --subject "${ours[0]}" --unit "$unit" --better "$better" \
        --rounds $our_rounds --baseline "$baseline" --baseline-rounds $their_rounds "${extra[@]}"
}
