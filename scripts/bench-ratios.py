#!/usr/bin/env python3
"""Prints ours-vs-rocksdb ratios from the last `cargo bench --bench engine_ops` run.

Criterion stores each benchmark's estimates under $CARGO_TARGET_DIR/criterion/<group>/<name>/new.
Ratio = rocksdb time / ours time, so > 1.0 means ours is faster. When BENCH_MEASUREMENTS names a
file (scripts/bench-engine.sh sets it), each group is also recorded there for the result file:
the mean time per iteration with its 95% confidence interval as the spread.
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
import bench_results  # noqa: E402

target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/forst-rs/target"))
root = target / "criterion"
if not root.is_dir():
    sys.exit(f"no criterion results under {root}: run `cargo bench --bench engine_ops` first")


def mean_us(group: str, name: str) -> tuple[float, float, float]:
    """The mean time per iteration and its confidence interval, in us."""
    path = root / group / name / "new" / "estimates.json"
    mean = json.loads(path.read_text())["mean"]
    interval = mean["confidence_interval"]
    return tuple(x / 1000 for x in (mean["point_estimate"], interval["lower_bound"],
                                     interval["upper_bound"]))


measurements = os.environ.get("BENCH_MEASUREMENTS")
print(f"{'benchmark':<26} {'ours':>12} {'rocksdb':>12} {'ours speed vs rocksdb':>22}")
for group in ["get", "put", "multi_get_100", "multi_get_1000", "prefix_iter_100", "prefix_iter_100_memtable"]:
    try:
        ours, rocks = mean_us(group, "ours"), mean_us(group, "rocksdb")
    except FileNotFoundError:
        print(f"{group:<26} (missing)")
        continue
    print(f"{group:<26} {ours[0]:>10.2f}us {rocks[0]:>10.2f}us {rocks[0] / ours[0]:>21.2f}x")
    if measurements:
        bench_results.append(measurements, {
            "name": group, "subject": "ours", "unit": "us", "better": "lower",
            "value": ours[0], "spread": {"min": ours[1], "max": ours[2]},
            "baseline": {"name": "rust-rocksdb", "value": rocks[0],
                         "spread": {"min": rocks[1], "max": rocks[2]}},
        })
