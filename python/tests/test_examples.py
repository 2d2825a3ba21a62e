"""The examples in python/examples/ do their task on the built-in fabric."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args: str) -> str:
    p = subprocess.run([sys.executable, *args], cwd=EXAMPLES, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_port_errors_lists_no_port_on_a_clean_fabric():
    out = run("port_errors.py", "--sim")
    assert out.strip().splitlines()[-1] == "0 ports with errors of 40"


def test_link_traffic_reports_every_link():
    out = run("link_traffic.py", "--sim")
    assert out.strip().splitlines()[-1] == "12 links"
    assert "host-8 HCA-1[1]" in out


def test_trace_route_finds_the_node_and_walks_to_it():
    out = run("trace_route.py", "--sim", "host-8 HCA-1")
    assert "is LID 12" in out
    assert "hop 4: 'host-8 HCA-1'" in out and "(destination)" in out
    p = subprocess.run([sys.executable, "trace_route.py", "--sim", "nobody"], cwd=EXAMPLES,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "no node named 'nobody'" in p.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_prometheus_exporter_serves_every_ports_counters():
    if os.environ.get("CI") != "true":
        pytest.importorskip("prometheus_client")
    assert len((EXAMPLES / "prometheus_exporter.py").read_text().splitlines()) <= 21
    port = _free_port()
    p = subprocess.Popen([sys.executable, "prometheus_exporter.py", "--sim", "--listen", str(port)],
                         cwd=EXAMPLES, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        body = ""
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
                break
            except OSError:
                assert p.poll() is None, p.stderr.read()
                time.sleep(0.1)
        lines = [l for l in body.splitlines() if l.startswith("ib_port_xmit_data_total{")]
        assert len(lines) == 40, body[:2000]
        assert 'node="host-8 HCA-1"' in body
    finally:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
