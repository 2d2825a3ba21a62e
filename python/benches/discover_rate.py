"""``port.discover()`` from Python against ``mad ibnetdiscover --json`` on
the same topology of the built-in fabric, in the same run, alternating.

    python python/benches/discover_rate.py --topology /tmp/ft13k \
        [--mad target/release/mad] [--rounds 3] [--json]

Per round it reports: the discovery itself as each side's
``summary.elapsed_us`` says (the same parallel discovery code, measured
inside it); the wall times of ``mad --sim=TOPOLOGY ibnetdiscover`` (text)
and ``... ibnetdiscover --json``, and of ``mad --sim=TOPOLOGY smpquery
nodeinfo -D 0`` (opening the fabric and one query: what a command pays
before it discovers, which the Python side paid once in ``open``); the
native call (discovery and the JSON text of the model) and the whole
``port.discover()`` (plus ``json.loads`` and the ``Fabric`` objects)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import madstack


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", required=True, help="topology file of the built-in fabric")
    ap.add_argument("--mad", default="target/release/mad")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with madstack.open(sim=a.topology) as port:
        for _ in range(a.rounds):
            def wall(*args: str) -> float:
                t = time.perf_counter()
                subprocess.run([a.mad, f"--sim={a.topology}", *args], capture_output=True, check=True)
                return time.perf_counter() - t

            mad_open = wall("smpquery", "nodeinfo", "-D", "0")
            mad_text = wall("ibnetdiscover")
            t = time.perf_counter()
            r = subprocess.run(
                [a.mad, f"--sim={a.topology}", "ibnetdiscover", "--json"],
                capture_output=True, text=True, check=True,
            )
            mad_wall = time.perf_counter() - t
            mad_disc = json.loads(r.stdout)["summary"]["elapsed_us"] / 1e6

            t = time.perf_counter()
            text = port._native.discover()
            native = time.perf_counter() - t
            py_disc = json.loads(text)["summary"]["elapsed_us"] / 1e6
            t = time.perf_counter()
            fab = port.discover()
            whole = time.perf_counter() - t
            rows.append({
                "mad_discovery_s": mad_disc,
                "mad_open_smpquery_wall_s": mad_open,
                "mad_ibnetdiscover_wall_s": mad_text,
                "mad_ibnetdiscover_json_wall_s": mad_wall,
                "python_discovery_s": py_disc,
                "python_native_discover_s": native,
                "python_discover_whole_s": whole,
                "python_discovery_second_call_s": fab.summary["elapsed_us"] / 1e6,
                "nodes": len(fab.nodes),
            })
    if a.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
    print(f"median discovery: python {med('python_discovery_s'):.3f} s / mad {med('mad_discovery_s'):.3f} s"
          f" = {med('python_discovery_s') / med('mad_discovery_s'):.2f}x")
    for k in ("mad_ibnetdiscover_wall_s", "mad_ibnetdiscover_json_wall_s"):
        net = med(k) - med("mad_open_smpquery_wall_s")
        print(f"median port.discover() whole {med('python_discover_whole_s'):.3f} s / {k} minus opening"
              f" {net:.3f} s = {med('python_discover_whole_s') / net:.2f}x")
    print(f"median port.discover() whole {med('python_discover_whole_s'):.3f} s / mad ibnetdiscover --json wall"
          f" {med('mad_ibnetdiscover_json_wall_s'):.3f} s = "
          f"{med('python_discover_whole_s') / med('mad_ibnetdiscover_json_wall_s'):.2f}x")


if __name__ == "__main__":
    main()
