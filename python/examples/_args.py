"""The examples' command line: ``--sim`` (the default; ``--topology
FILE`` for a topology of your own), ``--ibsim``, or ``-C CA -P PORT``."""

from __future__ import annotations

import argparse
from typing import List, Optional

import madstack


def open_port(argv: Optional[List[str]] = None, extra=None) -> "tuple[madstack.Port, argparse.Namespace]":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", action="store_true", help="the built-in fabric (the default)")
    ap.add_argument("--topology", help="a topology file for the built-in fabric")
    ap.add_argument("--ibsim", action="store_true", help="a running ibsim")
    ap.add_argument("-C", dest="ca", help="CA name of a real port")
    ap.add_argument("-P", dest="port", type=int, help="port number of a real port")
    if extra:
        extra(ap)
    a = ap.parse_args(argv)
    if a.ibsim:
        return madstack.open(ibsim=True), a
    if a.ca or a.port:
        return madstack.open(ca=a.ca, port=a.port), a
    return madstack.open(sim=a.topology or True), a
