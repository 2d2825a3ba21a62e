"""Lists the ports whose error counters are not zero, as sites do today by
parsing ibqueryerrors: one discovery and one parallel sweep.

    python port_errors.py --sim
"""

from _args import open_port

ERRORS = [
    "symbol_error_counter", "link_error_recovery_counter", "link_downed_counter",
    "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "vl15_dropped",
]


def main(argv=None) -> int:
    port, _ = open_port(argv)
    with port:
        sweep = port.sweep()
    bad = 0
    for node in sweep["nodes"]:
        for p in node["ports"]:
            if p["error"]:
                print(f"{node['description']!r} lid {p['lid']} port {p['port']}: not read ({p['error']})")
                bad += 1
                continue
            errs = {k: v for k, v in (p["counters"] or {}).items() if k in ERRORS and v}
            if errs:
                bad += 1
                print(f"{node['description']!r} lid {p['lid']} port {p['port']}: "
                      + " ".join(f"{k}={v}" for k, v in errs.items()))
    print(f"{bad} ports with errors of {sweep['summary']['ports']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
