"""Summarizes async-profiler's collapsed stacks (with `threads`): the share of samples per thread
group, then the frames with the most samples on top of the stack (self) and anywhere in it
(total), each as a percentage of all samples.

    python3 profile_summary.py <file.collapsed> [top]
"""

import re
import sys
from collections import Counter

# Thread names to groups: the first pattern that matches names the group.
GROUPS = [
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


def frame_name(frame):
    # async-profiler marks frame kinds with suffixes: _[j] Java, _[i] inlined, _[k] kernel.
    return re.sub(r"_\[[a-z0-9]\]$", "", frame)


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    groups, self_samples, total_samples = Counter(), Counter(), Counter()
    all_samples = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            frames = stack.split(";")
            thread = frames[0].strip("[]")
            all_samples += n
            groups[group_of(thread)] += n
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
    print(f"\ntop {top} frames by self samples:")
    for name, n in self_samples.most_common(top):
        print(f"  {pct(n):5.1f}%  {name[:150]}")
    print(f"\ntop {top} frames by total samples:")
    for name, n in total_samples.most_common(top):
        print(f"  {pct(n):5.1f}%  {name[:150]}")


if __name__ == "__main__":
    main()
