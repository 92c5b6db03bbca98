#!/usr/bin/env python3
"""Prints a process's resident memory in MiB: total, Java heap, everything else.

Usage: smaps_split.py <pid> <heap MiB>. The Java heap is the address range of -Xmx the JVM
reserves at once: it starts at the largest anonymous mapping of about the heap's size (the JVM
may split off its last regions into mappings of their own), and every mapping inside it counts.
"""
import re
import sys

pid, heap_mib = sys.argv[1], int(sys.argv[2])
mappings = []  # (start, end, anonymous, resident KiB)
with open(f"/proc/{pid}/smaps") as smaps:
    for line in smaps:
        mapping = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(\S*)", line)
        if mapping:
            start, end = int(mapping.group(1), 16), int(mapping.group(2), 16)
            mappings.append([start, end, not mapping.group(3), 0])
        elif line.startswith("Rss:"):
            mappings[-1][3] = int(line.split()[1])
heap_bytes = heap_mib << 20
candidates = [m for m in mappings if m[2] and heap_bytes * 0.9 <= m[1] - m[0] <= heap_bytes]
heap_start = max(candidates, key=lambda m: m[1] - m[0])[0] if candidates else None
total = sum(m[3] for m in mappings)
heap = sum(m[3] for m in mappings
           if heap_start is not None and heap_start <= m[0] and m[1] <= heap_start + heap_bytes)
print(total >> 10, heap >> 10, (total - heap) >> 10)
