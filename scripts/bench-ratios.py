#!/usr/bin/env python3
"""Prints ours-vs-rocksdb ratios from the last `cargo bench --bench engine_ops` run.

Criterion stores each benchmark's estimates under $CARGO_TARGET_DIR/criterion/<group>/<name>/new.
Ratio = rocksdb time / ours time, so > 1.0 means ours is faster.
"""
import json
import os
import sys
from pathlib import Path

target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/forst-rs/target"))
root = target / "criterion"
if not root.is_dir():
    sys.exit(f"no criterion results under {root}: run `cargo bench --bench engine_ops` first")


def mean_ns(group: str, name: str) -> float:
    path = root / group / name / "new" / "estimates.json"
    return json.loads(path.read_text())["mean"]["point_estimate"]


print(f"{'benchmark':<26} {'ours':>12} {'rocksdb':>12} {'ours speed vs rocksdb':>22}")
for group in ["get", "put", "multi_get_100", "multi_get_1000", "prefix_iter_100", "prefix_iter_100_memtable"]:
    try:
        ours, rocks = mean_ns(group, "ours"), mean_ns(group, "rocksdb")
    except FileNotFoundError:
        print(f"{group:<26} (missing)")
        continue
    print(f"{group:<26} {ours / 1000:>10.2f}us {rocks / 1000:>10.2f}us {rocks / ours:>21.2f}x")
