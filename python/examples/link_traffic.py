"""A per-link traffic report: for every cable, the bytes each end sent and
received (64-bit PortCountersExtended where the PMA has them).

    python link_traffic.py --sim
"""

from _args import open_port


def data_bytes(p):
    """(sent, received) in bytes: the counters count 4-byte words."""
    c = p["extended"] or p["counters"] or {}
    val = lambda v: int(v, 16) if isinstance(v, str) else (v or 0)  # noqa: E731
    return 4 * val(c.get("port_xmit_data")), 4 * val(c.get("port_rcv_data"))


def main(argv=None) -> int:
    port, _ = open_port(argv)
    with port:
        sweep = port.sweep()
    ports = {(n["guid"], p["port"]): (n, p) for n in sweep["nodes"] for p in n["ports"]}
    seen, links = set(), 0
    for (guid, num), (node, p) in ports.items():
        r = p["remote"]
        if not r or (r["guid"], r["port"]) not in ports:
            continue
        key = tuple(sorted([(guid, num), (r["guid"], r["port"])]))
        if key in seen:
            continue
        seen.add(key)
        other, q = ports[(r["guid"], r["port"])]
        (ax, ar), (bx, br) = data_bytes(p), data_bytes(q)
        print(f"{node['description']}[{num}] <-> {other['description']}[{q['port']}]: "
              f"{ax} B / {ar} B  |  {bx} B / {br} B (sent / received at each end)")
        links += 1
    print(f"{links} links")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
