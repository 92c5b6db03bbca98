#!/usr/bin/env python3
"""Checks the soak job's committed output against an independent computation.

The job (scripts/soak/job, SoakJob) reads records 0, 1, 2, ... of a deterministic generator from
one source split, so whatever it read before its final stop-with-savepoint (--drain) is a prefix
0..M-1. M is taken from the join's output (one row per record) and every output is compared, as a
multiset of lines, with what that prefix must give:

  agg/      the GROUP BY's changelog: +I/+U (user, count, sum, max) for every prefix of each
            user's records, -U for every one but the last
  join/     (id, user, fee, amount) per record (joined with its payment)
  window/   (user, window start, count, sum) per 10 s event-time window and user
  buckets/  (user, bucket start, count, sum) per 30 s bucket and user (timers, sync state)

Committed part files only (FileSink's in-progress and pending files start with a dot). Prints a
JSON report; exit status 1 when anything differs.

  check_results.py <out dir> <users> [--min-records N]
"""
import argparse
import collections
import json
import os
import sys

MASK = (1 << 64) - 1
T0 = 1_700_000_000_000
STEP_MS = 10
WINDOW_MS = 10_000
BUCKET_MS = 30_000


def mix(i):
    z = ((i + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def user_of(i, users):
    return mix(i) % users


def amount_of(i):
    return 1 + mix(i + (1 << 40)) % 1000


def fee_of(i):
    return (mix(i) >> 20) % 100


def committed_lines(out, name):
    lines = collections.Counter()
    files = 0
    for root, _, names in os.walk(os.path.join(out, name)):
        for n in names:
            if n.startswith("."):
                continue
            files += 1
            with open(os.path.join(root, n), encoding="utf-8") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line:
                        lines[line] += 1
    return lines, files


def expected(records, users):
    agg = collections.Counter()
    join = collections.Counter()
    window = collections.defaultdict(lambda: [0, 0])
    buckets = collections.defaultdict(lambda: [0, 0])
    per_user = {}
    for i in range(records):
        u = user_of(i, users)
        a = amount_of(i)
        ts = T0 + i * STEP_MS
        join[f"{i},{u},{fee_of(i)},{a}"] += 1
        previous = per_user.get(u)
        if previous is None:
            current = (1, a, a)
            agg[f"+I,{u},1,{a},{a}"] += 1
        else:
            agg[f"-U,{u},{previous[0]},{previous[1]},{previous[2]}"] += 1
            current = (previous[0] + 1, previous[1] + a, max(previous[2], a))
            agg[f"+U,{u},{current[0]},{current[1]},{current[2]}"] += 1
        per_user[u] = current
        w = window[(u, ts - ts % WINDOW_MS)]
        w[0] += 1
        w[1] += a
        b = buckets[(u, ts - ts % BUCKET_MS)]
        b[0] += 1
        b[1] += a
    return {
        "agg": agg,
        "join": join,
        "window": collections.Counter(f"{u},{s},{c},{t}" for (u, s), (c, t) in window.items()),
        "buckets": collections.Counter(
            f"{u},{s},{c},{t}" for (u, s), (c, t) in buckets.items()
        ),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("users", type=int)
    parser.add_argument("--min-records", type=int, default=1)
    args = parser.parse_args()

    seen = {}
    files = {}
    for name in ("agg", "join", "window", "buckets"):
        seen[name], files[name] = committed_lines(args.out, name)
    ids = [int(line.split(",", 1)[0]) for line in seen["join"]]
    records = max(ids) + 1 if ids else 0
    want = expected(records, args.users)

    report = {"records": records, "outputs": {}}
    exact = records >= args.min_records
    for name, lines in want.items():
        missing = lines - seen[name]
        unexpected = seen[name] - lines
        report["outputs"][name] = {
            "files": files[name],
            "lines_expected": sum(lines.values()),
            "lines_seen": sum(seen[name].values()),
            "missing": sum(missing.values()),
            "unexpected": sum(unexpected.values()),
            "missing_examples": sorted(missing)[:5],
            "unexpected_examples": sorted(unexpected)[:5],
        }
        exact = exact and not missing and not unexpected
    report["exact"] = exact
    if records < args.min_records:
        report["error"] = f"only {records} records read, expected at least {args.min_records}"
    json.dump(report, sys.stdout, indent=2)
    print()
    sys.exit(0 if exact else 1)


if __name__ == "__main__":
    main()
