"""Summarizes async-profiler's collapsed stacks (with `threads`): the share of samples per thread
group, the budget of one record (CPU-ns per step, from the run's CPU seconds and records), then
the frames with the most samples on top of the stack (self) and anywhere in it (total), each as a
percentage of all samples. With --alloc the stacks are of allocations counted in bytes (event
alloc, `total`): bytes allocated per record, by whose code allocated them, and the classes and
sites that allocate most.

    python3 profile_summary.py <file.collapsed> <top> [<cpu seconds> <records>]
    python3 profile_summary.py --alloc <file.collapsed> <top> <records>
"""

import re
import sys
from collections import Counter

# Thread names to groups: the first pattern that matches names the group.
GROUPS = [
    (r"^tid=\d+$", "engine background (ours: native threads the JVM does not name)"),
    (r"^main$", "main (job submission)"),
    (r"forst-rs-executor", "executor threads (ours)"),
    (r"forst-(flush|compact)", "engine background (ours)"),
    (r"forst", "other native threads (ours)"),
    (r"rocksdb|ForSt|forst", "RocksDB/ForSt background"),
    (r"C[12] CompilerThre|Compiler", "JIT compilers"),
    (r"GC Thread|G1 |VM Thread|GC", "GC and VM"),
    (r"Source", "source"),
    (r"async-state|AsyncKeyed|count|Map|Process|Window|Sink|->", "task threads"),
]


def group_of(thread):
    for pattern, group in GROUPS:
        if re.search(pattern, thread):
            return group
    return "other"


# The steps of one record, by the frames its samples pass through: the first that matches.
STEPS = [
    (lambda thread, stack: "ForStNative.executeBatch" in stack,
     "native batch: JNI, batch executor, engine reads and writes"),
    (lambda thread, stack: "Requests.complete" in stack,
     "completing request futures (Flink's callbacks, one mail each)"),
    (lambda thread, stack: "ForStStateExecutor.run" in stack,
     "our Java batch work: keys and values into the request buffer, results out"),
    (lambda thread, stack: "forst-rs-executor" in thread,
     "executor threads between batches (hand-offs)"),
    (lambda thread, stack: re.match(r"^tid=\d+$", thread),
     "engine background: flush, compaction"),
    (lambda thread, stack: group_of(thread) == "task threads",
     "task thread: Flink's controller, the operator, serialization"),
    (lambda thread, stack: group_of(thread) == "source", "source"),
    (lambda thread, stack: group_of(thread) == "JIT compilers", "JIT compilers (fixed per run)"),
    (lambda thread, stack: group_of(thread) == "GC and VM", "GC and VM"),
]


def step_of(thread, stack):
    for matches, step in STEPS:
        if matches(thread, stack):
            return step
    return "other: job submission, JobManager (fixed per run)"


def frame_name(frame):
    # async-profiler marks frame kinds with suffixes: _[j] Java, _[i] inlined, _[k] kernel.
    return re.sub(r"_\[[a-z0-9]\]$", "", frame)


# Whose code an allocation comes from: the innermost frame that names one of these packages.
OWNERS = [
    ("org/forstrs/flink/bench/", "the benchmark's job"),
    ("org/forstrs/", "ours (Java side of the backend)"),
    ("org/apache/flink/runtime/asyncprocessing/", "Flink's async state framework"),
    ("org/apache/flink/core/asyncprocessing/", "Flink's async state framework"),
    ("org/apache/flink/", "the rest of Flink"),
]


def owner_of(frames):
    for frame in reversed(frames):
        for prefix, owner in OWNERS:
            if frame.startswith(prefix):
                return owner
    return "other"


def site_of(frames):
    """The innermost frame outside the JDK: the code that asked for the allocation."""
    for frame in reversed(frames):
        if not frame.startswith(("java/", "jdk/", "sun/")):
            return frame
    return frames[0] if frames else "?"


def allocations(path, top, records):
    owners, classes, sites = Counter(), Counter(), Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            frames = [frame_name(fr) for fr in stack.split(";")[1:]]
            if not frames:
                continue
            total += n
            owners[owner_of(frames[:-1])] += n
            classes[frames[-1]] += n
            sites[(site_of(frames[:-1]), frames[-1])] += n
    if total == 0:
        print("no allocations")
        return
    print(f"allocated per record: {total / records:.0f} bytes ({total / 1e6:.0f} MB in all)")
    print("\nby whose code allocated:")
    for owner, n in owners.most_common():
        print(f"  {n / records:7.0f} B  {owner}")
    print(f"\ntop {top} classes:")
    for name, n in classes.most_common(top):
        print(f"  {n / records:7.0f} B  {name[:150]}")
    print(f"\ntop {top} sites (innermost frame outside the JDK, class):")
    for (site, name), n in sites.most_common(top):
        print(f"  {n / records:7.0f} B  {site[:110]}  {name[:60]}")


def main():
    if sys.argv[1] == "--alloc":
        allocations(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        return
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    per_record = None
    if len(sys.argv) > 4:
        per_record = float(sys.argv[3]) * 1e9 / float(sys.argv[4])
    groups, steps, self_samples, total_samples = Counter(), Counter(), Counter(), Counter()
    all_samples = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            frames = stack.split(";")
            thread = re.sub(r"^(.*\S) tid=\d+$", r"\1", frames[0].strip("[]"))
            all_samples += n
            groups[group_of(thread)] += n
            steps[step_of(thread, stack)] += n
            names = [frame_name(fr) for fr in frames[1:]]
            if names:
                self_samples[names[-1]] += n
            for name in set(names):
                total_samples[name] += n
    if all_samples == 0:
        print("no samples")
        return
    pct = lambda n: 100.0 * n / all_samples  # noqa: E731
    print(f"{all_samples} samples")
    print("\nthread groups:")
    for group, n in groups.most_common():
        print(f"  {pct(n):5.1f}%  {group}")
    if per_record:
        print(f"\none record: {per_record:.0f} CPU-ns in all (the run's CPU seconds / records):")
        for step, n in steps.most_common():
            print(f"  {per_record * n / all_samples:6.0f} ns  {pct(n):5.1f}%  {step}")
    print(f"\ntop {top} frames by self samples:")
    for name, n in self_samples.most_common(top):
        print(f"  {pct(n):5.1f}%  {name[:150]}")
    print(f"\ntop {top} frames by total samples:")
    for name, n in total_samples.most_common(top):
        print(f"  {pct(n):5.1f}%  {name[:150]}")


if __name__ == "__main__":
    main()
