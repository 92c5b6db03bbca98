#!/usr/bin/env bash
# Before/after throughput of the async state path as real Flink jobs on a local MiniCluster: the
# word count (WordCountJob: one read and one write per record, checkpoints off) and a SQL GROUP BY
# with COUNT, SUM and MAX on async state operators (GroupByJob). Runs ROUNDS interleaved rounds
# and prints each job's median records/s.
#
#   scripts/bench-order.sh                 # the working tree
#   scripts/bench-order.sh <rev> [<rev>..] # each revision's jar, e.g. `main~3 .` (. = working tree)
#
# With revisions, each one's jar (its Java shim and native library) is built from `git archive` of
# that revision in a temporary directory; the job classes and Flink come from the working tree, so
# a revision only needs to have the backend (WordCountJob also needs
# org.forstrs.flink.snapshot.CheckpointStatsLog, i.e. a revision since the Java package split).
# Revisions alternate within each round (and reverse order every other round), so they are
# measured under the same machine load.
# Sizes: ROUNDS (3), PARALLELISM (2), WC_RECORDS (2000000), WC_KEYS (100000), GB_RECORDS (1000000),
# GB_KEYS (10000). Results: bench-results/order/.
source "$(dirname "$0")/lib/env.sh"
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
rounds=${ROUNDS:-3}
parallelism=${PARALLELISM:-2}

echo "==> building the working tree (jar, job classes, class path)" >&2
mvn -B -q -ntp -f java/pom.xml -DskipTests package
mvn -B -q -ntp -f java/pom.xml dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt
classpath=$(cat java/target/bench-classpath.txt)
tree_jar=$(ls java/target/forstjni-*.jar | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/forst-rs-bench-order.XXXXXX")
bench_scratch+=("$work")

labels=()
jars=()
revisions=("$@")
((${#revisions[@]})) || revisions=(.)
for rev in "${revisions[@]}"; do
    jar=$work/jar-${#jars[@]}.jar
    if [[ $rev == . ]]; then
        cp "$tree_jar" "$jar"
        labels+=("working-tree")
    else
        sha=$(git rev-parse --verify "$rev^{commit}")
        src=$work/src
        mkdir -p "$src"
        git archive --format=tar "$sha" | tar -x -C "$src"
        echo "==> building the jar of $rev (${sha:0:10})" >&2
        # own cargo target dir: another revision's libforst.so must not replace the shared one
        CARGO_TARGET_DIR=$HOME/.cache/forst-rs/target-bench-order \
            mvn -B -q -ntp -f "$src/java/pom.xml" -Dmaven.test.skip=true package
        cp "$(ls "$src"/java/target/forstjni-*.jar | head -1)" "$jar"
        rm -rf "$src"
        labels+=("$rev@${sha:0:10}")
    fi
    jars+=("$jar")
done

# run <label> <jar> <main class> <args...>: appends "<job> <label> <records/s>" to the results
results=$work/results.txt
run() {
    local label=$1 jar=$2 main=$3
    shift 3
    local state=$work/state out
    out=$("$java" -cp "$jar:java/target/test-classes:$classpath" "$main" "$@" --dir "$state" 2>&1) || {
        echo "$out" >&2
        echo "bench-order: $main failed on $label" >&2
        exit 1
    }
    rm -rf "$state" "$state-checkpoints"
    local rate
    rate=$(awk '/^records\/s:/ {print $2}' <<<"$out")
    [[ -n $rate ]] || { echo "$out" >&2; echo "bench-order: no records/s from $main" >&2; exit 1; }
    printf '%-10s %-28s %s\n' "${main##*.}" "$label" "$rate" | tee -a "$results" >&2
}

for ((round = 1; round <= rounds; round++)); do
    order=$(seq 0 $((${#jars[@]} - 1)))
    ((round % 2)) || order=$(tac <<<"$order")
    echo "==> round $round of $rounds" >&2
    for i in $order; do
        run "${labels[i]}" "${jars[i]}" org.forstrs.flink.bench.WordCountJob \
            --records "${WC_RECORDS:-2000000}" --keys "${WC_KEYS:-100000}" \
            --parallelism "$parallelism" --checkpoint-interval-ms 0
        run "${labels[i]}" "${jars[i]}" org.forstrs.flink.bench.GroupByJob \
            --records "${GB_RECORDS:-1000000}" --keys "${GB_KEYS:-10000}" \
            --parallelism "$parallelism"
    done
done

echo
echo "median records/s over $rounds rounds (word count: ${WC_RECORDS:-2000000} records, ${WC_KEYS:-100000} keys;" \
    "GROUP BY: ${GB_RECORDS:-1000000} records, ${GB_KEYS:-10000} keys; parallelism $parallelism)"
printf '%-12s %-28s %12s   %s\n' job build median "all rounds"
for i in "${!labels[@]}"; do
    for job in WordCountJob GroupByJob; do
        values=$(awk -v j="$job" -v l="${labels[i]}" '$1 == j && $2 == l {print $3}' "$results" | sort -n)
        n=$(wc -l <<<"$values")
        median=$(sed -n "$(((n + 1) / 2))p" <<<"$values")
        printf '%-12s %-28s %12s   %s\n' "$job" "${labels[i]}" "$median" "$(tr '\n' ' ' <<<"$values")"
    done
done

# Result file: each build's rounds per job, against the first build named when there are several.
bench_param rounds="$rounds" parallelism="$parallelism" wc_records="${WC_RECORDS:-2000000}" \
    wc_keys="${WC_KEYS:-100000}" gb_records="${GB_RECORDS:-1000000}" gb_keys="${GB_KEYS:-10000}" \
    builds="${labels[*]}"
rates() {
    awk -v j="$1" -v l="$2" '$1 == j && $2 == l {printf "%s ", $3}' "$results"
}
for job in WordCountJob GroupByJob; do
    for i in "${!labels[@]}"; do
        baseline=()
        ((i == 0)) || baseline=(--baseline "${labels[0]}" --baseline-rounds $(rates "$job" "${labels[0]}"))
        # shellcheck disable=SC2046 # the rounds are numbers, one argument each
        bench_measure --name "$job" --subject "${labels[i]}" --unit records/s --better higher \
            --rounds $(rates "$job" "${labels[i]}") "${baseline[@]}" --label job="$job"
    done
done
bench_write order
