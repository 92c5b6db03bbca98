#!/usr/bin/env python3
"""The one writer of benchmark result files: bench-results/<benchmark>/<UTC time>-<commit>.json.

A benchmark run collects its parameters and measurements as JSON lines in a scratch file (the
shell scripts through `param` and `measure` below, the Rust benches through
benches/support/results.rs when BENCH_MEASUREMENTS names that file); `write` then adds the date,
the commit and the machine and writes one result file per run. docs/benchmarks.md describes the
format; scripts/render-charts.py reads it.

    bench_results.py param FILE KEY=VALUE...
    bench_results.py measure FILE --name N --unit U --better higher|lower
        [--subject S] [--value V | --rounds V...] [--baseline NAME (--baseline-value V |
        --baseline-rounds V...)] [--ratio-rounds V...] [--label KEY=VALUE...]
    bench_results.py write BENCHMARK FILE [--notes TEXT] [--command SCRIPT]

A measurement's `value` is the median of its `rounds` when those are given; `ratio` says how ours
compares with the baseline, > 1 meaning ours is better whatever the unit (value / baseline for
rates, baseline / value for times and sizes). When ours and the baseline have as many rounds, round
i of each ran in the same interleaved round, so `ratio_rounds` pairs them. A measurement of a ratio
alone (measured in turns, or transcribed without the rates) has a `ratio` and no `value`.
"""
import argparse
import copy
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench-results"


def number(text):
    """A number from the command line: an int when it is one (keeps files free of '.0')."""
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def scalar(text):
    """A parameter's value: a number when it reads as one, else the text."""
    try:
        return number(text)
    except ValueError:
        return text


def pairs(items):
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"bench_results: expected KEY=VALUE, got {item!r}")
        out[key] = scalar(value)
    return out


def append(path, record):
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")


def ratio(better, value, baseline):
    if not value or not baseline:
        return None
    return value / baseline if better == "higher" else baseline / value


def complete(m):
    """Fills what follows from a measurement's rounds and baseline: value, spread, ratio."""
    if m.get("better") not in ("higher", "lower"):
        raise ValueError(f"measurement {m.get('name')!r}: better must be 'higher' or 'lower'")
    rounds = m.get("rounds")
    if rounds:
        m.setdefault("value", statistics.median_low(rounds))
        m.setdefault("spread", {"min": min(rounds), "max": max(rounds)})
    if m.get("value") is None and m.get("ratio") is None:
        raise ValueError(f"measurement {m.get('name')!r}: no value, rounds or ratio")
    base = m.get("baseline")
    if base:
        base_rounds = base.get("rounds")
        if base_rounds:
            base.setdefault("value", statistics.median_low(base_rounds))
        if rounds and base_rounds and len(rounds) == len(base_rounds) and "ratio_rounds" not in m:
            m["ratio_rounds"] = [ratio(m["better"], v, b) for v, b in zip(rounds, base_rounds)]
        if "ratio" not in m:
            m["ratio"] = ratio(m["better"], m.get("value"), base.get("value"))
    return m


def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine():
    """What the numbers were measured on."""
    facts = {"cores": os.cpu_count(), "os": f"{platform.system()} {platform.release()}"}
    try:
        release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().split("\n")
                       if "=" in line)
        facts["os"] = f"{release.get('PRETTY_NAME', '').strip(chr(34))}, {facts['os']}"
    except OSError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                facts["memory_mib"] = int(line.split()[1]) // 1024
                break
    except OSError:
        pass
    facts["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return facts


def result_path(benchmark, date, commit):
    """bench-results/<benchmark>/<UTC time, sortable>-<short commit>.json"""
    stamp = date.replace(":", "").replace("-", "")  # 2026-12-03T19:42:10Z -> 20261203T194210Z
    return RESULTS / benchmark / f"{stamp}-{(commit or 'unknown')[:7]}.json"


def dump(result):
    """The file's bytes: sorted keys, two-space indent, one trailing newline (stable diffs)."""
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def write(benchmark, lines_path, notes=None, command=None):
    parameters, measurements = {}, []
    for line in Path(lines_path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "parameters" in record:
            parameters.update(record["parameters"])
        else:
            measurements.append(complete(record))
    if not measurements:
        sys.exit(f"bench_results: no measurements in {lines_path}; nothing written")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    commit = git("rev-parse", "HEAD")
    result = {
        "benchmark": benchmark,
        "date": date,
        "commit": commit,
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(),
        "parameters": parameters,
        "measurements": measurements,
    }
    if command:
        result["command"] = command
    if notes:
        result["notes"] = notes
    path = result_path(benchmark, date, commit)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(result), encoding="utf-8")
    print(f"results: {os.path.relpath(path, ROOT)}", file=sys.stderr)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("param")
    p.add_argument("file")
    p.add_argument("pairs", nargs="+")
    m = sub.add_parser("measure")
    m.add_argument("file")
    m.add_argument("--name", required=True)
    m.add_argument("--subject")
    m.add_argument("--unit", required=True)
    m.add_argument("--better", choices=["higher", "lower"], required=True)
    m.add_argument("--value", type=number)
    m.add_argument("--rounds", type=number, nargs="+")
    m.add_argument("--baseline")
    m.add_argument("--baseline-value", type=number)
    m.add_argument("--baseline-rounds", type=number, nargs="+")
    m.add_argument("--ratio-rounds", type=number, nargs="+")
    m.add_argument("--label", action="append")
    w = sub.add_parser("write")
    w.add_argument("benchmark")
    w.add_argument("file")
    w.add_argument("--notes", default=os.environ.get("BENCH_NOTES"))
    w.add_argument("--command")
    args = parser.parse_args(argv)
    if args.action == "param":
        append(args.file, {"parameters": pairs(args.pairs)})
    elif args.action == "measure":
        record = {"name": args.name, "unit": args.unit, "better": args.better}
        for key in ("subject", "value", "rounds", "ratio_rounds"):
            if getattr(args, key) is not None:
                record[key] = getattr(args, key)
        if args.ratio_rounds:
            record["ratio"] = statistics.median_low(args.ratio_rounds)
        if args.baseline:
            record["baseline"] = {"name": args.baseline}
            if args.baseline_value is not None:
                record["baseline"]["value"] = args.baseline_value
            if args.baseline_rounds:
                record["baseline"]["rounds"] = args.baseline_rounds
        if args.label:
            record["labels"] = pairs(args.label)
        complete(copy.deepcopy(record))  # fails now, not at write time, on a malformed measurement
        append(args.file, record)
    else:
        write(args.benchmark, args.file, args.notes, args.command)


if __name__ == "__main__":
    main()
