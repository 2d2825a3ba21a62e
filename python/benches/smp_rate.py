"""SMP queries per second from Python on the built-in fabric: one at a
time (``port.smp.get``) and in batches (``port.smp.get_many``), beside
``mad --sim bench`` (the Rust runtime) run in the same go. Prints one
line per measurement and, with ``--json``, the numbers as JSON.

    python python/benches/smp_rate.py [--mad target/release/mad] [--seconds 2] [--rounds 5]

Both query NodeInfo of the local port and of the first switch by
directed route, round-robin (``mad bench``'s default targets). Each
round measures Python and then ``mad bench`` right after it, so that a
round's ratio compares the two under the same load; the medians of the
rounds' ratios are printed last, and the median CPU time per SMP of
the Python batch (steadier than rates on a loaded machine)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import madstack


def rate(fn, seconds: float, cpu: dict = None, key: str = "") -> float:
    """Calls per second of ``fn`` (it returns how many SMPs it did) over
    ``seconds``; with ``cpu``, also records the process's CPU time per
    SMP in microseconds under ``key`` (steadier than rates on a loaded
    machine; the built-in fabric runs in this process)."""
    n, start, c = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        n += fn()
    if cpu is not None:
        cpu[key] = (time.process_time() - c) / n * 1e6
    return n / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mad", default="target/release/mad")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    routes = [[], [1]]
    rounds = []
    with madstack.open(sim=True) as p:
        i = [0]

        def one() -> int:
            p.smp.get("NodeInfo", dr=routes[i[0] % 2])
            i[0] += 1
            return 1

        def batch() -> int:
            got = p.smp.get_many("NodeInfo", drs=(routes * (a.batch // 2))[: a.batch])
            assert all(isinstance(g, madstack.Attribute) for g in got)
            return len(got)

        rate(one, 0.2)
        for _ in range(a.rounds):
            out = {}
            out["python_one_at_a_time"] = rate(one, a.seconds)
            cpu: dict = {}
            out[f"python_batch_{a.batch}"] = rate(batch, a.seconds, cpu, "cpu_us")
            r = subprocess.run(
                [a.mad, "--sim", "bench", "--w", f"1,{a.batch}", "--seconds", str(a.seconds), "--json"],
                capture_output=True, text=True, check=True)
            for m in json.loads(r.stdout)["smp"]:
                out[f"mad_bench_{m['impl']}_w{m['outstanding']}"] = m["qps"]
            out["ratio_one"] = out["mad_bench_runtime_w1"] / out["python_one_at_a_time"]
            out["ratio_batch"] = out[f"mad_bench_runtime_w{a.batch}"] / out[f"python_batch_{a.batch}"]
            out["python_batch_cpu_us_per_smp"] = cpu["cpu_us"]
            rounds.append(out)
    if a.json:
        print(json.dumps(rounds))
        return
    for n, out in enumerate(rounds):
        print(f"round {n + 1}: " + "  ".join(
            f"{k}={v:.2f}x" if k.startswith("ratio") else f"{k}={v:.3f}" if k.endswith("per_smp")
            else f"{k}={v:,.0f}/s" for k, v in out.items()))
    for k in ("ratio_one", "ratio_batch"):
        print(f"median {k} (mad bench runtime / Python, same window): "
              f"{statistics.median(r[k] for r in rounds):.2f}x")
    print(f"median CPU time of the Python batch: "
          f"{statistics.median(r['python_batch_cpu_us_per_smp'] for r in rounds):.3f} us per SMP")


if __name__ == "__main__":
    main()
