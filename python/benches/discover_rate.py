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
whole ``port.discover()`` call (the discovery and the lazy ``Fabric``
over the Rust model); then what reading the model costs afterwards:
every ``Node`` made (``[n.description for n in fabric.nodes]``), every
``Link`` (``fabric.links``), and the whole JSON form
(``fabric.to_dict()``). The machines this runs on are loaded by other
work, so it also reports CPU time: the process's own for
``port.discover()`` (the built-in fabric runs in the same process, as it
does in ``mad``) and, for ``mad``, that of ``ibnetdiscover`` minus that
of ``smpquery`` (the opening both pay)."""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import time

import madstack


def children_cpu() -> float:
    """User and system CPU seconds of the waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", required=True, help="topology file of the built-in fabric")
    ap.add_argument("--mad", default="target/release/mad")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with madstack.open(sim=a.topology) as port:
        for n in range(a.rounds):
            cpu: dict = {}

            def wall(*args: str) -> float:
                c = children_cpu()
                t = time.perf_counter()
                subprocess.run([a.mad, f"--sim={a.topology}", *args], capture_output=True, check=True)
                t = time.perf_counter() - t
                cpu[args[0]] = children_cpu() - c
                return t

            def mad_side() -> tuple:
                mad_open = wall("smpquery", "nodeinfo", "-D", "0")
                mad_text = wall("ibnetdiscover")
                t = time.perf_counter()
                r = subprocess.run(
                    [a.mad, f"--sim={a.topology}", "ibnetdiscover", "--json"],
                    capture_output=True, text=True, check=True,
                )
                mad_wall = time.perf_counter() - t
                return mad_open, mad_text, mad_wall, json.loads(r.stdout)["summary"]["elapsed_us"] / 1e6

            def python_side() -> tuple:
                c = time.process_time()
                t = time.perf_counter()
                fab = port.discover()
                return fab, time.perf_counter() - t, time.process_time() - c

            # Alternate which side goes first: the one after the other
            # runs on a machine the other just left (memory freed, caches).
            if n % 2 == 0:
                mad_open, mad_text, mad_wall, mad_disc = mad_side()
                fab, whole, whole_cpu = python_side()
            else:
                fab, whole, whole_cpu = python_side()
                mad_open, mad_text, mad_wall, mad_disc = mad_side()
            py_disc = fab.summary["elapsed_us"] / 1e6
            t = time.perf_counter()
            names = [n.description for n in fab.nodes]
            walk = time.perf_counter() - t
            t = time.perf_counter()
            links = fab.links
            link_s = time.perf_counter() - t
            t = time.perf_counter()
            d = fab.to_dict()
            to_dict = time.perf_counter() - t
            assert len(names) == len(d["nodes"]) and len(links) == d["summary"]["links"]
            rows.append({
                "mad_discovery_s": mad_disc,
                "mad_open_smpquery_wall_s": mad_open,
                "mad_ibnetdiscover_wall_s": mad_text,
                "mad_ibnetdiscover_json_wall_s": mad_wall,
                "python_discovery_s": py_disc,
                "python_discover_whole_s": whole,
                "mad_ibnetdiscover_cpu_minus_opening_s": cpu["ibnetdiscover"] - cpu["smpquery"],
                "python_discover_whole_cpu_s": whole_cpu,
                "python_every_node_s": walk,
                "python_links_s": link_s,
                "python_to_dict_s": to_dict,
                "nodes": len(fab.nodes),
            })
            del fab, d, names, links
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
    print(f"median CPU time: port.discover() whole {med('python_discover_whole_cpu_s'):.3f} s / mad ibnetdiscover"
          f" minus opening {med('mad_ibnetdiscover_cpu_minus_opening_s'):.3f} s = "
          f"{med('python_discover_whole_cpu_s') / med('mad_ibnetdiscover_cpu_minus_opening_s'):.2f}x")
    print(f"median port.discover() whole {med('python_discover_whole_s'):.3f} s / mad discovery"
          f" {med('mad_discovery_s'):.3f} s = {med('python_discover_whole_s') / med('mad_discovery_s'):.2f}x")
    print(f"median port.discover() whole {med('python_discover_whole_s'):.3f} s / mad ibnetdiscover --json wall"
          f" {med('mad_ibnetdiscover_json_wall_s'):.3f} s = "
          f"{med('python_discover_whole_s') / med('mad_ibnetdiscover_json_wall_s'):.2f}x")


if __name__ == "__main__":
    main()
