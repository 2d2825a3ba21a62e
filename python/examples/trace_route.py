"""Finds a node by name and traces the route to it through the switches'
forwarding tables, hop by hop (what ibtracert prints).

    python trace_route.py --sim "host-8 HCA-1"
"""

from _args import open_port


def main(argv=None) -> int:
    port, a = open_port(argv, lambda ap: ap.add_argument("name", help="the node's description"))
    with port:
        fabric = port.discover()
        try:
            node = fabric.node(a.name)
        except KeyError:
            print(f"no node named {a.name!r}")
            return 1
        lid = node.lid or next(p["lid"] for p in node.ports if p["lid"])
        print(f"{node.description!r} ({node.type}, GUID {node.guid:#018x}) is LID {lid}")
        route = port.route_to(lid)
        if route is None:
            print("no route")
            return 1
        for i in range(len(route) + 1):
            nd = port.smp.get("NodeDescription", dr=route[:i])
            ni = port.smp.get("NodeInfo", dr=route[:i])
            out = f"out port {route[i]}" if i < len(route) else "(destination)"
            print(f"hop {i}: {nd.desc!r} GUID {ni.node_guid:#018x} {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
