#!/usr/bin/env python3
"""Runs two criterion bench executables alternately and compares them.

    scripts/criterion-ab.py BASE_BIN HEAD_BIN ROUNDS FILTER [SECONDS] [CPU]

BASE_BIN and HEAD_BIN are bench executables of two trees (the paths
`cargo bench --no-run --bench NAME` prints), ROUNDS how many times each
runs, FILTER criterion's regex of bench ids, SECONDS the measurement time
of each run (default 1; warm-up 1 s), CPU the core every run is pinned to
with taskset (default 1; "-" for none). The order alternates each round
(base first, then head first) so that a slow spell of the machine falls
on both. Prints, per bench id, the median and minimum of each side's
criterion medians and head / base.

Give it the same executable twice (a copy) for an A/A run: its ratio is
the noise floor of the machine at that time. Nothing is saved as a
criterion baseline (`--discard-baseline`).
"""

import re
import shutil
import statistics
import subprocess
import sys

UNITS = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
TIME = re.compile(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]")


def run(binary, filt, secs, cpu):
    cmd = [binary, "--bench", "--noplot", "--discard-baseline",
           "--warm-up-time", "1", "--measurement-time", secs, filt]
    if cpu != "-":
        cmd = ["taskset", "-c", cpu] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"criterion-ab: {binary} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    out = done.stdout
    found, name = {}, None
    for line in out.splitlines():
        m = TIME.search(line)
        head = line.split("time:")[0].strip()
        if head:
            name = head
        if m and name:
            found[name] = float(m.group(1)) * UNITS[m.group(2)]
    return found


def main():
    if len(sys.argv) not in (5, 6, 7):
        sys.exit(__doc__)
    base, head, rounds, filt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    secs = sys.argv[5] if len(sys.argv) > 5 else "1"
    cpu = sys.argv[6] if len(sys.argv) > 6 else "1"
    if cpu != "-" and shutil.which("taskset") is None:
        sys.exit("criterion-ab: taskset (util-linux) is not installed; pass CPU '-'")
    times = {}
    for r in range(rounds):
        order = [("base", base), ("head", head)]
        for who, binary in order if r % 2 == 0 else order[::-1]:
            for bench, t in run(binary, filt, secs, cpu).items():
                times.setdefault(bench, {}).setdefault(who, []).append(t)
    if not times:
        sys.exit(f"criterion-ab: no bench id matched {filt!r}")
    for bench, d in sorted(times.items()):
        b, h = d.get("base", []), d.get("head", [])
        if not b or not h:
            print(f"{bench}: ran on one side only")
            continue
        mb, mh = statistics.median(b), statistics.median(h)
        print(f"{bench}: base median {mb * 1e6:.3f} us min {min(b) * 1e6:.3f} us | "
              f"head median {mh * 1e6:.3f} us min {min(h) * 1e6:.3f} us | "
              f"head/base median {mh / mb:.3f} min {min(h) / min(b):.3f} ({len(b)} rounds)")


if __name__ == "__main__":
    main()
