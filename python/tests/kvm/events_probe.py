"""Runs inside the kernel VM (python/tests/test_kernel_vm.py): opens the
soft-RoCE port given on the command line through the madstack package
(libibumad, the kernel's ib_umad) and prints each event its ``events()``
iterator yields, one line ``PY event NAME`` each, until ``QUIET`` seconds
pass without one. ``PY ready`` says the iterator is listening."""

import sys
import time

import madstack

ca, quiet = sys.argv[1], float(sys.argv[2])
with madstack.open(ca=ca, port=1) as port:
    a = port.attrs
    print(f"PY opened {a['ca']} port {a['port']} state {a['state']}", flush=True)
    events = port.events(timeout=quiet)
    # events() registered its agent: from here on no event is lost.
    print("PY ready", flush=True)
    t0 = time.monotonic()
    for name in events:
        print(f"PY event {name} {time.monotonic() - t0:.2f}", flush=True)
    print(f"PY state after {port.attrs['state']}", flush=True)
print("PY closed", flush=True)
