#!/usr/bin/env python3
"""Summarizes the criterion results of madstack's benches as markdown.

Reads every `new/estimates.json` + `new/benchmark.json` under
`$CARGO_TARGET_DIR/criterion` (default `target/criterion`) and prints, per
benchmark, the median time per iteration, the rate (MADs/s or bytes/s from
the benchmark's Throughput) and the rate as a ratio of the physical
reference, copying 256-byte buffers (`memcpy_256/one` for per-MAD rates,
`memcpy_256/stream_1MiB` for byte rates). For the agent send-table benches
it also prints the cost at each number of outstanding sends relative to the
cost at 1.

With --baselines a,b,c it reads the named criterion baselines (saved with
`cargo bench -- --save-baseline a`, ...) instead of `new` and takes, per
benchmark, the smallest median over them: on a shared machine the least
disturbed pass is the best estimate of the cost.

Usage: python3 benches/summarize.py [--baselines a,b,c] [CRITERION_DIR]
"""
import json
import os
import sys
from collections import defaultdict


def load(root, baselines=("new",)):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) not in baselines or "estimates.json" not in files:
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        with open(os.path.join(dirpath, "estimates.json")) as f:
            est = json.load(f)
        ns = est["median"]["point_estimate"]
        key = bench["full_id"]
        if key not in out or ns < out[key][0]:
            out[key] = (ns, bench.get("throughput"))
    return out


def fmt_time(ns):
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} us"
    return f"{ns / 1e6:.2f} ms"


def fmt_rate(v, unit):
    for div, p in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.2f} {p}{unit}"
    return f"{v:.1f} {unit}"


def main():
    args = sys.argv[1:]
    baselines = ("new",)
    if len(args) >= 2 and args[0] == "--baselines":
        baselines = tuple(args[1].split(","))
        args = args[2:]
    root = args[0] if args else os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
    res = load(root, baselines)
    if not res:
        sys.exit(f"no criterion results under {root}; run cargo bench first")
    ref_one = res.get("memcpy_256/one", (None, None))[0]
    ref_stream = res.get("memcpy_256/stream_1MiB", (None, None))[0]
    mad_ref = 1e9 / ref_one if ref_one else None          # 256-byte copies/s
    byte_ref = (1 << 20) * 1e9 / ref_stream if ref_stream else None  # bytes/s
    print(f"Reference: memcpy of one 256-byte buffer {fmt_time(ref_one or 0)} "
          f"({fmt_rate(mad_ref or 0, 'copies/s')}); 1 MiB of 256-byte buffers "
          f"{fmt_time(ref_stream or 0)} ({fmt_rate(byte_ref or 0, 'B/s')}).\n")
    print("| benchmark | median / iter | rate | rate / memcpy rate |")
    print("|---|---:|---:|---:|")
    for bid in sorted(res):
        ns, thr = res[bid]
        rate, ratio = "", ""
        if thr and "Elements" in thr:
            r = thr["Elements"] * 1e9 / ns
            rate = fmt_rate(r, "elem/s")
            if mad_ref and not bid.startswith("memcpy"):
                ratio = f"{r / mad_ref:.3f}"
        elif thr and "Bytes" in thr:
            r = thr["Bytes"] * 1e9 / ns
            rate = fmt_rate(r, "B/s")
            if byte_ref and not bid.startswith("memcpy"):
                ratio = f"{r / byte_ref:.3f}"
        print(f"| {bid} | {fmt_time(ns)} | {rate} | {ratio} |")
    growth = defaultdict(dict)
    for bid, (ns, _thr) in res.items():
        parts = bid.split("/")
        if parts[0] == "agent_send_table" and len(parts) == 3:
            growth[parts[1]][int(parts[2])] = ns
    if growth:
        print("\n| agent_send_table op | " + " | ".join(
            f"{n} outstanding" for n in sorted(next(iter(growth.values())))) +
            " | cost at max / cost at 1 |")
        print("|---|" + "---:|" * (len(next(iter(growth.values()))) + 1))
        for op in sorted(growth):
            row = growth[op]
            ns_sorted = sorted(row)
            cells = " | ".join(fmt_time(row[n]) for n in ns_sorted)
            print(f"| {op} | {cells} | {row[ns_sorted[-1]] / row[ns_sorted[0]]:.2f}x |")


if __name__ == "__main__":
    main()
