"""A Prometheus exporter in 20 lines: every port's counters, swept on each scrape.
    python prometheus_exporter.py --sim --listen 9478   (then curl localhost:9478/metrics)"""
import time
from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import CounterMetricFamily
from _args import open_port

class Sweep:
    def __init__(self, port): self.port = port
    def collect(self):
        fams = {}
        for n in self.port.sweep()["nodes"]:
            for p in n["ports"]:
                for k, v in {**(p["counters"] or {}), **(p["extended"] or {})}.items():
                    f = fams.setdefault(k, CounterMetricFamily(f"ib_{k}", k, labels=["node", "guid", "port"]))
                    f.add_metric([n["description"], n["guid"], str(p["port"])], int(v, 16) if isinstance(v, str) else v)
        yield from fams.values()

port, a = open_port(None, lambda ap: ap.add_argument("--listen", type=int, default=9478))
REGISTRY.register(Sweep(port)); start_http_server(a.listen)
while True: time.sleep(3600)
